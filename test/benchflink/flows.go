package benchflink

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/native"
)

// The flows, in the order each job goes through them.
const (
	FlowCreate           = "create → job RUNNING"
	FlowSavepointUpgrade = "savepoint upgrade (parallelism 1 → 2)"
	FlowLastStateUpgrade = "last-state upgrade, Kubernetes HA (parallelism 2 → 1)"
	FlowSuspend          = "suspend (savepoint) → JobManager gone"
	FlowResume           = "resume → job RUNNING"
)

// Clocks: every boundary below is a wall-clock time of this machine. The benchmark's own
// (time.Now before a request, or when it saw a Deployment gone), Flink's timestamps (its
// JobManager runs here, as a process of the node agent) and the JobManager process's start
// (/proc) are compared with each other directly.

// job is one FlinkDeployment going through the flows, and what the benchmark knows of it.
type job struct {
	b   *bench
	key client.ObjectKey
	run int
	// jm runs the job now; nil while it is suspended.
	jm    *jobManager
	jobID string
}

// flows runs every flow on the job in turn and records each one's sample.
func (j *job) flows(ctx context.Context, record func(flow string, s Sample)) error {
	steps := []struct {
		flow string
		do   func(context.Context) (Sample, error)
	}{
		{FlowCreate, j.create},
		{FlowSavepointUpgrade, func(ctx context.Context) (Sample, error) {
			return j.restart(ctx, stoppedWithSavepoint, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Parallelism = 2 })
		}},
		// With Kubernetes HA the operator deletes the JobManager with the job running and Flink
		// recovers the job from its HA metadata: Flink's own stop is usually 0 (a cancel, if the
		// operator made one, counts).
		{FlowLastStateUpgrade, func(ctx context.Context) (Sample, error) {
			return j.restart(ctx, maybeStopped, func(d *flinkv1beta1.FlinkDeployment) {
				d.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeLastState
				d.Spec.Job.Parallelism = 1
			})
		}},
		{FlowSuspend, j.suspend},
		{FlowResume, func(ctx context.Context) (Sample, error) {
			return j.restart(ctx, noOldJob, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.State = flinkv1beta1.JobStateRunning })
		}},
	}
	for _, step := range steps {
		s, err := step.do(ctx)
		if err != nil {
			return fmt.Errorf("%s, %s: %w", j.key, step.flow, err)
		}
		s.Run, s.Job = j.run, j.key.Name
		s.Spans = j.b.timeline.spans(j.key, s.start)
		record(step.flow, s)
		j.b.logf("run %d %s: %s: total %ss, Flink %ss, overhead %ss", j.run, j.key.Name, step.flow, s.Total, s.Flink, s.Overhead)
	}
	return nil
}

// create times a new FlinkDeployment: from the create request (sent right after t0) to the
// job's RUNNING timestamp on its JobManager. Flink's own part starts with the JobManager
// process (which then submits the job: its INITIALIZING timestamp is later); what comes before
// is the API server, the operator, and Kubernetes creating and starting the pod.
func (j *job) create(ctx context.Context) (Sample, error) {
	dep, err := j.b.deployment(j.key)
	if err != nil {
		return Sample{}, err
	}
	t0 := time.Now()
	if err := j.b.env.Client.Create(ctx, dep); err != nil {
		return Sample{}, fmt.Errorf("create: %w", err)
	}
	jm, err := j.b.newJobManager(ctx, j.key, "")
	if err != nil {
		return Sample{}, err
	}
	d, err := jm.jobRunning(ctx, "", t0)
	if err != nil {
		return Sample{}, err
	}
	j.b.noteVersion(ctx, jm)
	return j.started(ctx, t0, stopped{}, jm, d, false)
}

// oldJob says what a restart expects of the job it replaces.
type oldJob int

const (
	// stoppedWithSavepoint: Flink stopped it with a savepoint, which the sample must report.
	stoppedWithSavepoint oldJob = iota
	// maybeStopped: Flink may have stopped or cancelled it (last-state), or not touched it.
	maybeStopped
	// noOldJob: nothing ran (a resume).
	noOldJob
)

// restart times a change that replaces the running job (an upgrade, a resume): from the
// patch (sent right after t0) to the new job's RUNNING timestamp on the new JobManager. Flink's
// own part is its stop of the old job (stopped.flink, as oldJobStop reads it) and
// the new JobManager's process start to that RUNNING; the rest is the operator deciding,
// waiting for Flink and for Kubernetes, and Kubernetes deleting and creating the pods.
func (j *job) restart(ctx context.Context, old oldJob, change func(*flinkv1beta1.FlinkDeployment)) (Sample, error) {
	oldJM, oldID := j.jm, j.jobID
	var oldPod types.UID
	if oldJM != nil {
		oldPod = oldJM.pod
	}
	t0, err := j.patch(ctx, change)
	if err != nil {
		return Sample{}, err
	}
	jm, err := j.b.newJobManager(ctx, j.key, oldPod)
	if err != nil {
		return Sample{}, err
	}
	d, err := jm.jobRunning(ctx, "", t0)
	if err != nil {
		return Sample{}, err
	}
	stop := stopped{}
	if old != noOldJob {
		// Read after the new job runs: the old JobManager is gone, whatever it archived is there.
		if stop, err = j.b.oldJobStop(ctx, oldJM, oldID, t0, old == stoppedWithSavepoint); err != nil {
			return Sample{}, err
		}
		if old == stoppedWithSavepoint && stop.savepoint == nil {
			return Sample{}, fmt.Errorf("job %s stopped without a savepoint", oldID)
		}
	}
	s, err := j.started(ctx, t0, stop, jm, d, true)
	if err != nil {
		return s, err
	}
	return s, j.savepointPath(ctx, &s)
}

