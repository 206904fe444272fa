// Package metrics holds the operator's Prometheus metrics. Resource counts and per-resource
// series are computed from the informer cache at scrape time, so a deleted resource leaves no
// series behind: counts are bounded by namespaces × fixed label values, per-resource series
// by one per resource present (perresource.go).
// Transition durations and Flink REST calls are recorded as they happen.
package metrics

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
)

const namespace = "flink_operator"

// Kinds as they appear in the kind label.
const (
	KindDeployment = "FlinkDeployment"
	KindSessionJob = "FlinkSessionJob"
	KindSnapshot   = "FlinkStateSnapshot"
)

var lifecycleStates = []flinkv1beta1.LifecycleState{
	flinkv1beta1.LifecycleCreated, flinkv1beta1.LifecycleSuspended, flinkv1beta1.LifecycleUpgrading,
	flinkv1beta1.LifecycleDeployed, flinkv1beta1.LifecycleStable, flinkv1beta1.LifecycleRollingBack,
	flinkv1beta1.LifecycleRolledBack, flinkv1beta1.LifecycleFailed, flinkv1beta1.LifecycleDeleting,
}

var jobManagerStates = []flinkv1beta1.JobManagerDeploymentStatus{
	flinkv1beta1.JobManagerMissing, flinkv1beta1.JobManagerDeploying, flinkv1beta1.JobManagerDeployedNotReady,
	flinkv1beta1.JobManagerReady, flinkv1beta1.JobManagerError,
}

var snapshotStates = []flinkv1beta1.SnapshotState{
	flinkv1beta1.SnapshotTriggerPending, flinkv1beta1.SnapshotInProgress, flinkv1beta1.SnapshotCompleted,
	flinkv1beta1.SnapshotFailed, flinkv1beta1.SnapshotAbandoned,
}

var (
	resourcesDesc = prometheus.NewDesc(namespace+"_resources", "Custom resources by namespace and kind.",
		[]string{"namespace", "kind"}, nil)
	lifecycleDesc = prometheus.NewDesc(namespace+"_resources_lifecycle_state", "FlinkDeployments and FlinkSessionJobs by lifecycle state.",
		[]string{"namespace", "kind", "state"}, nil)
	jobManagerDesc = prometheus.NewDesc(namespace+"_jobmanager_deployment_status", "FlinkDeployments by JobManager deployment status.",
		[]string{"namespace", "status"}, nil)
	versionDesc = prometheus.NewDesc(namespace+"_flink_version", "FlinkDeployments by Flink version (spec.flinkVersion).",
		[]string{"namespace", "version"}, nil)
	snapshotDesc = prometheus.NewDesc(namespace+"_snapshots", "FlinkStateSnapshots by type and state.",
		[]string{"namespace", "type", "state"}, nil)
)

// ResourceCollector counts the operator's resources at scrape time from a cached reader.
type ResourceCollector struct {
	Reader client.Reader
	// Timeout bounds one scrape's cache reads.
	Timeout time.Duration
	// Elected, when set, is closed once this instance leads (manager.Elected()). Until then
	// nothing is reported: every replica's cache holds the same resources, and a standby
	// reporting them too would double every sum over instances and every alert.
	Elected <-chan struct{}
}

