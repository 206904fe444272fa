package flinkdeployment

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/lifecycle"
	"github.com/flink-operator/flink-operator/pkg/native"
)

// Waiting reasons of a JobManager container that mean the deployment failed (upstream's list).
var failedWaitingReasons = map[string]bool{
	"CrashLoopBackOff": true, "ImagePullBackOff": true, "ErrImagePull": true,
	"RunContainerError": true, "CreateContainerConfigError": true, "OOMKilled": true,
}

// observe records what exists: the JobManager Deployment's state (the state machine
// MISSING → DEPLOYING → DEPLOYED_NOT_READY → READY, or ERROR) and, when the JobManager is ready,
// the job's state from Flink. Nothing is observed before the first deployment.
func (r *FlinkDeploymentReconciler) observe(ctx context.Context, s *scope) error {
	st := s.status()
	if s.Deployed == nil {
		return nil
	}
	jm := &appsv1.Deployment{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.dep.Namespace, Name: native.JobManagerDeploymentName(s.dep.Name)}, jm)
	switch {
	case apierrors.IsNotFound(err):
		r.observeMissing(s)
		return nil
	case err != nil:
		return fmt.Errorf("get JobManager deployment: %w", err)
	}
	switch s.deployAttemptOf(jm) {
	case attemptComplete:
		if st.ReconciliationStatus.State == flinkv1beta1.ReconciliationUpgrading && st.JobManagerDeploymentStatus != flinkv1beta1.JobManagerMissing {
			// The deployment of this upgrade went through before the operator could record it.
			st.ReconciliationStatus.State = flinkv1beta1.ReconciliationDeployed
		}
	case attemptPartial:
		s.partlyDeployed = true
	}
	obs := jobManagerObservation{Exists: true, Deleting: !jm.DeletionTimestamp.IsZero(), Available: jm.Status.AvailableReplicas >= 1}
	var failureMessage string
	if !obs.Deleting && !obs.Available {
		obs.FailedReason, failureMessage = r.failedPod(ctx, s)
	}
	conf, err := r.config(s, s.running())
	if err != nil {
		return err
	}
	var cl *flink.Client
	var cfg *flink.DashboardConfig
	if !obs.Deleting && obs.Available {
		if cl, err = r.RestClient(ctx, s); err != nil {
			return err
		}
		if v, known := s.answeredVersion(); known && s.Deployed.Job != nil && st.JobStatus.JobID != "" {
			// This JobManager answered before: asking for the job's state is the probe, so
			// that a running job costs one REST call per observe rather than two.
			cl.AssumeVersion(v)
			state, err := cl.JobStatus(ctx, st.JobStatus.JobID)
			s.jobState = &jobStateRead{state: state, err: err}
			obs.RESTAnswers = err == nil || flink.IsNotFound(err)
		} else {
			cfg, err = cl.Config(ctx)
			obs.RESTAnswers = err == nil
		}
	}
	next := jobManagerStatus(obs)
	if next == flinkv1beta1.JobManagerError {
		if st.JobManagerDeploymentStatus != flinkv1beta1.JobManagerError {
			r.Recorder.Eventf(s.dep, corev1.EventTypeWarning, reconciler.ReasonError, "JobManager %s: %s", obs.FailedReason, failureMessage)
		}
		st.Error = flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionDeploymentFailed, flinkv1beta1.ErrorReasonDeploymentFailed, obs.FailedReason+": "+failureMessage)
		if !reconciler.IsTerminal(st.JobStatus.State) { // an ended job stays ended whatever its JobManager does
			st.JobStatus.State = flinkv1beta1.JobStatusReconciling
		}
	}
	st.JobManagerDeploymentStatus = next
	if next != flinkv1beta1.JobManagerReady {
		return nil
	}
	if cfg != nil {
		if st.ClusterInfo == nil {
			st.ClusterInfo = map[string]string{}
		}
		st.ClusterInfo["flink-version"], st.ClusterInfo["flink-revision"] = cfg.FlinkVersion, cfg.FlinkRevision
		r.observeClusterInfo(ctx, s, cl, conf)
	}

	if s.Deployed.Job != nil {
		r.observeJob(ctx, s, cl, conf)
	}
	r.markStable(s, conf)
	return nil
}

