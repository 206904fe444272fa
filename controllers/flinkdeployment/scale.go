package flinkdeployment

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/pkg/options"
)

const (
	// ReasonScaling is the event of an in-place rescale.
	ReasonScaling = "Scaling"
	// ReasonScaled is the event of an in-place rescale Flink carried out, ReasonScaleTimedOut
	// that of one it did not carry out within the readiness timeout.
	ReasonScaled        = "Scaled"
	ReasonScaleTimedOut = "ScaleTimedOut"
)

// inPlaceScaleTarget decides whether a spec change is a SCALE change that can skip the
// upgrade: in native mode, only pipeline.jobvertex-parallelism-overrides changed, no vertex
// lost its override, Flink is 1.18 or newer and runs the adaptive scheduler. It returns the new
// per-vertex parallelism, or nil (a full upgrade).
func inPlaceScaleTarget(deployed, desired *flinkv1beta1.FlinkDeploymentSpec, conf flinkconf.Config) map[string]int {
	if desired.Job == nil || desired.Mode == flinkv1beta1.DeploymentModeStandalone ||
		!options.InPlaceScaling.Get(conf) ||
		!strings.EqualFold(conf.Get("jobmanager.scheduler", ""), "adaptive") || !flinkconf.AtLeast(desired.FlinkVersion, 1, 18) {
		return nil
	}
	before, after := deployed.DeepCopy(), desired.DeepCopy()
	oldOverrides, newOverrides := takeOverrides(before), takeOverrides(after)
	if oldOverrides == newOverrides || jobs.SpecChanged(before, after) {
		return nil // nothing to scale, or more than the overrides changed
	}
	old, err1 := parseOverrides(oldOverrides)
	target, err2 := parseOverrides(newOverrides)
	if err1 != nil || err2 != nil || len(target) == 0 {
		return nil
	}
	for vertex := range old {
		if _, kept := target[vertex]; !kept {
			return nil // a removed override needs the job's own parallelism again: upgrade
		}
	}
	return target
}

// takeOverrides removes the overrides from a spec's configuration and returns them.
func takeOverrides(spec *flinkv1beta1.FlinkDeploymentSpec) string {
	flat, err := spec.FlinkConfiguration.Flatten()
	if err != nil {
		return ""
	}
	v := flat[jobs.KeyParallelismOverrides]
	delete(flat, jobs.KeyParallelismOverrides)
	spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(flat)
	return v
}

func parseOverrides(s string) (map[string]int, error) {
	out := map[string]int{}
	for _, pair := range strings.Split(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		vertex, p, ok := strings.Cut(pair, ":")
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if !ok || err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not vertexId:parallelism", jobs.KeyParallelismOverrides, pair)
		}
		out[strings.TrimSpace(vertex)] = n
	}
	return out, nil
}

// reactiveScaleTarget decides whether a change is a SCALE change of a standalone cluster in
// Flink's reactive mode (scheduler-mode: reactive), where the job adapts to the TaskManagers
// there are: only job.parallelism or taskManager.replicas changed. It returns the new number of
// TaskManagers.
func reactiveScaleTarget(deployed, desired *flinkv1beta1.FlinkDeploymentSpec, conf flinkconf.Config) (int32, bool) {
	if desired.Job == nil || desired.Mode != flinkv1beta1.DeploymentModeStandalone ||
		!options.InPlaceScaling.Get(conf) || !strings.EqualFold(conf.Get("scheduler-mode", ""), "reactive") {
		return 0, false
	}
	before, after := deployed.DeepCopy(), desired.DeepCopy()
	for _, spec := range []*flinkv1beta1.FlinkDeploymentSpec{before, after} {
		if spec.Job != nil {
			spec.Job.Parallelism = 0
		}
		if spec.TaskManager != nil {
			spec.TaskManager.Replicas = nil
		}
	}
	if jobs.SpecChanged(before, after) || !jobs.SpecChanged(deployed, desired) {
		return 0, false
	}
	replicas, err := flinkconf.TaskManagerReplicas(conf, desired)
	return replicas, err == nil
}

// scaleReactive scales the TaskManager Deployment of a reactive-mode standalone cluster.
func (r *FlinkDeploymentReconciler) scaleReactive(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, replicas int32) bool {
	tm := &appsv1.Deployment{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.dep.Namespace, Name: native.TaskManagerDeploymentName(s.dep.Name)}, tm); err != nil {
		return false
	}
	patch := client.MergeFrom(tm.DeepCopy())
	tm.Spec.Replicas = &replicas
	if err := r.Client.Patch(ctx, tm, patch); err != nil {
		log.FromContext(ctx).Info("reactive scaling failed; upgrading instead", "error", err.Error())
		return false
	}
	r.scaleChanged(s, desired)
	if err := s.recordDeployed(*desired, flinkv1beta1.ReconciliationDeployed); err != nil {
		return false
	}
	r.Recorder.Eventf(s.dep, corev1.EventTypeNormal, ReasonScaling, "Scaled the TaskManagers to %d (reactive mode); the job adapts without a restart", replicas)
	return true
}