// Describe implements prometheus.Collector.
func (c *ResourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range append([]*prometheus.Desc{resourcesDesc, lifecycleDesc, jobManagerDesc, versionDesc, snapshotDesc}, perResourceDescs...) {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *ResourceCollector) Collect(ch chan<- prometheus.Metric) {
	if c.Elected != nil {
		select {
		case <-c.Elected:
		default:
			return
		}
	}
	timeout := c.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	rc := newResourceCounts()
	var deps flinkv1beta1.FlinkDeploymentList
	if err := c.Reader.List(ctx, &deps); err == nil {
		for _, d := range deps.Items {
			rc.addDeployment(d)
		}
	}
	var jobs flinkv1beta1.FlinkSessionJobList
	if err := c.Reader.List(ctx, &jobs); err == nil {
		for _, j := range jobs.Items {
			rc.addSessionJob(j)
		}
	}
	var snaps flinkv1beta1.FlinkStateSnapshotList
	if err := c.Reader.List(ctx, &snaps); err == nil {
		for _, s := range snaps.Items {
			rc.addSnapshot(s)
		}
	}

	collectPerResource(ch, deps.Items, jobs.Items, snaps.Items)
	rc.collect(ch)
}

type nsKind struct{ ns, kind string }

// resourceCounts are one scrape's counts of the operator's resources, by namespace and kind,
// lifecycle state, JobManager deployment status, Flink version and snapshot state.
type resourceCounts struct {
	counts    map[nsKind]int
	lifecycle map[nsKind]map[flinkv1beta1.LifecycleState]int
	jm        map[string]map[flinkv1beta1.JobManagerDeploymentStatus]int
	versions  map[[2]string]int
	snapshots map[[3]string]int
}

func newResourceCounts() *resourceCounts {
	return &resourceCounts{
		counts:    map[nsKind]int{},
		lifecycle: map[nsKind]map[flinkv1beta1.LifecycleState]int{},
		jm:        map[string]map[flinkv1beta1.JobManagerDeploymentStatus]int{},
		versions:  map[[2]string]int{},
		snapshots: map[[3]string]int{},
	}
}

// addLifecycle counts a resource in its lifecycle state; one not yet given a state is CREATED.
func (rc *resourceCounts) addLifecycle(k nsKind, s flinkv1beta1.LifecycleState) {
	if rc.lifecycle[k] == nil {
		rc.lifecycle[k] = map[flinkv1beta1.LifecycleState]int{}
	}
	if s == "" {
		s = flinkv1beta1.LifecycleCreated
	}
	rc.lifecycle[k][s]++
}

// addDeployment counts a FlinkDeployment; one whose JobManager status is not yet set is MISSING.
func (rc *resourceCounts) addDeployment(d flinkv1beta1.FlinkDeployment) {
	k := nsKind{d.Namespace, KindDeployment}
	rc.counts[k]++
	rc.addLifecycle(k, d.Status.LifecycleState)
	if rc.jm[d.Namespace] == nil {
		rc.jm[d.Namespace] = map[flinkv1beta1.JobManagerDeploymentStatus]int{}
	}
	status := d.Status.JobManagerDeploymentStatus
	if status == "" {
		status = flinkv1beta1.JobManagerMissing
	}
	rc.jm[d.Namespace][status]++
	if d.Spec.FlinkVersion != "" {
		rc.versions[[2]string{d.Namespace, string(d.Spec.FlinkVersion)}]++
	}
}

func (rc *resourceCounts) addSessionJob(j flinkv1beta1.FlinkSessionJob) {
	k := nsKind{j.Namespace, KindSessionJob}
	rc.counts[k]++
	rc.addLifecycle(k, j.Status.LifecycleState)
}

// addSnapshot counts a FlinkStateSnapshot by kind and state; one without a state is
// TRIGGER_PENDING.
func (rc *resourceCounts) addSnapshot(s flinkv1beta1.FlinkStateSnapshot) {
	rc.counts[nsKind{s.Namespace, KindSnapshot}]++
	kind := "savepoint"
	if s.Spec.Checkpoint != nil {
		kind = "checkpoint"
	}
	state := s.Status.State
	if state == "" {
		state = flinkv1beta1.SnapshotTriggerPending
	}
	rc.snapshots[[3]string{s.Namespace, kind, string(state)}]++
}

// collect sends the counts as metrics.
func (rc *resourceCounts) collect(ch chan<- prometheus.Metric) {
	for k, n := range rc.counts {
		ch <- prometheus.MustNewConstMetric(resourcesDesc, prometheus.GaugeValue, float64(n), k.ns, k.kind)
	}
	// Every state of a namespace and kind that has resources is reported, zeros included, so
	// a state that empties shows 0 rather than a gap.
	for k, byState := range rc.lifecycle {
		for _, s := range lifecycleStates {
			ch <- prometheus.MustNewConstMetric(lifecycleDesc, prometheus.GaugeValue, float64(byState[s]), k.ns, k.kind, string(s))
		}
	}
	for ns, byStatus := range rc.jm {
		for _, s := range jobManagerStates {
			ch <- prometheus.MustNewConstMetric(jobManagerDesc, prometheus.GaugeValue, float64(byStatus[s]), ns, string(s))
		}
	}
	for k, n := range rc.versions {
		ch <- prometheus.MustNewConstMetric(versionDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
	rc.collectSnapshots(ch)
}

// collectSnapshots sends every snapshot kind and state of a namespace that has snapshots, zeros
// included.
func (rc *resourceCounts) collectSnapshots(ch chan<- prometheus.Metric) {
	snapNS := map[string]bool{}
	for k := range rc.snapshots {
		snapNS[k[0]] = true
	}
	for ns := range snapNS {
		for _, kind := range []string{"savepoint", "checkpoint"} {
			for _, s := range snapshotStates {
				ch <- prometheus.MustNewConstMetric(snapshotDesc, prometheus.GaugeValue, float64(rc.snapshots[[3]string{ns, kind, string(s)}]), ns, kind, string(s))
			}
		}
	}
}

// Transitions are the lifecycle transitions whose durations are recorded, as upstream's
// Lifecycle.Transition.* metrics.
const (
	TransitionSubmission    = "Submission"
	TransitionUpgrade       = "Upgrade"
	TransitionStabilization = "Stabilization"
	TransitionSuspend       = "Suspend"
	TransitionResume        = "Resume"
	TransitionRollback      = "Rollback"
)

// LifecycleTracker records how long lifecycle transitions take. It remembers, per resource,
// when it entered its current state; Forget drops a deleted resource.
type LifecycleTracker struct {
	histogram *prometheus.HistogramVec
	mu        sync.Mutex
	seen      map[types.UID]tracked
	now       func() time.Time
}

type tracked struct {
	state flinkv1beta1.LifecycleState
	since time.Time
	// start of a multi-step transition (an upgrade or resume that passes through UPGRADING).
	from      flinkv1beta1.LifecycleState
	fromSince time.Time
}

// NewLifecycleTracker creates the tracker and its histogram.
func NewLifecycleTracker() *LifecycleTracker {
	return &LifecycleTracker{
		histogram: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "lifecycle_transition_seconds",
			Help:    "Duration of lifecycle transitions (Submission, Upgrade, Stabilization, Suspend, Resume, Rollback).",
			Buckets: []float64{1, 5, 10, 20, 30, 60, 120, 300, 600, 1800},
		}, []string{"namespace", "kind", "transition"}),
		seen: map[types.UID]tracked{},
		now:  time.Now,
	}
}

// Collector is the histogram to register.
func (t *LifecycleTracker) Collector() prometheus.Collector { return t.histogram }

// Observe records that a resource is in state now, and observes the transition it completes.
func (t *LifecycleTracker) Observe(uid types.UID, ns, kind string, state flinkv1beta1.LifecycleState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	prev, ok := t.seen[uid]
	if !ok {
		t.seen[uid] = tracked{state: state, since: now, from: state, fromSince: now}
		return
	}
	if prev.state == state {
		return
	}
	next := tracked{state: state, since: now, from: prev.from, fromSince: prev.fromSince}
	observe := func(name string, start time.Time) {
		t.histogram.WithLabelValues(ns, kind, name).Observe(now.Sub(start).Seconds())
	}
	switch {
	case prev.state == flinkv1beta1.LifecycleCreated && state == flinkv1beta1.LifecycleDeployed:
		observe(TransitionSubmission, prev.since)
	case prev.state == flinkv1beta1.LifecycleDeployed && state == flinkv1beta1.LifecycleStable:
		observe(TransitionStabilization, prev.since)
	case state == flinkv1beta1.LifecycleSuspended:
		observe(TransitionSuspend, prev.since)
	case prev.state == flinkv1beta1.LifecycleRollingBack && state == flinkv1beta1.LifecycleRolledBack:
		observe(TransitionRollback, prev.since)
	case prev.state == flinkv1beta1.LifecycleUpgrading && (state == flinkv1beta1.LifecycleDeployed || state == flinkv1beta1.LifecycleStable):
		if prev.from == flinkv1beta1.LifecycleSuspended {
			observe(TransitionResume, prev.fromSince)
		} else {
			observe(TransitionUpgrade, prev.since)
		}
	}
	if state == flinkv1beta1.LifecycleUpgrading {
		next.from, next.fromSince = prev.state, now
	}
	t.seen[uid] = next
}

// Forget drops a resource that is gone.
func (t *LifecycleTracker) Forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.seen, uid)
}

