package metrics

import (
	"encoding/json"

	"github.com/prometheus/client_golang/prometheus"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// Per-resource series answer "which job": each has at most one series per resource (or per
// pending snapshot) present in the cache at scrape time, so a deleted resource leaves nothing
// behind and a state change replaces the series instead of adding one. Labels are the
// resource's namespace, kind and name and fixed-set values; never a job id or a timestamp
// (times are values).
var (
	resourceLifecycleDesc = prometheus.NewDesc(namespace+"_resource_lifecycle",
		"1 for each FlinkDeployment and FlinkSessionJob, labelled with its current lifecycle state.",
		[]string{"namespace", "kind", "name", "state"}, nil)
	jobStatusDesc = prometheus.NewDesc(namespace+"_job_status",
		"1 for each FlinkDeployment (application) and FlinkSessionJob whose job state is known, labelled with that state (status.jobStatus.state).",
		[]string{"namespace", "kind", "name", "state"}, nil)
	jobHealthyDesc = prometheus.NewDesc(namespace+"_job_healthy",
		"1 if the cluster health check (kubernetes.operator.cluster.health-check.enabled) last found the job healthy, 0 if not (too many restarts or no checkpoint progress); absent when the check is off.",
		[]string{"namespace", "kind", "name"}, nil)
	lastSavepointDesc = prometheus.NewDesc(namespace+"_last_savepoint_timestamp_seconds",
		"When the resource's newest completed savepoint was taken (COMPLETED FlinkStateSnapshots referencing it, or the legacy status.jobStatus.savepointInfo), as a Unix time.",
		[]string{"namespace", "kind", "name"}, nil)
	lastCheckpointDesc = prometheus.NewDesc(namespace+"_last_checkpoint_timestamp_seconds",
		"When the resource's newest completed checkpoint was seen (COMPLETED checkpoint FlinkStateSnapshots, the legacy status.jobStatus.checkpointInfo, or the health check seeing the completed-checkpoint count grow), as a Unix time.",
		[]string{"namespace", "kind", "name"}, nil)
	snapshotPendingDesc = prometheus.NewDesc(namespace+"_snapshot_pending_since_timestamp_seconds",
		"For each savepoint or checkpoint not yet finished (TRIGGER_PENDING or IN_PROGRESS FlinkStateSnapshots, or a legacy trigger in status), when it was asked for, as a Unix time; kind and name are the job's resource, snapshot the FlinkStateSnapshot (empty for a legacy trigger).",
		[]string{"namespace", "kind", "name", "type", "snapshot"}, nil)
)

var perResourceDescs = []*prometheus.Desc{resourceLifecycleDesc, jobStatusDesc, jobHealthyDesc, lastSavepointDesc, lastCheckpointDesc, snapshotPendingDesc}

// healthInfoKey is the status.clusterInfo entry where the health check keeps its record
// (written by the FlinkDeployment controller, upstream's key).
const healthInfoKey = "cluster-health-info"

// healthInfo is the part of the health record the metrics read.
type healthInfo struct {
	CompletedCheckpoints      int64 `json:"numCompletedCheckpoints"`
	CheckpointsIncreasedSince int64 `json:"numCompletedCheckpointsIncreasedTimeStamp"`
	Healthy                   bool  `json:"healthy"`
}

type resourceKey struct{ ns, kind, name string }

// lastTimes holds the newest completion time (epoch ms) of savepoints and checkpoints per resource.
type lastTimes struct{ savepoint, checkpoint int64 }

func collectPerResource(ch chan<- prometheus.Metric, deps []flinkv1beta1.FlinkDeployment, jobs []flinkv1beta1.FlinkSessionJob, snaps []flinkv1beta1.FlinkStateSnapshot) {
	last := map[resourceKey]*lastTimes{}
	for i := range deps {
		d := &deps[i]
		k := resourceKey{d.Namespace, KindDeployment, d.Name}
		last[k] = collectCommon(ch, k, &d.Status.CommonStatus, d.Spec.Job != nil)
		collectHealth(ch, k, d.Status.ClusterInfo, last[k])
	}
	for i := range jobs {
		j := &jobs[i]
		k := resourceKey{j.Namespace, KindSessionJob, j.Name}
		last[k] = collectCommon(ch, k, &j.Status.CommonStatus, true)
	}
	for i := range snaps {
		collectSnapshot(ch, &snaps[i], last)
	}
	for k, t := range last {
		if t.savepoint > 0 {
			ch <- prometheus.MustNewConstMetric(lastSavepointDesc, prometheus.GaugeValue, seconds(t.savepoint), k.ns, k.kind, k.name)
		}
		if t.checkpoint > 0 {
			ch <- prometheus.MustNewConstMetric(lastCheckpointDesc, prometheus.GaugeValue, seconds(t.checkpoint), k.ns, k.kind, k.name)
		}
	}
}

// collectCommon sends a resource's lifecycle and job state and its legacy pending triggers
// (status.jobStatus.savepointInfo and checkpointInfo), and returns its legacy last snapshot
// times.
func collectCommon(ch chan<- prometheus.Metric, k resourceKey, st *flinkv1beta1.CommonStatus, hasJob bool) *lastTimes {
	state := st.LifecycleState
	if state == "" {
		state = flinkv1beta1.LifecycleCreated
	}
	ch <- prometheus.MustNewConstMetric(resourceLifecycleDesc, prometheus.GaugeValue, 1, k.ns, k.kind, k.name, string(state))
	if hasJob && st.JobStatus.State != "" {
		ch <- prometheus.MustNewConstMetric(jobStatusDesc, prometheus.GaugeValue, 1, k.ns, k.kind, k.name, string(st.JobStatus.State))
	}
	t := &lastTimes{}
	if sp := st.JobStatus.SavepointInfo; sp != nil {
		if sp.LastSavepoint != nil {
			t.savepoint = sp.LastSavepoint.TimeStamp
		}
		if sp.TriggerID != "" && sp.TriggerTimestamp != nil {
			ch <- prometheus.MustNewConstMetric(snapshotPendingDesc, prometheus.GaugeValue, seconds(*sp.TriggerTimestamp), k.ns, k.kind, k.name, "savepoint", "")
		}
	}
	if cp := st.JobStatus.CheckpointInfo; cp != nil {
		if cp.LastCheckpoint != nil {
			t.checkpoint = cp.LastCheckpoint.TimeStamp
		}
		if cp.TriggerID != "" && cp.TriggerTimestamp != nil {
			ch <- prometheus.MustNewConstMetric(snapshotPendingDesc, prometheus.GaugeValue, seconds(*cp.TriggerTimestamp), k.ns, k.kind, k.name, "checkpoint", "")
		}
	}
	return t
}

// collectHealth sends a FlinkDeployment's health-check verdict from its status.clusterInfo, and
// counts the check's last seen checkpoint progress into t.
func collectHealth(ch chan<- prometheus.Metric, k resourceKey, clusterInfo map[string]string, t *lastTimes) {
	raw, ok := clusterInfo[healthInfoKey]
	if !ok {
		return
	}
	var h healthInfo
	// A record this version cannot read says nothing; the other series still go out.
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(jobHealthyDesc, prometheus.GaugeValue, boolValue(h.Healthy), k.ns, k.kind, k.name)
	if h.CompletedCheckpoints > 0 {
		t.checkpoint = max(t.checkpoint, h.CheckpointsIncreasedSince)
	}
}

// collectSnapshot counts a completed FlinkStateSnapshot into its job resource's last times, or
// sends a pending one; a snapshot whose resource is not in last is left out.
func collectSnapshot(ch chan<- prometheus.Metric, s *flinkv1beta1.FlinkStateSnapshot, last map[resourceKey]*lastTimes) {
	ref := s.Spec.JobReference
	if ref == nil || ref.Name == "" {
		return
	}
	k := resourceKey{s.Namespace, string(ref.Kind), ref.Name}
	t, ok := last[k]
	if !ok {
		return // the job's resource is gone (or not this instance's): no series for it
	}
	typ := "savepoint"
	if s.Spec.Checkpoint != nil {
		typ = "checkpoint"
	}
	switch s.Status.State {
	case flinkv1beta1.SnapshotCompleted:
		completed, err := flinkv1beta1.ParseSnapshotTime(s.Status.ResultTimestamp)
		if err != nil {
			return
		}
		at := completed.UnixMilli()
		if typ == "checkpoint" {
			t.checkpoint = max(t.checkpoint, at)
		} else {
			t.savepoint = max(t.savepoint, at)
		}
	case "", flinkv1beta1.SnapshotTriggerPending, flinkv1beta1.SnapshotInProgress:
		// Asked for when the resource was created: the trigger time is reset by retries.
		ch <- prometheus.MustNewConstMetric(snapshotPendingDesc, prometheus.GaugeValue,
			float64(s.CreationTimestamp.Unix()), k.ns, k.kind, k.name, typ, s.Name)
	}
}

func seconds(epochMillis int64) float64 { return float64(epochMillis) / 1000 }

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