// deployAttempt says how a JobManager Deployment relates to the recorded deployment attempt.
type deployAttempt int

const (
	attemptOther    deployAttempt = iota // another attempt's (or being deleted)
	attemptPartial                       // this attempt's, not every object applied yet
	attemptComplete                      // this attempt's, every object applied
)

// deployAttemptOf compares the JobManager's attempt annotation with the recorded attempt (the
// reconciliation timestamp of the recorded target). Whether that attempt's cluster was applied
// whole is what the status says: deploy records UPGRADING before it applies and DEPLOYED only
// once every object is applied, so the JobManager of the recorded attempt under a status still
// UPGRADING may be partly applied (the operator stopped or a write failed midway) and is applied
// again, which costs nothing where it was whole. JobManagers stamped complete by earlier versions
// (AnnotationDeployComplete) are complete; one applied before the attempt annotations existed is
// matched by generation.
//
// Only a JobManager whose ownerReference names this resource's UID can be any attempt of its:
// the annotations alone also match the JobManager of a deleted resource of the same name, left
// behind (orphaned, or restored by a backup tool) next to a resource created again with the old
// status restored, whose generation counter or reconciliation timestamp then names that
// JobManager's. Taking it for this resource's would record an upgrade as DEPLOYED with nothing
// deployed.
func (s *scope) deployAttemptOf(jm *appsv1.Deployment) deployAttempt {
	st := s.status()
	if !jm.DeletionTimestamp.IsZero() || !jobs.OwnedBy(jm, s.dep) {
		return attemptOther
	}
	attempt, stamped := jm.Annotations[native.AnnotationDeployAttempt]
	if !stamped {
		if jm.Annotations[native.AnnotationGeneration] == strconv.FormatInt(st.ObservedGeneration, 10) {
			return attemptComplete
		}
		return attemptOther
	}
	current := deployAttemptID(st)
	switch {
	case attempt != current:
		return attemptOther
	case st.ReconciliationStatus.State != flinkv1beta1.ReconciliationUpgrading,
		jm.Annotations[native.AnnotationDeployComplete] == current:
		return attemptComplete
	default:
		return attemptPartial
	}
}

// answeredVersion is the Flink version the JobManager reported when it was last observed ready,
// as recorded in the status; false when it has not been since it was (re)deployed (deploy sets
// DEPLOYING), so a new image's version is always asked for.
func (s *scope) answeredVersion() (flink.Version, bool) {
	st := s.status()
	if st.JobManagerDeploymentStatus != flinkv1beta1.JobManagerReady {
		return flink.Version{}, false
	}
	v, err := flink.ParseVersion(st.ClusterInfo["flink-version"])
	return v, err == nil
}

// jobStateRead is a job state read from the JobManager in this reconcile, with its error.
type jobStateRead struct {
	state flink.JobState
	err   error
}

// deployAttemptID names the recorded deployment attempt.
func deployAttemptID(st *flinkv1beta1.FlinkDeploymentStatus) string {
	return strconv.FormatInt(st.ReconciliationStatus.ReconciliationTimestamp, 10)
}

// jobManagerObservation is what observe saw of the JobManager Deployment.
type jobManagerObservation struct {
	Exists, Deleting bool
	// Available: at least one available replica.
	Available bool
	// FailedReason: a JobManager container's waiting reason that means it cannot start.
	FailedReason string
	// RESTAnswers: the JobManager's REST endpoint answered.
	RESTAnswers bool
}

