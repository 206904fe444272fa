package jobs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flink-operator/flink-operator/pkg/autoscaler"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/metrics"
)

// Event reasons of the job autoscaler (upstream's).
const (
	// ReasonScalingReport reports one autoscaler decision (applied or recommended).
	ReasonScalingReport = autoscaler.ReasonScalingReport
	// ReasonAutoscalerError reports a failed collection, evaluation or state write.
	ReasonAutoscalerError = "AutoscalerError"
)

// Autoscaling is what the job autoscaler (job.autoscaler.enabled) needs besides the
// reconciler's client and recorder. The zero value works: Flink's REST metrics, the wall clock,
// no operator metrics.
type Autoscaling struct {
	// Metrics, when set, counts scalings and errors and keeps per-vertex evaluations.
	Metrics *metrics.Autoscaler
	// Source reads a job's topology and metrics through its JobManager's REST client
	// (defaultMetricsSource when nil).
	Source func(*flink.Client) autoscaler.MetricsSource
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// StateLimits bound what reading an autoscaler-<name> ConfigMap may cost: its content is
	// written by whoever may edit ConfigMaps in the namespace. Zero bounds are
	// autoscaler.DefaultLimits.
	StateLimits autoscaler.Limits
}

func (a *Autoscaling) stateLimits() autoscaler.Limits {
	if a == nil {
		return autoscaler.Limits{}
	}
	return a.StateLimits
}

func (a *Autoscaling) now() time.Time {
	if a == nil || a.Now == nil {
		return time.Now()
	}
	return a.Now()
}

func (a *Autoscaling) source(c *flink.Client) autoscaler.MetricsSource {
	if a == nil || a.Source == nil {
		return defaultMetricsSource(c)
	}
	return a.Source(c)
}

func (a *Autoscaling) AutoscalerMetrics() *metrics.Autoscaler {
	if a == nil {
		return nil
	}
	return a.Metrics
}

// AutoscaleInput is one resource's view for one reconcile.
type AutoscaleInput struct {
	Owner client.Object
	Kind  string
	// Conf is the resource's Flink configuration as the user wrote it (job.autoscaler.* and
	// the user's own parallelism overrides).
	Conf map[string]string
	// DeployedOverrides are the overrides of the last reconciled spec: on adoption, those the
	// Apache operator's autoscaler injected, when its ConfigMap is gone.
	DeployedOverrides string
	// Reset: spec.job.autoscalerResetNonce differs from the one last reconciled.
	Reset bool
	// Evaluate: the job runs as reconciled, so its metrics mean something (collect and decide).
	Evaluate bool
	JobID    string
	// JobStart is when the job last started running (stabilization starts there).
	JobStart time.Time
	Rest     func(context.Context) (*flink.Client, error)
}

// autoscaleOutcome is what the reconcile does with the autoscaler's state.
type autoscaleOutcome struct {
	// Overrides are the pipeline.jobvertex-parallelism-overrides the job should run with (the
	// user's, with the autoscaler's on top); "" when the autoscaler has none.
	Overrides string
	// scaled: this evaluation changed the overrides.
	scaled bool
	// decision is this evaluation's decision explained, when it applied, recommended or held
	// back a change (status.scaling, through Scaling).
	decision *autoscaler.Decision
	// clearScaling: the autoscaler is off or its state was reset, so the recorded decision no
	// longer holds.
	clearScaling bool
}

