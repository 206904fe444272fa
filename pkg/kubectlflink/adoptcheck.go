package kubectlflink

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/pkg/options"
	"github.com/flink-operator/flink-operator/pkg/upstreamoptions"
)

// Adoption actions: what the operator's first reconcile of a resource does.
const (
	ActionKeep             = "keep"              // nothing is restarted
	ActionDeploy           = "deploy"            // nothing recorded as deployed: deployed from the spec
	ActionNothing          = "nothing"           // created suspended, nothing to run
	ActionUpgrade          = "upgrade"           // the spec differs from the one recorded as deployed
	ActionContinueUpgrade  = "continue-upgrade"  // the recorded upgrade goes on
	ActionContinueRollback = "continue-rollback" // the recorded rollback goes on
	ActionRedeploy         = "redeploy"          // a new savepointRedeployNonce
)

// Verdict is what this operator will do with one resource once it runs, and why.
type Verdict struct {
	Kind      Kind
	Namespace string
	Name      string
	Action    string
	Why       string
	// Notes are what else happens or deserves a look (a pending savepoint, unhonoured options).
	Notes []string
}

func (p *plugin) adoptCheckCommand() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "adopt-check",
		Short: "Dry run: what this operator will do with each FlinkDeployment and FlinkSessionJob it adopts, and why (writes nothing)",
		Long: "adopt-check reads the FlinkDeployments and FlinkSessionJobs of a namespace (-A: all) as the Apache\n" +
			"operator left them and says what this operator's first reconcile of each will do, with the\n" +
			"decision functions the operator itself uses. Nothing is written. Options set in the operator's\n" +
			"own configuration are not seen; those of each resource are.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := p.connect()
			if err != nil {
				return err
			}
			ns := c.Namespace
			if all {
				ns = ""
			}
			verdicts, err := adoptCheck(cmd.Context(), c.Client, ns)
			if err != nil {
				return err
			}
			return renderVerdicts(p.out(), verdicts, ns)
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "check every namespace")
	return cmd
}

