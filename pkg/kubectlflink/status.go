package kubectlflink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
)

// snapshotsShown is how many of a resource's FlinkStateSnapshots status lists, newest first.
const snapshotsShown = 5

func (p *plugin) statusCommand() *cobra.Command {
	var kind string
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "One screen of a resource's state: job, conditions, snapshots, operations, scaling",
		Long: "status shows a FlinkDeployment (default), FlinkSessionJob (--kind sessionjob or sessionjob/NAME),\n" +
			"FlinkStateSnapshot or FlinkBlueGreenDeployment.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, t, err := p.connectTo(args[0], kind)
			if err != nil {
				return err
			}
			v, err := loadStatus(cmd.Context(), c, t)
			if err != nil {
				return err
			}
			return v.render(p.out(), p.now())
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "kind of NAME: deployment (default), sessionjob, snapshot or bluegreen")
	return cmd
}

// statusView is what status prints, gathered from the resource and its snapshots.
type statusView struct {
	target             Target
	generation         int64
	observedGeneration int64
	// facts are the kind's own lines (lifecycle, job, session, blue/green state...), in order.
	facts      [][2]string
	conditions []metav1.Condition
	errorText  string
	job        *flinkv1beta1.JobStatus
	snapshots  []flinkv1beta1.FlinkStateSnapshot
	operations []flinkv1beta1.Operation
	rescale    *flinkv1beta1.Rescale
	scaling    *Scaling
	scalable   bool
	// cluster is the Flink cluster running the job ("" when not known or not a job resource).
	cluster string
	// flinkStats are the job's checkpoint statistics as Flink reports them; flinkErr says why
	// they could not be read.
	flinkStats *flink.CheckpointStatistics
	flinkErr   error
}

// loadStatus reads the target and, for a job resource, the FlinkStateSnapshots that reference it.
func loadStatus(ctx context.Context, clients *Clients, t Target) (*statusView, error) {
	c := clients.Client
	u, obj, err := get(ctx, c, t)
	if err != nil {
		return nil, err
	}
	v := &statusView{target: t, generation: obj.GetGeneration()}
	switch o := obj.(type) {
	case *flinkv1beta1.FlinkDeployment:
		v.common(&o.Status.CommonStatus)
		mode := "application"
		if o.Spec.Job == nil {
			mode = "session cluster"
		}
		v.facts = append([][2]string{{"Kind", mode + ", Flink " + orDash(string(o.Spec.FlinkVersion))},
			{"JobManager", orDash(string(o.Status.JobManagerDeploymentStatus))}}, v.facts...)
		v.rescale = o.Status.Rescale
		v.scaling, v.scalable = readScaling(u), true
		if o.Spec.Job == nil {
			v.job = nil
		} else if o.Status.JobManagerDeploymentStatus == flinkv1beta1.JobManagerReady {
			v.cluster = o.Name
		}
	case *flinkv1beta1.FlinkSessionJob:
		v.common(&o.Status.CommonStatus)
		v.facts = append([][2]string{{"Session", orDash(o.Spec.DeploymentName)}}, v.facts...)
		v.scaling, v.scalable = readScaling(u), true
		v.cluster = o.Spec.DeploymentName
	case *flinkv1beta1.FlinkBlueGreenDeployment:
		st := &o.Status
		v.observedGeneration = st.ObservedGeneration
		v.facts = [][2]string{{"Blue/green state", orDash(string(st.BlueGreenState))}}
		if st.AbortTimestamp != "" {
			v.facts = append(v.facts, [2]string{"Abort at", st.AbortTimestamp})
		}
		v.conditions, v.errorText, v.operations = st.Conditions, st.Error, st.Operations
		job := st.JobStatus
		v.job = &job
	case *flinkv1beta1.FlinkStateSnapshot:
		return snapshotView(v, o), nil
	}
	if v.job != nil {
		snaps, err := snapshotsOf(ctx, c, t)
		if err != nil {
			return nil, err
		}
		v.snapshots = snaps
	}
	if v.job != nil && v.cluster != "" && v.job.JobID != "" && !terminal(v.job.State) && clients.Kube != nil {
		v.flinkStats, v.flinkErr = checkpointStatistics(ctx, clients.Kube, t.Namespace, v.cluster, v.job.JobID)
	}
	return v, nil
}