// scaleInPlace applies a SCALE change to the running job through Flink's resource-requirements
// API: each overridden vertex gets upper bound = its override, lower bound = min(override,
// current lower bound). On success the new spec is recorded as deployed, without a restart, with
// the rescale in status.rescale until Flink reports the new parallelism (followRescale); on any
// failure the caller upgrades as usual.
func (r *FlinkDeploymentReconciler) scaleInPlace(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, conf flinkconf.Config) bool {
	st := s.status()
	if st.JobManagerDeploymentStatus != flinkv1beta1.JobManagerReady || st.JobStatus.State != flinkv1beta1.JobStatusRunning {
		return false
	}
	if replicas, ok := reactiveScaleTarget(s.Deployed, desired, conf); ok {
		return r.scaleReactive(ctx, s, desired, replicas)
	}
	target := inPlaceScaleTarget(s.Deployed, desired, conf)
	if target == nil {
		return false
	}
	logger := log.FromContext(ctx)
	cl, err := r.RestClient(ctx, s)
	if err != nil {
		return false
	}
	reqs, err := cl.ResourceRequirements(ctx, st.JobStatus.JobID)
	if err != nil {
		logger.Info("in-place scaling not possible; upgrading instead", "error", err.Error())
		return false
	}
	from := rescaleFrom(s.Deployed, reqs, target) // before reqs is changed below
	for vertex, p := range target {
		current, ok := reqs[vertex]
		if !ok {
			logger.Info("in-place scaling: unknown vertex; upgrading instead", "vertex", vertex)
			return false
		}
		reqs[vertex] = flink.VertexResources{Parallelism: flink.ParallelismBounds{LowerBound: min(p, current.Parallelism.LowerBound), UpperBound: p}}
	}
	if err := cl.SetResourceRequirements(ctx, st.JobStatus.JobID, reqs); err != nil {
		logger.Info("in-place scaling failed; upgrading instead", "error", err.Error())
		return false
	}
	r.scaleChanged(s, desired)
	if err := s.recordDeployed(*desired, flinkv1beta1.ReconciliationDeployed); err != nil {
		return false
	}
	// Flink was asked; it shows the new parallelism once its scheduler has the slots and has
	// restarted the job's tasks. Until then Progressing says Scaling (followRescale).
	st.Rescale = &flinkv1beta1.Rescale{Generation: s.dep.Generation, RequestedAt: metav1.Now(), From: formatParallelism(from), To: formatParallelism(target)}
	overrides, _ := desired.FlinkConfiguration.Flatten()
	r.Recorder.Eventf(s.dep, corev1.EventTypeNormal, ReasonScaling, "Scaled the running job in place: %s", overrides[jobs.KeyParallelismOverrides])
	return true
}

// rescaleFrom is the parallelism a rescale to target starts from, per vertex asked for: the
// deployed spec's override, else the upper bound Flink's requirements had. The override comes
// first because the requirements alone would read as already rescaled on a retry after Flink was
// asked and the status write that followed was lost.
func rescaleFrom(deployed *flinkv1beta1.FlinkDeploymentSpec, reqs map[string]flink.VertexResources, target map[string]int) map[string]int {
	overrides, _ := parseOverrides(takeOverrides(deployed.DeepCopy()))
	from := map[string]int{}
	for vertex := range target {
		if p, ok := overrides[vertex]; ok {
			from[vertex] = p
		} else if r, ok := reqs[vertex]; ok {
			from[vertex] = r.Parallelism.UpperBound
		}
	}
	return from
}