// Autoscale is upstream's applyAutoscaler for one resource: the state is read from the
// autoscaler-<name> ConfigMap; a running job's metrics are collected and evaluated; a decision
// is reported (ScalingReport) and, unless recommend-only, its overrides are written to the
// ConfigMap before the caller applies them (write-ahead: a restarted operator finds them there
// and carries on). The overrides are only ever injected into the reconcile's in-memory spec.
//
// A failed collection is reported and leaves the overrides in force as they are: the job keeps
// its parallelism. An entry of the state that cannot be read (or is over the operator's budget)
// is reported and dropped alone, as upstream does; the stored overrides survive it. A ConfigMap
// of the state's name that the resource does not own pauses autoscaling (a Warning event each
// reconcile; the job keeps the overrides it runs with) and is never written; the rest of the
// reconcile goes on. A state that cannot be written fails the reconcile, since applying
// Overrides that are not stored would restart the job for nothing.
func (a *Autoscaling) Autoscale(ctx context.Context, c client.Client, rec record.EventRecorder, in AutoscaleInput) (autoscaleOutcome, error) {
	cfg, err := autoscaler.ParseConfig(in.Conf)
	if err != nil {
		// Validation reports bad options; nothing is scaled meanwhile.
		return autoscaleOutcome{}, nil //nolint:nilerr // reported by validation, not a reconcile failure
	}
	if !cfg.Enabled {
		return autoscaleOutcome{clearScaling: true}, nil
	}
	store := autoscalerStore{c: c, limits: a.stateLimits()}
	ld, err := store.load(ctx, in.Owner)
	if errors.Is(err, errForeignState) {
		a.AutoscalerMetrics().Error(in.Owner.GetNamespace(), in.Kind, in.Owner.GetName())
		rec.Event(in.Owner, corev1.EventTypeWarning, ReasonAutoscalerError,
			fmt.Sprintf("Autoscaling paused: %v; the autoscaler neither reads nor writes it. Delete or rename it to resume autoscaling.", err))
		// Paused, the job keeps the autoscaler's overrides it runs with; the user's own, as the
		// spec has them now, take precedence (nothing is deciding over them meanwhile).
		running := autoscalerPart(in)
		user, _ := autoscaler.ParseOverrides(in.Conf[KeyParallelismOverrides])
		for v := range user {
			delete(running, v)
		}
		return autoscaleOutcome{Overrides: mergeOverrides(in.Conf[KeyParallelismOverrides], running, cfg.ExcludedVertices)}, nil
	}
	if err != nil {
		return autoscaleOutcome{}, err
	}
	state, found := ld.state, ld.found
	dirty := false
	if ld.unreadable != nil {
		// Rewritten without the entries it could not read, as upstream removes them.
		dirty = true
		a.AutoscalerMetrics().Error(in.Owner.GetNamespace(), in.Kind, in.Owner.GetName())
		rec.Event(in.Owner, corev1.EventTypeWarning, ReasonAutoscalerError, "Autoscaler state entries dropped: "+ld.unreadable.Error())
		log.FromContext(ctx).Info("autoscaler: state entries dropped", "error", ld.unreadable.Error())
	}
	var out autoscaleOutcome
	switch {
	case in.Reset:
		out.clearScaling = true
		// autoscalerResetNonce: collected metrics, history and overrides go; the job returns to
		// the spec's parallelism. An empty state is stored, not the ConfigMap deleted, so the
		// Overrides still in the last reconciled spec are not taken for an adopted state below.
		state, dirty = autoscaler.State{}, true
		rec.Event(in.Owner, corev1.EventTypeNormal, ReasonScalingReport, "Autoscaler state reset (autoscalerResetNonce)")
	case !found && in.DeployedOverrides != "":
		// Adopted from the Apache operator without its ConfigMap: what runs is what its
		// autoscaler decided; continue from there instead of restarting the job at the spec's
		// parallelism.
		if adopted := autoscalerPart(in); len(adopted) > 0 {
			state.Overrides, dirty = adopted, true
		}
	}
	if in.JobStart.After(state.JobStart) {
		state, dirty = state.WithJobStart(in.JobStart), true
	}
	if in.Evaluate && !in.Reset {
		var evalErr error
		var evaluated autoscaler.State
		evaluated, out.scaled, out.decision, evalErr = a.evaluate(ctx, rec, in, cfg, state)
		if evalErr == nil {
			state, dirty = evaluated, true // the new sample at least
		} else {
			a.AutoscalerMetrics().Error(in.Owner.GetNamespace(), in.Kind, in.Owner.GetName())
			rec.Event(in.Owner, corev1.EventTypeWarning, ReasonAutoscalerError, evalErr.Error())
			log.FromContext(ctx).Info("autoscaler: no evaluation this time", "error", evalErr.Error())
		}
	}
	if dirty {
		if err := store.save(ctx, in.Owner, state); err != nil {
			return autoscaleOutcome{}, err
		}
	}
	out.Overrides = mergeOverrides(in.Conf[KeyParallelismOverrides], state.Overrides, cfg.ExcludedVertices)
	return out, nil
}