// terminal: a job that ended for good (Flink has no checkpoints to report of it once its
// cluster is gone).
func terminal(s flinkv1beta1.JobStatusState) bool {
	return s == flinkv1beta1.JobStatusFinished || s == flinkv1beta1.JobStatusFailed || s == flinkv1beta1.JobStatusCanceled ||
		s == flinkv1beta1.JobStatusSuspended || s == ""
}

// common fills in what FlinkDeployments and FlinkSessionJobs share.
func (v *statusView) common(st *flinkv1beta1.CommonStatus) {
	v.observedGeneration = st.ObservedGeneration
	v.facts = [][2]string{{"Lifecycle", orDash(string(st.LifecycleState))}, {"Reconciliation", orDash(string(st.ReconciliationStatus.State))}}
	v.conditions, v.errorText, v.operations = st.Conditions, st.Error, st.Operations
	job := st.JobStatus
	v.job = &job
}

func snapshotView(v *statusView, s *flinkv1beta1.FlinkStateSnapshot) *statusView {
	kind := "savepoint"
	if s.Spec.Checkpoint != nil {
		kind = "checkpoint"
	}
	v.facts = [][2]string{{"Type", kind}, {"State", orDash(string(s.Status.State))}, {"Path", orDash(s.Status.Path)}}
	if ref := s.Spec.JobReference; ref != nil {
		v.facts = append(v.facts, [2]string{"Of", strings.ToLower(string(ref.Kind)) + "/" + ref.Name})
	}
	v.facts = append(v.facts, [2]string{"Triggered", orDash(s.Status.TriggerTimestamp)}, [2]string{"Result at", orDash(s.Status.ResultTimestamp)})
	if s.Status.Failures > 0 {
		v.facts = append(v.facts, [2]string{"Failures", fmt.Sprint(s.Status.Failures)})
	}
	v.conditions, v.errorText = s.Status.Conditions, s.Status.Error
	return v
}

// snapshotsOf lists the FlinkStateSnapshots whose jobReference names the target, newest first.
// They carry no owner reference (they outlive the resource); the reference is their link.
func snapshotsOf(ctx context.Context, c client.Client, t Target) ([]flinkv1beta1.FlinkStateSnapshot, error) {
	var list flinkv1beta1.FlinkStateSnapshotList
	if err := c.List(ctx, &list, client.InNamespace(t.Namespace)); err != nil {
		return nil, fmt.Errorf("list the FlinkStateSnapshots of %s: %w", t, err)
	}
	var out []flinkv1beta1.FlinkStateSnapshot
	for _, s := range list.Items {
		if ref := s.Spec.JobReference; ref != nil && ref.Name == t.Name && (string(ref.Kind) == string(t.Kind) || (ref.Kind == "" && t.Kind == KindDeployment)) {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b flinkv1beta1.FlinkStateSnapshot) int {
		return snapshotTime(&b).Compare(snapshotTime(&a))
	})
	return out, nil
}

// snapshotTime is when a snapshot completed, else when it was triggered, else created.
func snapshotTime(s *flinkv1beta1.FlinkStateSnapshot) time.Time {
	for _, raw := range []string{s.Status.ResultTimestamp, s.Status.TriggerTimestamp} {
		if t, err := flinkv1beta1.ParseSnapshotTime(raw); raw != "" && err == nil {
			return t
		}
	}
	return s.CreationTimestamp.Time
}

