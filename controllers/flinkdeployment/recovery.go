package flinkdeployment

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// Recovery options (upstream's names and defaults).
const (
	ClusterInfoHealthKey = "cluster-health-info"
	defaultCheckpointTO  = 10 * time.Minute // Flink's execution.checkpointing.timeout default

	// ReasonRecoverDeployment is the event of a missing JobManager deployment being redeployed.
	ReasonRecoverDeployment = "RecoverDeployment"
)

// recoverJobManager deploys a missing JobManager Deployment of a deployment that should run
// again (kubernetes.operator.jm-deployment-recovery.enabled), through the upgrade steps, so the
// job restores its HA metadata. A job whose state cannot be carried over is not recovered:
// nothing is recorded, the reason is reported, and a new spec (initialSavepointPath +
// savepointRedeployNonce) goes through the normal upgrade path.
func (r *FlinkDeploymentReconciler) recoverJobManager(ctx context.Context, p *pass) (jobs.PhaseResult, error) {
	st, desired := p.status(), p.desired
	wantsRunning := desired.Job == nil || (desired.Job.State != flinkv1beta1.JobStateSuspended && !reconciler.IsTerminal(st.JobStatus.State))
	if st.JobManagerDeploymentStatus != flinkv1beta1.JobManagerMissing || !wantsRunning || !options.JMDeploymentRecovery.Get(p.conf) {
		return jobs.Next(), nil
	}
	if desired.Job != nil {
		situation, err := r.upgradeSituation(ctx, p.scope, desired, p.conf)
		if err != nil {
			return jobs.PhaseResult{}, err
		}
		if plan := jobs.PlanUpgrade(situation); plan.Stop == jobs.StopFail {
			st.Error = flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionRecoveryFailure, flinkv1beta1.ErrorReasonManualRestoreRequired,
				"Missing JobManager deployment, and it cannot be recovered: "+plan.Reason)
			return jobs.Acted(ctrl.Result{RequeueAfter: r.Intervals.Reconcile}), nil
		}
	}
	r.Recorder.Event(p.dep, corev1.EventTypeWarning, ReasonRecoverDeployment, "JobManager deployment is missing; deploying it again")
	if err := p.recordDeployed(*desired, flinkv1beta1.ReconciliationUpgrading); err != nil {
		return jobs.PhaseResult{}, err
	}
	if err := r.persist(ctx, p.scope); err != nil {
		return jobs.PhaseResult{}, err
	}
	res, err := r.continueUpgrade(ctx, p.scope, p.Deployed.DeepCopy())
	return jobs.Acted(res), err
}

// restartUnhealthy resubmits a job the health check found unhealthy from its HA metadata
// (stateless jobs from nothing). Without HA metadata a restart would lose state: it says so,
// and the job is left as it is for the user to act on.
func (r *FlinkDeploymentReconciler) restartUnhealthy(ctx context.Context, p *pass) (jobs.PhaseResult, error) {
	st, desired := p.status(), p.desired
	reason, unhealthy := unhealthyJob(st, desired)
	if !unhealthy {
		return jobs.Next(), nil
	}
	mode := jobs.UpgradeModeOf(desired.Job)
	keepHA := mode != flinkv1beta1.UpgradeModeStateless
	if keepHA {
		situation, err := r.upgradeSituation(ctx, p.scope, desired, p.conf)
		if err != nil {
			return jobs.PhaseResult{}, err
		}
		usable := situation.HAEnabled && situation.HAMetadata && (mode == flinkv1beta1.UpgradeModeLastState || situation.LastStateFallback)
		if !usable {
			msg := "Job is unhealthy but cannot be restarted without losing state: no HA metadata to restore"
			if failure := flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionUnhealthyJob, flinkv1beta1.ErrorReasonUnhealthyJob, msg); st.Error != failure {
				st.Error = failure
				r.Recorder.Event(p.dep, corev1.EventTypeWarning, jobs.ReasonRestartFailed, msg)
			}
			return jobs.NextWithin(r.Intervals.Reconcile), nil
		}
	}
	r.Recorder.Event(p.dep, corev1.EventTypeWarning, jobs.ReasonRestartFailed, "Job is unhealthy ("+reason+"); restarting it from its last state")
	delete(st.ClusterInfo, ClusterInfoHealthKey)
	if err := p.recordDeployed(*desired, flinkv1beta1.ReconciliationUpgrading); err != nil {
		return jobs.PhaseResult{}, err
	}
	st.JobStatus.State = flinkv1beta1.JobStatusReconciling // not RUNNING: no savepoint is attempted
	if err := r.persist(ctx, p.scope); err != nil {
		return jobs.PhaseResult{}, err
	}
	if _, err := r.deleteCluster(ctx, p.scope, keepHA); err != nil {
		return jobs.PhaseResult{}, err
	}
	return jobs.Acted(ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}), nil
}