// adoptCheck judges every FlinkDeployment and FlinkSessionJob of namespace ("" for all). It
// only reads: the resources, and the HA ConfigMaps a last-state upgrade would restore from.
func adoptCheck(ctx context.Context, c client.Client, namespace string) ([]Verdict, error) {
	var deps flinkv1beta1.FlinkDeploymentList
	if err := c.List(ctx, &deps, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list FlinkDeployments: %w", err)
	}
	var sessionJobs flinkv1beta1.FlinkSessionJobList
	if err := c.List(ctx, &sessionJobs, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list FlinkSessionJobs: %w", err)
	}
	sessions := map[client.ObjectKey]*flinkv1beta1.FlinkDeployment{}
	var out []Verdict
	for i := range deps.Items {
		d := &deps.Items[i]
		sessions[client.ObjectKeyFromObject(d)] = d
		v, err := assessDeployment(ctx, c, d)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	for i := range sessionJobs.Items {
		j := &sessionJobs.Items[i]
		v, err := assessSessionJob(ctx, c, j, sessions[client.ObjectKey{Namespace: j.Namespace, Name: j.Spec.DeploymentName}])
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// assessDeployment is the first reconcile of a FlinkDeployment, phase by phase as the
// reconciler's specPhases try them (controllers/flinkdeployment/phases.go), each phase's
// condition answered with the function the reconciler calls.
func assessDeployment(ctx context.Context, c client.Reader, d *flinkv1beta1.FlinkDeployment) (Verdict, error) {
	v := Verdict{Kind: KindDeployment, Namespace: d.Namespace, Name: d.Name}
	st := &d.Status
	desired := &d.Spec
	conf := flatConfig(desired.FlinkConfiguration)
	v.Notes = append(v.Notes, optionNotes(conf)...)

	var deployed flinkv1beta1.FlinkDeploymentSpec
	found, first, err := flinkv1beta1.DecodeReconciledSpec(st.ReconciliationStatus.LastReconciledSpec, &deployed)
	if err != nil || !found {
		// The reconciler reads an unreadable record as none (JobRecord.Read).
		why := "nothing is recorded as deployed (status.reconciliationStatus.lastReconciledSpec is empty)"
		if err != nil {
			why = fmt.Sprintf("status.reconciliationStatus.lastReconciledSpec cannot be read (%v), so it counts as nothing deployed", err)
		}
		if desired.Job != nil && desired.Job.State == flinkv1beta1.JobStateSuspended {
			v.Action, v.Why = ActionNothing, why+"; the job is suspended, so nothing is deployed until it is resumed"
			return v, nil
		}
		v.Action, v.Why = ActionDeploy, why+": the cluster is deployed from the spec"
		if desired.Job != nil && desired.Job.InitialSavepointPath != "" {
			v.Why += ", restoring initialSavepointPath " + desired.Job.InitialSavepointPath
		}
		if st.JobManagerDeploymentStatus != "" && st.JobManagerDeploymentStatus != flinkv1beta1.JobManagerMissing {
			v.Notes = append(v.Notes, "its status says a JobManager exists ("+string(st.JobManagerDeploymentStatus)+"); it is replaced by this deployment")
		}
		return v, nil
	}
	v.Notes = append(v.Notes, generationNote(&st.CommonStatus)...)

	changed := jobs.SpecChanged(&deployed, desired)
	state := st.ReconciliationStatus.State
	switch {
	case desired.Job != nil && jobs.RedeployRequested(deployed.Job, desired.Job):
		v.Action = ActionRedeploy
		v.Why = "spec.job.savepointRedeployNonce is new: the cluster and its HA metadata are deleted without a savepoint, then the job starts from initialSavepointPath " +
			orDash(desired.Job.InitialSavepointPath)
		return v, nil
	case state == flinkv1beta1.ReconciliationRollingBack && !changed:
		v.Action, v.Why = ActionContinueRollback, "the Apache operator was rolling back to the last stable spec; the rollback goes on"
		return v, nil
	case state == flinkv1beta1.ReconciliationRolledBack && !changed:
		v.Action, v.Why = ActionKeep, "rolled back, spec unchanged: the rolled-back job keeps running (a missing JobManager is rolled back again)"
		return v, nil
	case state != flinkv1beta1.ReconciliationUpgrading && state != flinkv1beta1.ReconciliationRollingBack && !changed:
		v.Action = ActionKeep
		v.Why = "the spec is the one recorded as deployed: nothing is restarted or redeployed"
		if desired.Job != nil {
			v.Why += "; job " + orDash(st.JobStatus.JobID) + " (" + orDash(string(st.JobStatus.State)) + ") is kept"
		}
		v.Notes = append(v.Notes, nonceNotes(deployed.Job, desired.Job)...)
		return v, nil
	}
	if desired.Job == nil {
		v.Action = ActionUpgrade
		if state == flinkv1beta1.ReconciliationUpgrading && !changed {
			v.Action = ActionContinueUpgrade
		}
		v.Why = "session cluster: it is redeployed with the new spec, keeping its HA metadata so its jobs recover from their latest checkpoints"
		return v, nil
	}
	deployedConf := flatConfig(deployed.FlinkConfiguration)
	situation := jobs.UpgradeSituation{
		Mode: jobs.UpgradeModeOf(desired.Job), Job: st.JobStatus.State, JobManager: st.JobManagerDeploymentStatus,
		HAEnabled:           conf.HAEnabled() && deployedConf.HAEnabled(),
		SavepointDir:        conf.Get("execution.checkpointing.savepoint-dir", conf.Get("state.savepoints.dir", "")) != "",
		FlinkVersionChanged: deployed.FlinkVersion != "" && desired.FlinkVersion != deployed.FlinkVersion,
		LastStateFallback:   options.LastStateFallback.Get(conf),
		CancelForLastState:  options.LastStateCancel.Get(conf),
		RestorePath:         recordedRestorePath(&st.JobStatus),
		NothingRan:          first && state == flinkv1beta1.ReconciliationUpgrading,
	}
	if situation.HAEnabled && situation.Mode != flinkv1beta1.UpgradeModeStateless && st.JobStatus.JobID != "" {
		if situation.HAMetadata, err = native.HAConfigMapExists(ctx, c, d.Namespace, d.Name, native.JobHAConfigMapName(d.Name, st.JobStatus.JobID)); err != nil {
			return v, fmt.Errorf("HA ConfigMaps of flinkdeployment %s/%s: %w", d.Namespace, d.Name, err)
		}
	}
	return upgradeVerdict(v, state, changed, situation), nil
}

// assessSessionJob is the first reconcile of a FlinkSessionJob (controllers/flinksessionjob's
// phases), as assessDeployment.
func assessSessionJob(ctx context.Context, c client.Reader, j *flinkv1beta1.FlinkSessionJob, session *flinkv1beta1.FlinkDeployment) (Verdict, error) {
	v := Verdict{Kind: KindSessionJob, Namespace: j.Namespace, Name: j.Name}
	st := &j.Status
	conf := flatConfig(j.Spec.FlinkConfiguration)
	v.Notes = append(v.Notes, optionNotes(conf)...)
	if session == nil {
		v.Notes = append(v.Notes, "its session FlinkDeployment "+orDash(j.Spec.DeploymentName)+" does not exist: nothing runs until it does")
	}
	var deployed flinkv1beta1.FlinkSessionJobSpec
	found, first, err := flinkv1beta1.DecodeReconciledSpec(st.ReconciliationStatus.LastReconciledSpec, &deployed)
	if err != nil || !found {
		v.Action, v.Why = ActionDeploy, "nothing is recorded as submitted (status.reconciliationStatus.lastReconciledSpec): the job is submitted from the spec"
		if err != nil {
			v.Why = fmt.Sprintf("status.reconciliationStatus.lastReconciledSpec cannot be read (%v), so it counts as nothing submitted: the job is submitted from the spec", err)
		}
		return v, nil
	}
	v.Notes = append(v.Notes, generationNote(&st.CommonStatus)...)
	changed := jobs.SessionJobSpecChanged(&deployed, &j.Spec)
	state := st.ReconciliationStatus.State
	if j.Spec.Job != nil && jobs.RedeployRequested(deployed.Job, j.Spec.Job) {
		v.Action, v.Why = ActionRedeploy, "spec.job.savepointRedeployNonce is new: the job is cancelled and submitted from initialSavepointPath "+
			orDash(j.Spec.Job.InitialSavepointPath)
		return v, nil
	}
	if state != flinkv1beta1.ReconciliationUpgrading && !changed {
		v.Action = ActionKeep
		v.Why = "the spec is the one recorded as submitted: job " + orDash(st.JobStatus.JobID) + " (" + orDash(string(st.JobStatus.State)) + ") is kept"
		v.Notes = append(v.Notes, nonceNotes(deployed.Job, j.Spec.Job)...)
		return v, nil
	}
	situation := jobs.UpgradeSituation{
		Mode: jobs.UpgradeModeOf(j.Spec.Job), Job: st.JobStatus.State,
		RestorePath: recordedRestorePath(&st.JobStatus),
		NothingRan:  first && state == flinkv1beta1.ReconciliationUpgrading,
	}
	if session != nil {
		sessionConf := flatConfig(session.Spec.FlinkConfiguration)
		situation.JobManager = session.Status.JobManagerDeploymentStatus
		situation.HAEnabled = sessionConf.HAEnabled()
		situation.SavepointDir = sessionConf.Get("execution.checkpointing.savepoint-dir", sessionConf.Get("state.savepoints.dir", "")) != ""
		situation.LastStateFallback = options.LastStateFallback.Get(sessionConf)
		if situation.HAEnabled && st.JobStatus.JobID != "" {
			if situation.HAMetadata, err = native.HAConfigMapExists(ctx, c, j.Namespace, session.Name, native.JobHAConfigMapName(session.Name, st.JobStatus.JobID)); err != nil {
				return v, fmt.Errorf("HA ConfigMaps of session %s/%s: %w", j.Namespace, session.Name, err)
			}
		}
	}
	return upgradeVerdict(v, state, changed, situation), nil
}

// upgradeVerdict says how the upgrade goes, as jobs.PlanUpgrade (the reconciler's decision
// table) decides it for the recorded situation.
func upgradeVerdict(v Verdict, state flinkv1beta1.ReconciliationState, changed bool, s jobs.UpgradeSituation) Verdict {
	plan := jobs.PlanUpgrade(s)
	v.Action, v.Why = ActionUpgrade, "the spec differs from the one recorded as deployed"
	switch {
	case state == flinkv1beta1.ReconciliationUpgrading && !changed:
		v.Action, v.Why = ActionContinueUpgrade, "the Apache operator recorded an upgrade it had not finished"
	case state == flinkv1beta1.ReconciliationUpgrading:
		v.Why = "the Apache operator recorded an upgrade it had not finished, and the spec changed since: the newest spec is the target"
	case state == flinkv1beta1.ReconciliationRollingBack:
		v.Why = "the spec changed during a rollback: the rollback is abandoned and the new spec applied"
	}
	v.Why += fmt.Sprintf(" (upgradeMode %s): %s", s.Mode, describePlan(plan))
	switch plan.Stop {
	case jobs.StopFail:
		v.Notes = append(v.Notes, "the job's state cannot be carried over: the operator reports it and waits for a person (set initialSavepointPath, or upgradeMode stateless)")
	case jobs.StopWait:
		v.Notes = append(v.Notes, "the operator waits and decides again at its next reconcile")
	}
	return v
}

func describePlan(p jobs.UpgradePlan) string {
	stop := map[jobs.StopMode]string{
		jobs.StopStateless: "the job is cancelled", jobs.StopSavepoint: "the job stops with a savepoint",
		jobs.StopCancel: "its latest checkpoint is recorded and the job cancelled", jobs.StopNone: "nothing to stop",
		jobs.StopWait: "it waits", jobs.StopFail: "it stops short",
	}[p.Stop]
	if stop == "" {
		stop = "the cluster is deleted, its HA metadata kept"
	}
	restore := map[jobs.RestoreMode]string{
		jobs.RestoreNothing: "starts with empty state", jobs.RestoreSavepoint: "restores the savepoint or checkpoint recorded",
		jobs.RestoreLastState: "restores from its HA metadata with the same job id",
	}[p.Restore]
	out := stop
	if restore != "" && p.Stop != jobs.StopWait && p.Stop != jobs.StopFail {
		out += ", then the new job " + restore
	}
	if p.Reason != "" {
		out += " (" + p.Reason + ")"
	}
	return out
}

// recordedRestorePath is the path the status says an upgrade restores from, with the Apache
// operator's last-state sentinel read as "from HA metadata" (no path), as the reconcilers do.
func recordedRestorePath(js *flinkv1beta1.JobStatus) string {
	if js.UpgradeSavepointPath == flinkv1beta1.LastStateSentinelPath {
		return ""
	}
	return js.UpgradeSavepointPath
}

// generationNote says when observedGeneration is taken from lastReconciledSpec (the Apache
// operator 1.7 records it only there), as the reconcilers' adoption of it does.
func generationNote(st *flinkv1beta1.CommonStatus) []string {
	if st.ObservedGeneration != 0 {
		return nil
	}
	if g := flinkv1beta1.ReconciledGeneration(st.ReconciliationStatus.LastReconciledSpec); g != 0 {
		return []string{fmt.Sprintf("status.observedGeneration is taken from lastReconciledSpec (generation %d)", g)}
	}
	return nil
}

// nonceNotes: trigger nonces not yet recorded ask for a snapshot of the running job.
func nonceNotes(deployed, desired *flinkv1beta1.JobSpec) []string {
	if deployed == nil || desired == nil {
		return nil
	}
	var out []string
	if !jobs.EqualNonce(deployed.SavepointTriggerNonce, desired.SavepointTriggerNonce) && desired.SavepointTriggerNonce != nil {
		out = append(out, "spec.job.savepointTriggerNonce is new: a manual savepoint is taken")
	}
	if !jobs.EqualNonce(deployed.CheckpointTriggerNonce, desired.CheckpointTriggerNonce) && desired.CheckpointTriggerNonce != nil {
		out = append(out, "spec.job.checkpointTriggerNonce is new: a manual checkpoint is taken")
	}
	return out
}

// optionNotes are the admission warnings of the upstream options the resource sets that have
// no effect here.
func optionNotes(conf flinkconf.Config) []string {
	return upstreamoptions.Warnings(conf)
}

// flatConfig is a resource's flinkConfiguration as flat keys; an unreadable one is empty (the
// reconciler reports it as invalid).
func flatConfig(c flinkv1beta1.FlinkConfiguration) flinkconf.Config {
	flat, err := c.Flatten()
	if err != nil {
		return flinkconf.Config{}
	}
	return flat
}

func renderVerdicts(w io.Writer, verdicts []Verdict, namespace string) error {
	where := "namespace " + namespace
	if namespace == "" {
		where = "all namespaces"
	}
	fmt.Fprintf(w, "Dry run over %s: nothing was written.\n", where)
	if len(verdicts) == 0 {
		_, err := fmt.Fprintln(w, "No FlinkDeployment or FlinkSessionJob found.")
		return err
	}
	counts := map[string]int{}
	for _, v := range verdicts {
		counts[v.Action]++
		fmt.Fprintf(w, "\n%s %s/%s: %s\n  why: %s\n", strings.ToLower(string(v.Kind)), v.Namespace, v.Name, strings.ToUpper(v.Action), v.Why)
		for _, n := range v.Notes {
			fmt.Fprintf(w, "  note: %s\n", n)
		}
	}
	actions := make([]string, 0, len(counts))
	for a, n := range counts {
		actions = append(actions, fmt.Sprintf("%d %s", n, a))
	}
	slices.Sort(actions)
	_, err := fmt.Fprintf(w, "\n%d resources: %s\n", len(verdicts), strings.Join(actions, ", "))
	return err
}
