package controllers

import (
	"context"
	"time"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/shard"
)

// snapshots takes manual (nonce) and periodic savepoints and checkpoints of a running job: as
// FlinkStateSnapshot resources (the default, snapshotresources.go), or in upstream's legacy
// status-field mode (status.jobStatus.savepointInfo / checkpointInfo, legacysnapshots.go) when
// kubernetes.operator.snapshot.resource.enabled is false. It returns a requeue when a snapshot
// is in flight.
func (r *FlinkDeploymentReconciler) snapshots(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, conf flinkconf.Config) (time.Duration, error) {
	st := s.status()
	if desired.Job == nil || !jobRunning(st) || st.JobManagerDeploymentStatus != flinkv1beta1.JobManagerReady {
		return 0, nil
	}
	if snapshotResourcesEnabled(conf) {
		return 0, requestSnapshots(ctx, r.Client, r.Recorder, r.jobSnapshots(ctx, s, desired, conf), time.Now())
	}
	inFlight, err := r.legacySnapshots(s, desired, conf).run(ctx)
	if inFlight {
		return r.Intervals.ProgressCheck, err
	}
	return 0, err
}

// legacySnapshots is the deployment's job for legacy-mode snapshots (legacysnapshots.go).
func (r *FlinkDeploymentReconciler) legacySnapshots(s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, conf flinkconf.Config) *legacySnapshots {
	return &legacySnapshots{owner: s.dep, status: &s.status().CommonStatus,
		deployed: func() *flinkv1beta1.JobSpec { return s.deployed.Job }, desired: desired.Job,
		conf: conf, operatorConf: r.Defaults.Operator, minPeriodic: MinPeriodicInterval(r.Intervals), recorder: r.Recorder,
		flink:        func(ctx context.Context) (*flink.Client, error) { return r.restClient(ctx, s) },
		recordNonces: func() error { return s.recordNonces(desired) },
		persist:      func(ctx context.Context) error { return r.persist(ctx, s) }}
}

// jobSnapshots describes the deployment's job for snapshot resources.
func (r *FlinkDeploymentReconciler) jobSnapshots(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, conf flinkconf.Config) jobSnapshots {
	j := jobSnapshots{owner: s.dep, kind: flinkv1beta1.JobKindFlinkDeployment, deployed: s.deployed.Job, desired: desired.Job,
		status: &s.status().JobStatus, conf: conf, operatorConf: r.Defaults.Operator, minPeriodic: MinPeriodicInterval(r.Intervals),
		shardLabels:  shard.Labels(r.Shard, s.dep.Labels),
		recordNonces: func() error { return s.recordNonces(desired) },
		persist:      func() error { return r.persist(ctx, s) }}
	if j.deployed == nil {
		j.deployed = &flinkv1beta1.JobSpec{}
	}
	if j.desired == nil {
		j.desired = &flinkv1beta1.JobSpec{}
	}
	return j
}

// recordNonces stores the trigger nonces of desired in the last reconciled spec (jobRecord.recordNonces).
func (s *scope) recordNonces(desired *flinkv1beta1.FlinkDeploymentSpec) error {
	return s.jobRecord.recordNonces(&s.dep.Status.CommonStatus, s.dep.Generation, desired)
}

// awaitPendingSavepoint says whether a spec change waits for a manual or periodic savepoint in
// flight (legacy snapshot mode; legacySnapshots.awaitPending).
func (r *FlinkDeploymentReconciler) awaitPendingSavepoint(ctx context.Context, s *scope, desired *flinkv1beta1.FlinkDeploymentSpec, conf flinkconf.Config) (bool, error) {
	if snapshotResourcesEnabled(conf) || desired.Job == nil {
		return false, nil
	}
	st := s.status()
	return r.legacySnapshots(s, desired, conf).awaitPending(ctx, jobRunning(st) && st.JobManagerDeploymentStatus == flinkv1beta1.JobManagerReady)
}