// unhealthyJob: the health check's record says the job is unhealthy, and why.
func unhealthyJob(st *flinkv1beta1.FlinkDeploymentStatus, desired *flinkv1beta1.FlinkDeploymentSpec) (string, bool) {
	h, ok := storedHealth(st)
	if !ok || desired.Job == nil || h.Healthy {
		return "", false
	}
	return h.Reason, true
}

// shutdownAfterTTL removes the JobManager of a job that ended, once
// kubernetes.operator.jm-deployment.shutdown-ttl has passed since it ended (the HA metadata
// stays). An unhealthy job that restartUnhealthy could not restart keeps its JobManager: the
// error reported asks the user to act on it as it is.
func (r *FlinkDeploymentReconciler) shutdownAfterTTL(ctx context.Context, p *pass) (jobs.PhaseResult, error) {
	st := p.status()
	if p.desired.Job == nil || !reconciler.IsTerminal(st.JobStatus.State) || st.JobManagerDeploymentStatus == flinkv1beta1.JobManagerMissing {
		return jobs.Next(), nil
	}
	if _, unhealthy := unhealthyJob(st, p.desired); unhealthy {
		return jobs.Next(), nil
	}
	ttl := options.JMShutdownTTL.Get(p.conf)
	ended, _ := strconv.ParseInt(st.JobStatus.UpdateTime, 10, 64)
	if left := time.Until(time.UnixMilli(ended).Add(ttl)); left > 0 {
		return jobs.NextWithin(left), nil
	}
	if st.JobManagerDeploymentStatus != flinkv1beta1.JobManagerDeploying { // observe says DEPLOYING while it is being deleted
		r.Recorder.Eventf(p.dep, corev1.EventTypeNormal, reconciler.ReasonCleanup, "Job %s more than %s ago; JobManager deployment removed (%s)",
			st.JobStatus.State, ttl, options.JMShutdownTTL.Key)
	}
	gone, err := r.deleteCluster(ctx, p.scope, true)
	if err != nil {
		return jobs.PhaseResult{}, err
	}
	if gone {
		st.JobManagerDeploymentStatus = flinkv1beta1.JobManagerMissing
		return jobs.Acted(ctrl.Result{RequeueAfter: r.Intervals.Reconcile}), nil
	}
	st.JobManagerDeploymentStatus = flinkv1beta1.JobManagerDeploying
	return jobs.Acted(ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}), nil
}

// healthRecord is what the health check remembers between observations, in
// status.clusterInfo["cluster-health-info"] (so an operator restart keeps the baseline).
type healthRecord struct {
	NumRestarts               int64  `json:"numRestarts"`
	RestartsSince             int64  `json:"numRestartsEvaluationTimeStamp"`
	CompletedCheckpoints      int64  `json:"numCompletedCheckpoints"`
	CheckpointsIncreasedSince int64  `json:"numCompletedCheckpointsIncreasedTimeStamp"`
	Healthy                   bool   `json:"healthy"`
	Reason                    string `json:"reason,omitempty"`
}

type healthOptions struct {
	RestartWindow    time.Duration
	RestartLimit     int64
	CheckpointWindow time.Duration // 0: no checkpoint progress check
}