// RESTMetrics count Flink REST calls by endpoint and outcome, with their latency.
type RESTMetrics struct {
	calls   *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

// NewRESTMetrics creates the Flink REST call metrics.
func NewRESTMetrics() *RESTMetrics {
	return &RESTMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "flink_rest_requests_total",
			Help: "Flink REST calls by endpoint (route template) and outcome (HTTP status class, or error kind)."},
			[]string{"endpoint", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "flink_rest_request_duration_seconds",
			Help: "Latency of Flink REST calls by endpoint.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)},
			[]string{"endpoint"}),
	}
}

// Collectors are the metrics to register.
func (m *RESTMetrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.calls, m.latency}
}

// Observe records one call; it is the flink.Options.OnCall hook.
func (m *RESTMetrics) Observe(c flink.Call) {
	m.calls.WithLabelValues(c.Endpoint, outcome(c)).Inc()
	m.latency.WithLabelValues(c.Endpoint).Observe(c.Duration.Seconds())
}

func outcome(c flink.Call) string {
	switch {
	case c.StatusCode >= 100:
		return strconv.Itoa(c.StatusCode/100) + "xx"
	case c.Err != nil:
		var fe *flink.Error
		if errors.As(c.Err, &fe) {
			return strings.ToLower(string(fe.Kind))
		}
		return "error"
	}
	return "unknown"
}