// autoscalerPart is the part of the overrides the job runs with (the last reconciled spec's) that
// the user did not write: the autoscaler's, here or in the Apache operator.
func autoscalerPart(in AutoscaleInput) map[autoscaler.VertexID]int {
	running, err := autoscaler.ParseOverrides(in.DeployedOverrides)
	if err != nil {
		return nil
	}
	user, _ := autoscaler.ParseOverrides(in.Conf[KeyParallelismOverrides])
	for v, p := range running {
		if user[v] == p {
			delete(running, v) // the user's own override, not the autoscaler's
		}
	}
	return running
}

// Evaluate collects one sample and evaluates the window. It returns the new state, whether the
// overrides changed, and the decision explained (nil when nothing was decided).
func (a *Autoscaling) evaluate(ctx context.Context, rec record.EventRecorder, in AutoscaleInput, cfg autoscaler.Config, state autoscaler.State) (autoscaler.State, bool, *autoscaler.Decision, error) {
	cl, err := in.Rest(ctx)
	if err != nil {
		return state, false, nil, fmt.Errorf("autoscaler: REST client: %w", err)
	}
	src := a.source(cl)
	topology, err := src.Topology(ctx, in.JobID)
	if err != nil {
		return state, false, nil, fmt.Errorf("autoscaler: job topology: %w", err)
	}
	sample, err := src.Sample(ctx, in.JobID, topology)
	if err != nil {
		return state, false, nil, fmt.Errorf("autoscaler: job metrics: %w", err)
	}
	// Stabilization restarts whenever the job switches to RUNNING again (upstream's
	// ScalingMetricCollector.getJobRunningTs): after a failover the job id and start-time stay
	// the same, but recovery and catch-up must not enter the window.
	details, err := cl.JobDetails(ctx, in.JobID)
	if err != nil {
		return state, false, nil, fmt.Errorf("autoscaler: job details: %w", err)
	}
	if ts := details.Timestamps[flink.JobRunning]; ts > 0 {
		state = state.WithJobStart(time.UnixMilli(ts))
	}
	now := a.now()
	sample.Time = now // the reconciler's clock throughout, so stabilization and window agree
	state = autoscaler.Observe(now, sample, state, cfg)
	result := autoscaler.Evaluate(now, topology, state, cfg)
	state = result.State
	a.AutoscalerMetrics().Vertices(in.Owner.GetNamespace(), in.Kind, in.Owner.GetName(), vertexMetrics(result.Vertices))
	for _, w := range result.Warnings {
		rec.Event(in.Owner, corev1.EventTypeWarning, w.Reason, w.Message)
	}
	if result.Message != "" {
		reason := result.Reason
		if reason == "" {
			reason = ReasonScalingReport
		}
		rec.Event(in.Owner, corev1.EventTypeNormal, reason, result.Message)
	}
	if !result.Scaled || maps.Equal(result.Overrides, state.Overrides) {
		return state, false, result.Decision, nil
	}
	state.Overrides = maps.Clone(result.Overrides)
	// The rescale restarts the job (or its tasks in place): the next window starts after it.
	state.JobStart = now
	a.AutoscalerMetrics().Scaled(in.Owner.GetNamespace(), in.Kind, in.Owner.GetName())
	return state, true, result.Decision, nil
}

// mergeOverrides puts the autoscaler's overrides over the user's (upstream keeps the user's for
// vertices the autoscaler leaves alone or must not touch, job.autoscaler.vertex.exclude.ids).
func mergeOverrides(user string, auto map[autoscaler.VertexID]int, excluded []autoscaler.VertexID) string {
	if len(auto) == 0 {
		return ""
	}
	merged, err := autoscaler.ParseOverrides(user)
	if err != nil || merged == nil {
		merged = map[autoscaler.VertexID]int{}
	}
	for v, p := range auto {
		if !slices.Contains(excluded, v) {
			merged[v] = p
		}
	}
	return autoscaler.FormatOverrides(merged)
}

// vertexMetrics are the evaluated metrics to export, per vertex (bounded in pkg/metrics).
func vertexMetrics(summaries []autoscaler.VertexSummary) map[string]map[string]float64 {
	out := make(map[string]map[string]float64, len(summaries))
	for _, s := range summaries {
		m := maps.Clone(s.Metrics)
		if m == nil {
			m = map[string]float64{}
		}
		m["PARALLELISM"] = float64(s.Current)
		m["RECOMMENDED_PARALLELISM"] = float64(s.New)
		out[string(s.ID)] = m
	}
	return out
}

// EpochMillis parses the status's millisecond timestamps (jobStatus.startTime); zero when unset.
func EpochMillis(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