// suspend times a suspend with a savepoint: from the patch (sent right after t0) to the moment
// the benchmark saw the JobManager Deployment gone from the API server (it asks every
// pollEvery, so this end is late by up to that). Flink's own part is the stop with a
// savepoint, as oldJobStop reads it; the rest is the operator noticing the change
// and the stop's completion, and deleting the cluster.
func (j *job) suspend(ctx context.Context) (Sample, error) {
	t0, err := j.patch(ctx, func(d *flinkv1beta1.FlinkDeployment) {
		d.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeSavepoint
		d.Spec.Job.State = flinkv1beta1.JobStateSuspended
	})
	if err != nil {
		return Sample{}, err
	}
	name := client.ObjectKey{Namespace: j.key.Namespace, Name: native.JobManagerDeploymentName(j.key.Name)}
	err = poll(ctx, startTimeout, "JobManager Deployment gone", func() (bool, error) {
		err := j.b.env.Client.Get(ctx, name, &appsv1.Deployment{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	gone := time.Now()
	if err != nil {
		return Sample{}, err
	}
	// Resuming before the operator has recorded the suspend would change a flow in progress.
	if err := j.b.waitOperator(ctx, j.key, "SUSPENDED", func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.LifecycleState == flinkv1beta1.LifecycleSuspended
	}); err != nil {
		return Sample{}, err
	}
	stop, err := j.b.oldJobStop(ctx, j.jm, j.jobID, t0, true)
	if err != nil {
		return Sample{}, err
	}
	if stop.savepoint == nil {
		return Sample{}, fmt.Errorf("job %s suspended without a savepoint", j.jobID)
	}
	s := newSample(gone.Sub(t0), stop.flink, 0)
	s.start = t0
	s.JobID, s.Savepoint, s.StopSource = j.jobID, stop.savepoint.ExternalPath, stop.source
	j.jm = nil
	return s, j.savepointPath(ctx, &s)
}

// savepointPath fills in the path of a stop's savepoint that Flink logged but did not archive
// (oldJobStop): as the operator recorded it, from Flink's answer to its stop.
func (j *job) savepointPath(ctx context.Context, s *Sample) error {
	if s.StopSource != "log" {
		return nil
	}
	d := &flinkv1beta1.FlinkDeployment{}
	if err := j.b.env.Client.Get(ctx, j.key, d); err != nil {
		return fmt.Errorf("get: %w", err)
	}
	if sp := d.Status.JobStatus.SavepointInfo.LastSavepoint; sp != nil {
		s.Savepoint = sp.Location
	}
	return nil
}

// started makes the sample of a flow that ended with job d RUNNING on jm, t0 its start, and
// then, untimed, waits until the next flow can begin: the restore (when restored) as Flink
// reports it, all tasks running, a completed checkpoint, and the operator having seen the job
// RUNNING for the spec.
func (j *job) started(ctx context.Context, t0 time.Time, stop stopped, jm *jobManager, d *flink.JobDetails, restored bool) (Sample, error) {
	running := time.UnixMilli(d.Timestamps[flink.JobRunning])
	s := newSample(running.Sub(t0), stop.flink, running.Sub(jm.started))
	s.start = t0
	if init := d.Timestamps[flink.JobInitializing]; init > 0 {
		s.JobStart = Seconds(running.Sub(time.UnixMilli(init)))
	}
	s.JobID = d.ID
	if stop.savepoint != nil {
		s.Savepoint = stop.savepoint.ExternalPath
	}
	s.StopSource = stop.source
	j.jm, j.jobID = jm, d.ID
	if restored {
		ref, err := jm.restoredFrom(ctx, d.ID)
		if err != nil {
			return s, err
		}
		s.Restored, s.RestoredSavepoint = ref.ExternalPath, ref.IsSavepoint
	}
	if err := jm.allTasksRunning(ctx, d.ID); err != nil {
		return s, err
	}
	// Every next flow stops the job; a job that has checkpointed is the usual one, what a
	// last-state upgrade restores, and a savepoint that is not the job's first checkpoint.
	if err := jm.completedCheckpoint(ctx, d.ID); err != nil {
		return s, err
	}
	return s, j.b.waitOperator(ctx, j.key, "Ready and RUNNING", readyAndRunning)
}

// patch applies change to the FlinkDeployment and returns when the request was sent: the
// start of the flow it begins.
func (j *job) patch(ctx context.Context, change func(*flinkv1beta1.FlinkDeployment)) (time.Time, error) {
	dep := &flinkv1beta1.FlinkDeployment{}
	if err := j.b.env.Client.Get(ctx, j.key, dep); err != nil {
		return time.Time{}, fmt.Errorf("get: %w", err)
	}
	before := dep.DeepCopy()
	change(dep)
	t0 := time.Now()
	if err := j.b.env.Client.Patch(ctx, dep, client.MergeFrom(before)); err != nil {
		return time.Time{}, fmt.Errorf("patch: %w", err)
	}
	return t0, nil
}

// readyAndRunning is the operator's view of a job done with a change: Ready for the current
// generation, the job RUNNING, the spec deployed.
func readyAndRunning(d *flinkv1beta1.FlinkDeployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True" && c.ObservedGeneration == d.Generation &&
				d.Status.JobStatus.State == flinkv1beta1.JobStatusRunning &&
				d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed
		}
	}
	return false
}