func (v *statusView) render(w io.Writer, now time.Time) error {
	fmt.Fprintf(w, "%s (generation %d, observed %d)\n", v.target, v.generation, v.observedGeneration)
	if v.observedGeneration != 0 && v.observedGeneration < v.generation {
		fmt.Fprintln(w, "  the latest spec is not reconciled yet")
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, f := range v.facts {
		fmt.Fprintf(tw, "%s:\t%s\n", f[0], f[1])
	}
	if v.job != nil {
		fmt.Fprintf(tw, "Job:\t%s\n", jobLine(v.job))
	}
	if v.errorText != "" {
		reason := flinkv1beta1.ErrorReason(v.errorText)
		fmt.Fprintf(tw, "Error:\t%s: %s\n", orDash(string(reason)), flinkv1beta1.ErrorMessage(v.errorText))
	}
	if v.job != nil {
		fmt.Fprintf(tw, "Last checkpoint:\t%s\n", lastCheckpoint(v.job, v.snapshots, v.flinkStats, now))
		fmt.Fprintf(tw, "Last savepoint:\t%s\n", lastSavepoint(v.job, v.snapshots, v.flinkStats, now))
		if v.flinkErr != nil && !errors.Is(v.flinkErr, errNoProxy) {
			fmt.Fprintf(tw, "Flink:\tnot reached through the API server (%s): checkpoints and savepoints as the status records them\n", oneLine(v.flinkErr.Error()))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	v.renderConditions(w, now)
	v.renderSnapshots(w, now)
	v.renderRescale(w, now)
	v.renderOperations(w, now)
	if v.scalable {
		fmt.Fprintln(w)
		if v.scaling == nil {
			fmt.Fprintln(w, "Scaling: no decision recorded")
		} else {
			fmt.Fprintf(w, "Scaling: %s (kubectl flink explain-scaling %s)\n", scalingSummary(v.scaling, now), v.target.Name)
		}
	}
	return nil
}

func jobLine(j *flinkv1beta1.JobStatus) string {
	if j.State == "" && j.JobID == "" {
		return "-"
	}
	line := orDash(string(j.State))
	if j.JobID != "" {
		line += "  id " + j.JobID
	}
	if j.JobName != "" {
		line += "  name " + j.JobName
	}
	return line
}

// lastCheckpoint is the newest of the checkpoint the status records, the newest completed
// checkpoint snapshot and the latest one Flink reports.
func lastCheckpoint(j *flinkv1beta1.JobStatus, snaps []flinkv1beta1.FlinkStateSnapshot, stats *flink.CheckpointStatistics, now time.Time) string {
	var newest stateRef
	if info := j.CheckpointInfo; info != nil && info.LastCheckpoint != nil && info.LastCheckpoint.TimeStamp > 0 {
		newest = newest.or(stateRef{at: time.UnixMilli(info.LastCheckpoint.TimeStamp)})
	}
	if s := newestCompleted(snaps, true); s != nil {
		newest = newest.or(stateRef{at: snapshotTime(s), path: s.Status.Path})
	}
	if stats != nil && stats.Latest.Completed != nil {
		newest = newest.or(stateRef{at: refTime(stats.Latest.Completed), path: stats.Latest.Completed.ExternalPath})
	}
	return newest.String(now)
}

// lastSavepoint is the newest of the savepoint the status records, the newest completed
// savepoint snapshot and the latest one Flink reports.
func lastSavepoint(j *flinkv1beta1.JobStatus, snaps []flinkv1beta1.FlinkStateSnapshot, stats *flink.CheckpointStatistics, now time.Time) string {
	var newest stateRef
	if info := j.SavepointInfo; info != nil && info.LastSavepoint != nil && info.LastSavepoint.Location != "" {
		ref := stateRef{path: info.LastSavepoint.Location}
		if info.LastSavepoint.TimeStamp > 0 {
			ref.at = time.UnixMilli(info.LastSavepoint.TimeStamp)
		}
		newest = newest.or(ref)
	}
	if s := newestCompleted(snaps, false); s != nil {
		newest = newest.or(stateRef{at: snapshotTime(s), path: s.Status.Path})
	}
	if stats != nil && stats.Latest.Savepoint != nil {
		newest = newest.or(stateRef{at: refTime(stats.Latest.Savepoint), path: stats.Latest.Savepoint.ExternalPath})
	}
	return newest.String(now)
}

// stateRef is a checkpoint or savepoint: when it completed (zero when unknown) and where.
type stateRef struct {
	at   time.Time
	path string
}

// or is the newer of r and o; one with a path wins over one without when neither has a time.
func (r stateRef) or(o stateRef) stateRef {
	switch {
	case r == (stateRef{}):
		return o
	case o.at.After(r.at):
		return o
	case o.at.Equal(r.at) && r.path == "":
		return o
	}
	return r
}

func (r stateRef) String(now time.Time) string { return when(r.at, r.path, now) }

func when(at time.Time, path string, now time.Time) string {
	switch {
	case at.IsZero() && path == "":
		return "none"
	case at.IsZero():
		return path
	case path == "":
		return age(now, at) + " ago (" + at.UTC().Format(time.RFC3339) + ")"
	}
	return age(now, at) + " ago  " + path
}

// newestCompleted is the newest COMPLETED checkpoint or savepoint of snaps (sorted newest first).
func newestCompleted(snaps []flinkv1beta1.FlinkStateSnapshot, checkpoint bool) *flinkv1beta1.FlinkStateSnapshot {
	for i := range snaps {
		s := &snaps[i]
		if s.Status.State == flinkv1beta1.SnapshotCompleted && (s.Spec.Checkpoint != nil) == checkpoint {
			return s
		}
	}
	return nil
}

// conditionOrder puts the conditions people act on first.
var conditionOrder = []string{"Ready", "Progressing", "Degraded", "Stalled", "Reconciling", "Running"}

func (v *statusView) renderConditions(w io.Writer, now time.Time) {
	fmt.Fprintln(w)
	if len(v.conditions) == 0 {
		fmt.Fprintln(w, "Conditions: none")
		return
	}
	conds := slices.Clone(v.conditions)
	rank := func(t string) int {
		if i := slices.Index(conditionOrder, t); i >= 0 {
			return i
		}
		return len(conditionOrder)
	}
	slices.SortStableFunc(conds, func(a, b metav1.Condition) int { return rank(a.Type) - rank(b.Type) })
	fmt.Fprintln(w, "Conditions:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
	for _, c := range conds {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, orDash(c.Reason), age(now, c.LastTransitionTime.Time), oneLine(c.Message))
	}
	_ = tw.Flush()
}

func (v *statusView) renderSnapshots(w io.Writer, now time.Time) {
	if v.job == nil || len(v.snapshots) == 0 {
		return
	}
	fmt.Fprintf(w, "\nSnapshots (FlinkStateSnapshot, newest %d of %d):\n", min(snapshotsShown, len(v.snapshots)), len(v.snapshots))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tTYPE\tSTATE\tAGE\tPATH")
	for _, s := range v.snapshots[:min(snapshotsShown, len(v.snapshots))] {
		kind := "savepoint"
		if s.Spec.Checkpoint != nil {
			kind = "checkpoint"
		}
		path := s.Status.Path
		if path == "" && s.Status.Error != "" {
			path = "error: " + oneLine(flinkv1beta1.ErrorMessage(s.Status.Error))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", s.Name, kind, orDash(string(s.Status.State)), age(now, snapshotTime(&s)), orDash(path))
	}
	_ = tw.Flush()
}

func (v *statusView) renderRescale(w io.Writer, now time.Time) {
	r := v.rescale
	if r == nil {
		return
	}
	fmt.Fprintf(w, "\nRescale in flight (generation %d, asked %s ago): %s -> %s", r.Generation, age(now, r.RequestedAt.Time), orDash(r.From), orDash(r.To))
	if r.Reported != "" {
		fmt.Fprintf(w, ", Flink reports %s", r.Reported)
	}
	if r.TimedOut {
		fmt.Fprint(w, " (timed out: Flink did not report the new parallelism in time)")
	}
	fmt.Fprintln(w)
}

// operationsShown is how many of status.operations status lists, newest last as recorded.
const operationsShown = 5

func (v *statusView) renderOperations(w io.Writer, now time.Time) {
	if len(v.operations) == 0 {
		return
	}
	ops := v.operations[max(0, len(v.operations)-operationsShown):]
	fmt.Fprintf(w, "\nRecent operations (%d of %d, oldest first):\n", len(ops), len(v.operations))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TYPE\tGEN\tSTARTED\tTOOK\tOUTCOME\tSNAPSHOT\tMESSAGE")
	for _, op := range ops {
		took := "-"
		if op.EndedAt != nil {
			took = duration.HumanDuration(op.EndedAt.Sub(op.StartedAt.Time))
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s ago\t%s\t%s\t%s\t%s\n", op.Type, op.Generation, age(now, op.StartedAt.Time), took, op.Outcome,
			orDash(op.Snapshot), oneLine(op.Message))
	}
	_ = tw.Flush()
}

// age is how long ago t was, as kubectl prints ages; "-" when unknown.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(t))
}

// oneLine keeps a table row on one line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const limit = 160
	if len(s) > limit {
		return s[:limit] + "..."
	}
	return s
}