// jobManagerStatus is the JobManager deployment state machine, written once:
//
//	no Deployment                               → MISSING
//	being deleted                               → DEPLOYING (until it is gone)
//	no available replica, a container failing   → ERROR (CrashLoopBackOff, ImagePullBackOff, ...)
//	no available replica                        → DEPLOYING
//	available, REST does not answer yet         → DEPLOYED_NOT_READY
//	available, REST answers                     → READY
func jobManagerStatus(o jobManagerObservation) flinkv1beta1.JobManagerDeploymentStatus {
	switch {
	case !o.Exists:
		return flinkv1beta1.JobManagerMissing
	case o.Deleting:
		return flinkv1beta1.JobManagerDeploying
	case !o.Available && o.FailedReason != "":
		return flinkv1beta1.JobManagerError
	case !o.Available:
		return flinkv1beta1.JobManagerDeploying
	case !o.RESTAnswers:
		return flinkv1beta1.JobManagerDeployedNotReady
	default:
		return flinkv1beta1.JobManagerReady
	}
}

func (r *FlinkDeploymentReconciler) observeMissing(s *scope) {
	st := s.status()
	prev := st.JobManagerDeploymentStatus
	st.JobManagerDeploymentStatus = flinkv1beta1.JobManagerMissing
	if s.Deployed.Job == nil || s.Deployed.Job.State == flinkv1beta1.JobStateSuspended ||
		st.ReconciliationStatus.State == flinkv1beta1.ReconciliationUpgrading ||
		jobs.RedeployRequested(s.Deployed.Job, s.dep.Spec.Job) { // deleted by the redeploy itself
		return
	}
	if !reconciler.IsTerminal(st.JobStatus.State) {
		st.JobStatus.State = flinkv1beta1.JobStatusReconciling
	}
	if prev != flinkv1beta1.JobManagerMissing && prev != flinkv1beta1.JobManagerError {
		st.Error = flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionMissingJobManager, flinkv1beta1.ErrorReasonMissingJobManager, "Missing JobManager deployment")
		r.Recorder.Event(s.dep, corev1.EventTypeWarning, reconciler.ReasonMissing, "Missing JobManager deployment")
	}
}

// observeJob reads the job's state from Flink.
func (r *FlinkDeploymentReconciler) observeJob(ctx context.Context, s *scope, cl *flink.Client, conf flinkconf.Config) {
	st := s.status()
	if st.JobStatus.JobID == "" {
		return
	}
	var state flink.JobState
	var err error
	if s.jobState != nil { // read already, as the probe of the JobManager
		state, err = s.jobState.state, s.jobState.err
	} else {
		state, err = cl.JobStatus(ctx, st.JobStatus.JobID)
	}
	var next flinkv1beta1.JobStatusState
	switch {
	case err == nil:
		next = jobs.ObservedJobState(&st.JobStatus, flinkv1beta1.JobStatusState(state), time.Now())
	case reconciler.IsTerminal(st.JobStatus.State):
		// A job that ended stays ended: a restarted JobManager no longer lists it (its job
		// result store says it ended, and it is not run again), an unreachable one says
		// nothing new (upstream's observer only moves a running job to RECONCILING).
		next = st.JobStatus.State
	default:
		next = flinkv1beta1.JobStatusReconciling
	}
	r.exceptions.Report(ctx, r.Recorder, s.dep, s.dep.UID, cl, st.JobStatus.JobID, conf)
	prev := st.JobStatus.State
	if next != prev {
		if next != flinkv1beta1.JobStatusReconciling {
			r.Recorder.Eventf(s.dep, corev1.EventTypeNormal, reconciler.ReasonJobStatusChanged, "Job status changed from %s to %s", orUnknown(prev), next)
		}
		st.JobStatus.State = next
		st.JobStatus.UpdateTime = strconv.FormatInt(time.Now().UnixMilli(), 10)
	}
	if err == nil && jobDetailsDue(st, prev) {
		r.observeJobDetails(ctx, s, cl, conf)
	}
	if next == flinkv1beta1.JobStatusRunning && lifecycle.RestoreUnrecorded(st.Operations) {
		// A rollback through HA metadata restored a checkpoint only Flink knows; the Rollback
		// operation records it (one read, only until it is recorded; best effort).
		if stats, err := cl.CheckpointStatistics(ctx, st.JobStatus.JobID); err == nil && stats.Latest.Restored != nil {
			s.restored = stats.Latest.Restored.ExternalPath
		}
	}
	if reconciler.IsTerminal(next) {
		// Every observe, not only on the change: the first read may fail, and a checkpoint may
		// complete while the job is cancelled (upstream's observeLatestCheckpoint).
		r.recordLastCheckpoint(ctx, s, cl)
	}
	if next == flinkv1beta1.JobStatusCanceled && prev != next && cancelledOutsideTheOperator(st, s.Deployed) {
		if err := r.markSuspended(ctx, s); err != nil {
			log.FromContext(ctx).Error(err, "cannot record the job cancelled outside the operator as suspended")
		}
	}
	r.observeHealth(ctx, s, cl, conf)
}