// evaluateHealth updates the record with one observation. Unhealthy: more than RestartLimit
// restarts within RestartWindow, or no completed checkpoint within CheckpointWindow.
func evaluateHealth(prev *healthRecord, now time.Time, restarts, completed int64, o healthOptions) healthRecord {
	ms := now.UnixMilli()
	if prev == nil || restarts < prev.NumRestarts || completed < prev.CompletedCheckpoints {
		// First look, or a new job (counters start again): this is the baseline.
		return healthRecord{NumRestarts: restarts, RestartsSince: ms, CompletedCheckpoints: completed, CheckpointsIncreasedSince: ms, Healthy: true}
	}
	next := *prev
	next.Healthy, next.Reason = true, ""
	if now.Sub(time.UnixMilli(prev.RestartsSince)) > o.RestartWindow {
		next.NumRestarts, next.RestartsSince = restarts, ms
	} else if restarts-prev.NumRestarts > o.RestartLimit {
		next.Healthy, next.Reason = false, fmt.Sprintf("%d restarts within %s", restarts-prev.NumRestarts, o.RestartWindow)
	}
	if completed > prev.CompletedCheckpoints {
		next.CompletedCheckpoints, next.CheckpointsIncreasedSince = completed, ms
	} else if o.CheckpointWindow > 0 && now.Sub(time.UnixMilli(prev.CheckpointsIncreasedSince)) > o.CheckpointWindow && next.Healthy {
		next.Healthy, next.Reason = false, fmt.Sprintf("no completed checkpoint within %s", o.CheckpointWindow)
	}
	return next
}

// healthOptionsOf reads the health check options; the checkpoint window defaults, as upstream,
// to max(checkpoint interval, timeout) × (tolerable failures + 2), and is off without checkpointing.
func healthOptionsOf(conf flinkconf.Config) healthOptions {
	o := healthOptions{RestartWindow: options.HealthRestartsWindow.Get(conf), RestartLimit: int64(options.HealthRestartsThreshold.Get(conf))}
	if !options.HealthCheckpointProgress.Get(conf) {
		return o
	}
	if d := options.HealthCheckpointWindow.Get(conf); d > 0 {
		o.CheckpointWindow = d
		return o
	}
	interval, err := conf.Duration("execution.checkpointing.interval", 0)
	if err != nil || interval <= 0 {
		return o
	}
	timeout, err := conf.Duration("execution.checkpointing.timeout", defaultCheckpointTO)
	if err != nil {
		timeout = defaultCheckpointTO
	}
	tolerable, _ := strconv.Atoi(conf.Get("execution.checkpointing.tolerable-failed-checkpoints", "0"))
	o.CheckpointWindow = max(interval, timeout) * time.Duration(tolerable+2)
	return o
}

// observeHealth reads the job's restart and checkpoint counters and updates the health record.
func (r *FlinkDeploymentReconciler) observeHealth(ctx context.Context, s *scope, cl *flink.Client, conf flinkconf.Config) {
	st := s.status()
	if !options.HealthCheck.Get(conf) || st.JobStatus.State != flinkv1beta1.JobStatusRunning ||
		st.ReconciliationStatus.State != flinkv1beta1.ReconciliationDeployed {
		return
	}
	m, err := cl.JobMetrics(ctx, st.JobStatus.JobID, "numRestarts", "numberOfCompletedCheckpoints")
	if err != nil {
		return
	}
	restarts, err := strconv.ParseInt(m["numRestarts"], 10, 64)
	if err != nil {
		return
	}
	completed, _ := strconv.ParseInt(m["numberOfCompletedCheckpoints"], 10, 64)
	var prev *healthRecord
	if h, ok := storedHealth(st); ok {
		prev = &h
	}
	next := evaluateHealth(prev, time.Now(), restarts, completed, healthOptionsOf(conf))
	raw, _ := json.Marshal(next)
	st.ClusterInfo[ClusterInfoHealthKey] = string(raw)
	if !next.Healthy {
		log.FromContext(ctx).Info("job unhealthy", "reason", next.Reason)
	}
}

// storedHealth is the health record kept in the status, if there is one.
func storedHealth(st *flinkv1beta1.FlinkDeploymentStatus) (healthRecord, bool) {
	raw := st.ClusterInfo[ClusterInfoHealthKey]
	if raw == "" {
		return healthRecord{}, false
	}
	var h healthRecord
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		return healthRecord{}, false
	}
	return h, true
}