// Register registers collectors, replacing collectors of the same metrics registered before
// (a manager rebuilt in the same process, as in tests), and returns the first error.
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for _, c := range cs {
		reg.Unregister(c)
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Operator is every metric the operator adds to controller-runtime's registry: one place, so
// that what is registered and what the shipped dashboards and alerts may use are the same set.
type Operator struct {
	Lifecycle *LifecycleTracker
	REST      *RESTMetrics
	Resources *ResourceCollector
	// Autoscaler is the job autoscaler's scalings, errors and per-vertex evaluations.
	Autoscaler *Autoscaler
}

// NewOperator creates the operator's metrics; resources are read from reader (the manager's
// cache) and reported once elected is closed (nil: always).
func NewOperator(reader client.Reader, elected <-chan struct{}) *Operator {
	return &Operator{Lifecycle: NewLifecycleTracker(), REST: NewRESTMetrics(),
		Resources: &ResourceCollector{Reader: reader, Elected: elected}, Autoscaler: NewAutoscaler()}
}

// Collectors are the metrics to register.
func (o *Operator) Collectors() []prometheus.Collector {
	return append(append(o.REST.Collectors(), o.Lifecycle.Collector(), o.Resources, ConfigMissing), o.Autoscaler.Collectors()...)
}

// ConfigMissing is flink_operator_config_missing: 1 while the operator ConfigMap the operator
// reads (--config-map) does not exist, so the operator runs on the configuration it last loaded
// from it (lost at the next restart) or, since its start, on the defaults: either way the
// administrator's policy (pod security level, Ingress allowlists, validators) may not be the
// one in the cluster's manifests. One per process: the configuration watcher outlives the
// managers an in-process restart replaces, each of which registers it (Collectors).
var ConfigMissing = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "config_missing",
	Help: "1 while the operator ConfigMap (--config-map) does not exist: the last configuration loaded from it (or the defaults) is in force."})