// cancelledOutsideTheOperator: the job was cancelled while the operator had nothing under way
// (its own cancels happen during upgrades, rollbacks and suspends only).
func cancelledOutsideTheOperator(st *flinkv1beta1.FlinkDeploymentStatus, deployed *flinkv1beta1.FlinkDeploymentSpec) bool {
	return st.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && deployed.Job != nil &&
		deployed.Job.State != flinkv1beta1.JobStateSuspended
}

// markSuspended records a job cancelled outside the operator as suspended, as upstream's
// JobStatusObserver does: the lifecycle shows SUSPENDED, and since the spec still asks for a
// running job the next reconcile resumes it from what it kept (its last checkpoint, or HA
// metadata). The generation and timestamp of the recorded target stay as they are.
func (r *FlinkDeploymentReconciler) markSuspended(ctx context.Context, s *scope) error {
	suspended := s.Deployed.DeepCopy()
	suspended.Job.State = flinkv1beta1.JobStateSuspended
	raw, err := flinkv1beta1.EncodeReconciledSpec(*suspended, s.FirstDeployment)
	if err != nil {
		return fmt.Errorf("encode suspended spec: %w", err)
	}
	s.status().ReconciliationStatus.LastReconciledSpec = raw
	s.Deployed = suspended
	r.Recorder.Event(s.dep, corev1.EventTypeWarning, reconciler.ReasonSuspended, "Job cancelled outside the operator; it is resumed from its last checkpoint")
	log.FromContext(ctx).Info("job cancelled outside the operator; recorded as suspended")
	return nil
}

// recordLastCheckpoint keeps the latest completed checkpoint of a job that ended on its own
// (failed, finished, cancelled outside the operator) as what the next upgrade or restart
// restores: once the job is terminal, Flink's HA services drop its checkpoint pointers.
// Without a newer checkpoint the path the job was started from stays recorded.
//
// The current spec's mode decides, never the recorded one (upstream's
// SnapshotObserver.observeLatestCheckpoint looks at no recorded mode): the Apache operator
// records the mode it restored with, stateless after every first deployment, and a change of
// upgradeMode alone is never recorded, so the recorded mode says nothing of what the user wants
// kept. A stateless job skips it because its recorded path is only ever one the user chose
// (planUpgrade restores it); the observe after a switch to another mode records it.
func (r *FlinkDeploymentReconciler) recordLastCheckpoint(ctx context.Context, s *scope, cl *flink.Client) {
	st := s.status()
	if st.ReconciliationStatus.State != flinkv1beta1.ReconciliationDeployed || jobs.UpgradeModeOf(s.dep.Spec.Job) == flinkv1beta1.UpgradeModeStateless {
		return
	}
	path, err := cl.LatestCheckpointPath(ctx, st.JobStatus.JobID)
	if err != nil || path == "" || path == st.JobStatus.UpgradeSavepointPath {
		return
	}
	st.JobStatus.UpgradeSavepointPath = path
	log.FromContext(ctx).Info("job ended; its latest checkpoint is what it restores from", "state", st.JobStatus.State, "checkpoint", path)
}