// formatParallelism writes per-vertex parallelism as vertexId:parallelism pairs, in the order of
// the vertex ids (the form of pipeline.jobvertex-parallelism-overrides).
func formatParallelism(p map[string]int) string {
	pairs := make([]string, 0, len(p))
	for vertex, n := range p {
		pairs = append(pairs, vertex+":"+strconv.Itoa(n))
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

// rescaleOutcome is what a rescale in flight came to at one look.
type rescaleOutcome int

const (
	rescaleWaiting   rescaleOutcome = iota // Flink does not report the parallelism asked for yet
	rescaleReached                         // Flink reports it for every vertex: done
	rescaleTimedOut                        // not reached within the readiness timeout (reported once)
	rescaleAbandoned                       // the job no longer runs: nothing to wait for
)

// rescaleStep decides what an in-place rescale recorded in status.rescale has come to, from the
// job's state, the per-vertex parallelism Flink's REST reports (nil when it could not be read)
// and the time. It returns the rescale to record next (nil once it is over) and the outcome:
//
//	the job FAILED, ended or is suspended        → abandoned (its Degraded reason says why)
//	every vertex asked for has its parallelism   → reached, even after a time-out (slots came)
//	not reached, readiness.timeout passed        → timedOut once, then waiting with timedOut set
//	otherwise                                    → waiting; reported follows Flink's answer
//
// A restarting job is waited for: Flink's adaptive scheduler restarts the tasks to rescale.
func rescaleStep(r flinkv1beta1.Rescale, job flinkv1beta1.JobStatusState, reported map[string]int, now time.Time, timeout time.Duration) (*flinkv1beta1.Rescale, rescaleOutcome) {
	if reconciler.IsTerminal(job) || job == flinkv1beta1.JobStatusSuspended {
		return nil, rescaleAbandoned
	}
	asked, err := parseOverrides(r.To)
	if err != nil || len(asked) == 0 {
		return nil, rescaleAbandoned // not written by this operator: nothing it can follow
	}
	if reported != nil {
		seen := map[string]int{}
		reached := true
		for vertex, p := range asked {
			n, ok := reported[vertex]
			if ok {
				seen[vertex] = n
			}
			reached = reached && ok && n == p
		}
		if reached {
			return nil, rescaleReached
		}
		r.Reported = formatParallelism(seen)
	}
	if !r.TimedOut && now.Sub(r.RequestedAt.Time) >= timeout {
		r.TimedOut = true
		return &r, rescaleTimedOut
	}
	return &r, rescaleWaiting
}

// followRescale follows an in-place rescale in flight (status.rescale) until Flink's REST
// reports the parallelism asked for: it reads the job's vertices, records what Flink reports and
// ends the rescale when it matches (rescaleStep). It never acts on the cluster, so the phases
// after it run as usual.
func (r *FlinkDeploymentReconciler) followRescale(ctx context.Context, p *pass) (jobs.PhaseResult, error) {
	st := p.status()
	if st.Rescale == nil {
		return jobs.Next(), nil
	}
	var reported map[string]int
	if st.JobManagerDeploymentStatus == flinkv1beta1.JobManagerReady && st.JobStatus.JobID != "" {
		if cl, err := r.RestClient(ctx, p.scope); err == nil {
			if details, err := cl.JobDetails(ctx, st.JobStatus.JobID); err == nil {
				reported = map[string]int{}
				for _, v := range details.Vertices {
					reported[v.ID] = v.Parallelism
				}
			} else {
				log.FromContext(ctx).V(1).Info("rescale: job vertices not read", "reason", err.Error())
			}
		}
	}
	timeout := options.ReadinessTimeout.Get(p.conf)
	next, outcome := rescaleStep(*st.Rescale, st.JobStatus.State, reported, time.Now(), timeout)
	switch outcome {
	case rescaleReached:
		r.Recorder.Eventf(p.dep, corev1.EventTypeNormal, ReasonScaled, "Flink runs the job at the parallelism asked for: %s", st.Rescale.To)
	case rescaleTimedOut:
		r.Recorder.Eventf(p.dep, corev1.EventTypeWarning, ReasonScaleTimedOut, "Flink did not reach the parallelism asked for within %s: asked for %s, it reports %s",
			timeout, next.To, next.Reported)
	}
	st.Rescale = next
	if next == nil {
		return jobs.Next(), nil
	}
	left := time.Until(next.RequestedAt.Add(timeout))
	if next.TimedOut || left > r.Intervals.ProgressCheck {
		left = r.Intervals.ProgressCheck
	}
	return jobs.NextWithin(left), nil
}

// scaleChanged is upstream's SpecChanged event for a change applied without a restart (a SCALE
// change), the autoscaler's overrides included: upstream emits it for every spec change it
// acts on, before the Scaling event, and tools (upstream's test_autoscaler.sh) wait for it.
func (r *FlinkDeploymentReconciler) scaleChanged(s *scope, desired *flinkv1beta1.FlinkDeploymentSpec) {
	r.Recorder.Event(s.dep, corev1.EventTypeNormal, reconciler.ReasonSpecChanged, jobs.SpecChangeMessage(jobs.ChangeScale, "FlinkDeploymentSpec", s.Deployed, desired))
}
