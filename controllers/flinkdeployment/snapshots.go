package flinkdeployment

import (
	"context"
	"time"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/shard"
)

// snapshots takes manual (nonce) and periodic savepoints and checkpoints of a running job: as
// FlinkStateSnapshot resources (the default, jobs/snapshotresources.go), or in upstream's legacy
// status-field mode (status.jobStatus.savepointInfo / checkpointInfo, jobs/legacysnapshots.go) when
// kubernetes.operator.snapshot.resource.enabled is false. It returns a requeue when a snapshot
// is in flight.
func (r *FlinkDeploymentReconciler) snapshots(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, conf flinkconf.Config) (time.Duration, error) {
	st := s.status()
	if desired.Job == nil || !jobRunning(st) || st.JobManagerDeploymentStatus != flinkv1beta1.JobManagerReady {
		return 0, nil
	}
	if jobs.SnapshotResourcesEnabled(conf) {
		return 0, jobs.RequestSnapshots(ctx, r.Client, r.Recorder, r.jobSnapshots(ctx, s, desired, conf), time.Now())
	}
	inFlight, err := r.legacySnapshots(s, desired, conf).Run(ctx)
	if inFlight {
		return r.Intervals.ProgressCheck, err
	}
	return 0, err
}

// legacySnapshots is the deployment's job for legacy-mode snapshots (jobs/legacysnapshots.go).
func (r *FlinkDeploymentReconciler) legacySnapshots(s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, conf flinkconf.Config) *jobs.LegacySnapshots {
	return &jobs.LegacySnapshots{Owner: s.dep, Status: &s.status().CommonStatus,
		Deployed: func() *flinkv1beta1.JobSpec { return s.Deployed.Job }, Desired: desired.Job,
		Conf: conf, OperatorConf: r.Defaults.Operator, MinPeriodic: jobs.MinPeriodicInterval(r.Intervals), Recorder: r.Recorder,
		Flink:        func(ctx context.Context) (*flink.Client, error) { return r.RestClient(ctx, s) },
		RecordNonces: func() error { return s.recordNonces(desired) },
		Persist:      func(ctx context.Context) error { return r.persist(ctx, s) }}
}

// jobSnapshots describes the deployment's job for snapshot resources.
func (r *FlinkDeploymentReconciler) jobSnapshots(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, conf flinkconf.Config) jobs.JobSnapshots {
	j := jobs.JobSnapshots{Owner: s.dep, Kind: flinkv1beta1.JobKindFlinkDeployment, Deployed: s.Deployed.Job, Desired: desired.Job,
		Status: &s.status().JobStatus, Conf: conf, OperatorConf: r.Defaults.Operator, MinPeriodic: jobs.MinPeriodicInterval(r.Intervals),
		ShardLabels:  shard.Labels(r.Shard, s.dep.Labels),
		RecordNonces: func() error { return s.recordNonces(desired) },
		Persist:      func() error { return r.persist(ctx, s) }}
	if j.Deployed == nil {
		j.Deployed = &flinkv1beta1.JobSpec{}
	}
	if j.Desired == nil {
		j.Desired = &flinkv1beta1.JobSpec{}
	}
	return j
}

// recordNonces stores the trigger nonces of desired in the last reconciled spec (jobRecord.recordNonces).
func (s *scope) recordNonces(desired *flinkv1beta1.FlinkDeploymentSpec) error {
	return s.RecordNonces(&s.dep.Status.CommonStatus, s.dep.Generation, desired)
}

// awaitPendingSavepoint says whether a spec change waits for a manual or periodic savepoint in
// flight (legacy snapshot mode; legacySnapshots.awaitPending).
func (r *FlinkDeploymentReconciler) awaitPendingSavepoint(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, conf flinkconf.Config) (bool, error) {
	if jobs.SnapshotResourcesEnabled(conf) || desired.Job == nil {
		return false, nil
	}
	st := s.status()
	return r.legacySnapshots(s, desired, conf).AwaitPending(ctx, jobRunning(st) && st.JobManagerDeploymentStatus == flinkv1beta1.JobManagerReady)
}