// markStable copies the last reconciled spec to the last stable spec once it runs healthy.
func (r *FlinkDeploymentReconciler) markStable(s *scope, conf flinkconf.Config) {
	st := s.status()
	rs := &st.ReconciliationStatus
	if rs.State != flinkv1beta1.ReconciliationDeployed || st.JobManagerDeploymentStatus != flinkv1beta1.JobManagerReady {
		return
	}
	// A job that ran to its end while it should run is done, not unhealthy: its spec is stable
	// (upstream's checkAndUpdateStableSpec), so it is never rolled back (re-run).
	healthy := s.Deployed.Job == nil || st.JobStatus.State == flinkv1beta1.JobStatusRunning ||
		(st.JobStatus.State == flinkv1beta1.JobStatusFinished && s.Deployed.Job.State != flinkv1beta1.JobStateSuspended)
	if !healthy {
		return
	}
	if st.Error != "" && !reconciler.IsValidationError(st.Error) {
		st.Error = ""
	}
	if s.Deployed.Job != nil && st.JobStatus.State == flinkv1beta1.JobStatusRunning {
		// The job runs from what it restored and moves past it: a recorded path is stale now.
		// What a later upgrade restores is taken then (savepoint, checkpoint, HA metadata).
		st.JobStatus.UpgradeSavepointPath = ""
	}
	rs.LastStableSpec = rs.LastReconciledSpec
	if st.TaskManager == nil {
		st.TaskManager = &flinkv1beta1.TaskManagerInfo{}
	}
	if replicas, err := flinkconf.TaskManagerReplicas(conf, s.Deployed); err == nil && s.Deployed.Job != nil {
		st.TaskManager.Replicas = replicas
	}
}

// failedPod finds a JobManager pod whose container cannot start.
func (r *FlinkDeploymentReconciler) failedPod(ctx context.Context, s *scope) (reason, message string) {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(s.dep.Namespace),
		client.MatchingLabels{native.LabelApp: s.dep.Name, native.LabelComponent: native.ComponentJobManager}); err != nil {
		return "", ""
	}
	for _, p := range pods.Items {
		for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			if w := cs.State.Waiting; w != nil && failedWaitingReasons[w.Reason] {
				return w.Reason, w.Message
			}
			if t := cs.LastTerminationState.Terminated; t != nil && t.Reason == "OOMKilled" && cs.State.Waiting != nil {
				return t.Reason, "the container ran out of memory"
			}
		}
	}
	return "", ""
}

// config is the effective Flink configuration of a spec, computed once per reconcile.
func (r *FlinkDeploymentReconciler) config(s *scope, spec *flinkv1beta1.FlinkDeploymentSpec) (flinkconf.Config, error) {
	key, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("configuration of the spec: %w", err)
	}
	if conf, ok := s.configs[string(key)]; ok {
		return conf, nil
	}
	conf, err := r.computeConfig(s, spec)
	if err != nil {
		return nil, err
	}
	if s.configs == nil {
		s.configs = map[string]flinkconf.Config{}
	}
	s.configs[string(key)] = conf
	return conf, nil
}

// RestClient is the client of the running cluster's JobManager, built once per reconcile from
// the running spec's configuration (its REST port).
func (r *FlinkDeploymentReconciler) RestClient(ctx context.Context, s *scope) (*flink.Client, error) {
	if s.rest != nil {
		return s.rest, nil
	}
	spec := s.running()
	conf, err := r.config(s, spec)
	if err != nil {
		return nil, err
	}
	if s.rest, err = r.Flink.For(ctx, s.dep.Namespace, s.dep.Name, spec.FlinkVersion, conf); err != nil {
		return nil, err
	}
	return s.rest, nil
}

func (r *FlinkDeploymentReconciler) computeConfig(s *scope, spec *flinkv1beta1.FlinkDeploymentSpec) (flinkconf.Config, error) {
	dep := s.dep.DeepCopy()
	dep.Spec = *spec.DeepCopy()
	return reconciler.ClusterConfig(dep, r.Defaults)
}

func orUnknown(s flinkv1beta1.JobStatusState) flinkv1beta1.JobStatusState {
	if s == "" {
		return "UNKNOWN"
	}
	return s
}
