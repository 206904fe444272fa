package flinkdeployment

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// A FlinkDeployment reconcile is observe → validate (reconcileDeployment), then the phases
// below, in order, then the status (finish). Each phase looks at the status and what observe
// found, and either acts, which ends the reconcile (the next one starts again from the top
// with what the action recorded), or leaves the resource to the phases after it. Every action
// is idempotent and records its inputs in the status before it touches anything (write-ahead),
// so an operator restarted at any moment takes the same path again.

// phase is one step of the reconcile of a FlinkDeployment.
type phase = jobs.PhaseOf[*pass]

// pass is what the phases of one reconcile share: the scope, the spec reconciled to (the
// validated spec with the autoscaler's overrides) and, for the phases of an unchanged spec,
// its effective configuration.
type pass struct {
	*scope
	desired *flinkv1beta1.FlinkDeploymentSpec
	conf    flinkconf.Config
}

// reconcile brings the cluster to the validated spec target: the phases of specPhases, run in
// order on what observe found and the status recorded (this file).
func (r *FlinkDeploymentReconciler) reconcile(ctx context.Context, s *scope, target *flinkv1beta1.FlinkDeploymentSpec) (ctrl.Result, error) {
	desired := target.DeepCopy()
	if err := r.applyAutoscaler(ctx, s, desired); err != nil {
		return ctrl.Result{}, err
	}
	return jobs.RunPhases(ctx, &pass{scope: s, desired: desired}, r.specPhases())
}

// specPhases are the phases of the reconcile of a validated spec, in the order they are tried.
func (r *FlinkDeploymentReconciler) specPhases() []phase {
	return []phase{
		// Nothing deployed yet: deploy, restoring initialSavepointPath, unless created suspended.
		{Name: "firstDeployment", Run: r.firstDeployment},
		// A new savepointRedeployNonce, in any state: the cluster and its HA metadata go without
		// a savepoint, then the spec is deployed from initialSavepointPath.
		{Name: "savepointRedeploy", Run: r.savepointRedeploy},
		// ROLLING_BACK with the spec unchanged: the rollback goes on (a changed spec abandons it,
		// in recordChange).
		{Name: "continueRollback", Run: r.rollingBack},
		// ROLLED_BACK: a lost JobManager is recovered by rolling back again; a spec set back to
		// the stable one is recorded without a restart.
		{Name: "rolledBack", Run: r.rolledBack},
		// A settled deployment whose spec did not change: unchangedPhases.
		{Name: "unchanged", Run: r.unchanged},
		// The spec changed: record it as the upgrade target (write-ahead), unless it is scaled in
		// place or a pending savepoint is waited for first.
		{Name: "recordChange", Run: r.recordChange},
		// Carry the recorded upgrade out: planUpgrade decides how the job stops and what is
		// restored, jobStop stops it, the cluster goes, the target is deployed (continueUpgrade).
		{Name: "upgrade", Run: r.upgrade},
	}
}

// unchangedPhases look after a settled deployment whose spec did not change, in this order.
func (r *FlinkDeploymentReconciler) unchangedPhases() []phase {
	return []phase{
		// An in-place rescale in flight (status.rescale) is followed until Flink reports the new
		// parallelism; it only observes, the phases below run as well.
		{Name: "followRescale", Run: r.followRescale},
		// Not healthy within kubernetes.operator.deployment.readiness.timeout after a change, with
		// rollback enabled: ROLLING_BACK to the last stable spec, through the upgrade steps keeping
		// HA metadata, then ROLLED_BACK (the failed spec stays the last reconciled one until the
		// spec changes). When it cannot be rolled back, the reason is reported and the rest goes on.
		{Name: "rollback", Run: r.rollbackNotReady},
		// A missing JobManager Deployment (kubernetes.operator.jm-deployment-recovery.enabled) is
		// deployed again through the upgrade steps, restoring HA metadata.
		{Name: "recoverJobManager", Run: r.recoverJobManager},
		// A job the health check found unhealthy is restarted from its HA metadata.
		{Name: "restartUnhealthy", Run: r.restartUnhealthy},
		// The JobManager of a job that ended goes after kubernetes.operator.jm-deployment.shutdown-ttl.
		{Name: "shutdownTTL", Run: r.shutdownAfterTTL},
		// A FAILED job with kubernetes.operator.job.restart.failed is upgraded to the same spec,
		// restoring what its upgrade mode keeps.
		{Name: "restartFailed", Run: r.restartFailed},
		// Manual (nonce) and periodic savepoints and checkpoints of a running job; look again
		// when one may be done, or at the interval the cluster's state asks for.
		{Name: "snapshots", Run: r.takeSnapshots},
		// None of the above acted: the resource is settled, which the log says.
		jobs.SettledPhase(func(p *pass) client.ObjectKey { return client.ObjectKeyFromObject(p.dep) }),
	}
}

// firstDeployment deploys the first spec, restoring initialSavepointPath; a resource created
// suspended has nothing to run yet.
func (r *FlinkDeploymentReconciler) firstDeployment(ctx context.Context, p *pass) (jobs.PhaseResult, error) {
	if p.Deployed != nil {
		return jobs.Next(), nil
	}
	if p.desired.Job != nil && p.desired.Job.State == flinkv1beta1.JobStateSuspended {
		return jobs.Acted(ctrl.Result{}), nil
	}
	restore := ""
	if p.desired.Job != nil {
		restore = p.desired.Job.InitialSavepointPath
	}
	if err := p.recordDeployed(*p.desired, flinkv1beta1.ReconciliationUpgrading); err != nil {
		return jobs.PhaseResult{}, err
	}
	res, err := r.deploy(ctx, p.scope, p.desired, restore, true)
	return jobs.Acted(res), err
}

// rollingBack continues a rollback while the spec is the one that failed.
func (r *FlinkDeploymentReconciler) rollingBack(ctx context.Context, p *pass) (jobs.PhaseResult, error) {
	if p.status().ReconciliationStatus.State != flinkv1beta1.ReconciliationRollingBack || jobs.SpecChanged(p.Deployed, p.desired) {
		return jobs.Next(), nil
	}
	res, err := r.continueRollback(ctx, p.scope)
	return jobs.Acted(res), err
}

// rolledBack handles the two situations of a rolled-back deployment that are not those of any
// deployed one: its JobManager is missing, or its spec was set back to the stable one.
func (r *FlinkDeploymentReconciler) rolledBack(ctx context.Context, p *pass) (jobs.PhaseResult, error) {
	st := p.status()
	if st.ReconciliationStatus.State != flinkv1beta1.ReconciliationRolledBack {
		return jobs.Next(), nil
	}
	changed := jobs.SpecChanged(p.Deployed, p.desired)
	switch {
	case !changed && st.JobManagerDeploymentStatus == flinkv1beta1.JobManagerMissing:
		// Recovering a rolled-back cluster is the rollback again: the stable spec is
		// deployed, the failed one stays the recorded target.
		r.Recorder.Event(p.dep, corev1.EventTypeWarning, ReasonRecoverDeployment, "JobManager deployment is missing; deploying the rolled-back spec again")
		st.ReconciliationStatus.State = flinkv1beta1.ReconciliationRollingBack
		if err := r.persist(ctx, p.scope); err != nil {
			return jobs.PhaseResult{}, err
		}
		res, err := r.continueRollback(ctx, p.scope)
		return jobs.Acted(res), err
	case changed && p.rolledBackTo != nil && !jobs.SpecChanged(p.rolledBackTo, p.desired):
		// The spec was set back to what runs since the rollback: nothing to restart
		// (upstream's checkNewSpecAlreadyDeployed).
		r.Recorder.Event(p.dep, corev1.EventTypeNormal, reconciler.ReasonSpecChanged, "The spec is the one already running since the rollback")
		if err := p.recordDeployed(*p.desired, flinkv1beta1.ReconciliationDeployed); err != nil {
			return jobs.PhaseResult{}, err
		}
		return jobs.Acted(ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}), nil
	}
	return jobs.Next(), nil
}

// unchanged runs unchangedPhases for a deployment whose spec is the one deployed and that is
// not in the middle of an upgrade or a rollback.
func (r *FlinkDeploymentReconciler) unchanged(ctx context.Context, p *pass) (jobs.PhaseResult, error) {
	if inMotion(p.status()) || jobs.SpecChanged(p.Deployed, p.desired) {
		return jobs.Next(), nil
	}
	conf, err := r.config(p.scope, p.desired)
	if err != nil {
		return jobs.PhaseResult{}, err
	}
	p.conf = conf
	res, err := jobs.RunPhases(ctx, p, r.unchangedPhases())
	return jobs.Acted(res), err
}

// inMotion: an upgrade or a rollback is under way (recorded, not finished).
func inMotion(st *flinkv1beta1.FlinkDeploymentStatus) bool {
	state := st.ReconciliationStatus.State
	return state == flinkv1beta1.ReconciliationUpgrading || state == flinkv1beta1.ReconciliationRollingBack
}

// recordChange records a changed spec as the upgrade target before anything is touched
// (write-ahead), for the upgrade phase to carry out:
//
//   - ROLLING_BACK: the user changed the spec (typically fixed it); the rollback is abandoned
//     and the new spec is applied from wherever the rollback got to (upstream's
//     prepareCrForRollback).
//   - UPGRADING: a cluster of the recorded attempt applied in part is finished first. When the
//     spec or upgradeMode changed again and no upgrade savepoint is in flight, nothing
//     irreversible is under way: the newest spec replaces the recorded target
//     and the decision table is evaluated again for it (so a stop that cannot succeed never
//     wedges the resource: switching upgradeMode helps). Otherwise the recorded upgrade goes on.
//   - otherwise: a savepoint still pending is waited for, a change of parallelism alone may be
//     applied in place (scaleInPlace), else the spec is recorded as UPGRADING.
func (r *FlinkDeploymentReconciler) recordChange(ctx context.Context, p *pass) (jobs.PhaseResult, error) {
	st := p.status()
	switch st.ReconciliationStatus.State {
	case flinkv1beta1.ReconciliationUpgrading:
		if p.partlyDeployed {
			// The recorded attempt's JobManager runs already, with the recorded target's
			// configuration (it is read once, at start). The attempt is finished as recorded
			// (its remaining objects applied), and a newer spec is then an upgrade of it:
			// applying the newer spec over that JobManager would change its ConfigMap but not
			// the running process, and record as deployed a spec no JobManager runs.
			return jobs.Next(), nil
		}
		if upgradeTargetChanged(p.Deployed, p.desired) && !jobs.UpgradeSavepointInFlight(&st.CommonStatus) {
			st.Error = ""
			return jobs.Next(), r.startUpgrade(ctx, p.scope, p.desired)
		}
		return jobs.Next(), nil
	case flinkv1beta1.ReconciliationRollingBack:
		if !jobs.SpecChanged(p.Deployed, p.desired) {
			return jobs.Next(), nil
		}
		r.Recorder.Event(p.dep, corev1.EventTypeNormal, ReasonRollback, "Spec changed during the rollback; applying it instead")
		return jobs.Next(), r.startUpgrade(ctx, p.scope, p.desired)
	}
	if !jobs.SpecChanged(p.Deployed, p.desired) {
		return jobs.Next(), nil
	}
	conf, err := r.config(p.scope, p.desired)
	if err != nil {
		return jobs.PhaseResult{}, err
	}
	if wait, err := r.awaitPendingSavepoint(ctx, p.scope, p.desired, conf); wait || err != nil {
		return jobs.Acted(ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}), err
	}
	if r.scaleInPlace(ctx, p.scope, p.desired, conf) {
		return jobs.Acted(ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}), nil
	}
	return jobs.Next(), r.startUpgrade(ctx, p.scope, p.desired)
}

// upgrade carries out the upgrade to the recorded target: jobs.PlanUpgrade (jobs/upgradepolicy.go)
// decides how the job stops and what is restored; jobs.JobStop (jobs/jobstop.go, shared with session
// jobs) carries the stop out:
//
//	savepoint:  stop-with-savepoint (trigger id recorded first), its path becomes
//	            upgradeSavepointPath
//	last-state: keep HA metadata (without HA: the latest checkpoint recorded, cancel, read again)
//	stateless:  nothing to keep
//
// then the cluster is deleted and waited for; a suspended target ends there (DEPLOYED,
// lifecycle SUSPENDED), any other is deployed restoring what was kept (DEPLOYED).
func (r *FlinkDeploymentReconciler) upgrade(ctx context.Context, p *pass) (jobs.PhaseResult, error) {
	res, err := r.continueUpgrade(ctx, p.scope, p.Deployed.DeepCopy())
	return jobs.Acted(res), err
}

// restartFailed: a FAILED job with kubernetes.operator.job.restart.failed is redeployed with
// the same spec as an upgrade, restoring what its upgrade mode keeps (HA metadata, the last
// savepoint).
func (r *FlinkDeploymentReconciler) restartFailed(ctx context.Context, p *pass) (jobs.PhaseResult, error) {
	st := p.status()
	if p.desired.Job == nil || st.JobStatus.State != flinkv1beta1.JobStatusFailed || !options.RestartFailed.Get(p.conf) {
		return jobs.Next(), nil
	}
	r.Recorder.Event(p.dep, corev1.EventTypeWarning, jobs.ReasonRestartFailed, "Job FAILED; restarting it")
	if jobs.UpgradeModeOf(p.desired.Job) == flinkv1beta1.UpgradeModeStateless {
		st.JobStatus.UpgradeSavepointPath = ""
	}
	if err := p.recordDeployed(*p.desired, flinkv1beta1.ReconciliationUpgrading); err != nil {
		return jobs.PhaseResult{}, err
	}
	if err := r.persist(ctx, p.scope); err != nil {
		return jobs.PhaseResult{}, err
	}
	res, err := r.continueUpgrade(ctx, p.scope, p.Deployed.DeepCopy())
	return jobs.Acted(res), err
}

// takeSnapshots triggers and follows the savepoints and checkpoints of a running job
// (snapshots.go), and says when to look again: when a snapshot may be done, or
// at the interval the cluster's state asks for.
func (r *FlinkDeploymentReconciler) takeSnapshots(ctx context.Context, p *pass) (jobs.PhaseResult, error) {
	inFlight, err := r.snapshots(ctx, p.scope, p.desired, p.conf)
	if err != nil {
		return jobs.PhaseResult{}, err
	}
	return jobs.NextWithin(jobs.RequeueSooner(ctrl.Result{RequeueAfter: r.requeueAfter(p.scope)}, inFlight).RequeueAfter), nil
}

// savepointRedeploy is upstream's savepoint redeploy (a new savepointRedeployNonce): the user
// chose the state to start from, so the running job is not stopped with a savepoint and its HA
// metadata is dropped (it would otherwise be recovered instead of the chosen path). Until the
// old cluster is gone nothing is recorded, so an operator restarted meanwhile sees the same
// request and carries on deleting; then the spec is recorded and deployed from
// initialSavepointPath under a new job id.
func (r *FlinkDeploymentReconciler) savepointRedeploy(ctx context.Context, p *pass) (jobs.PhaseResult, error) {
	if p.desired.Job == nil || !jobs.RedeployRequested(p.Deployed.Job, p.desired.Job) {
		return jobs.Next(), nil
	}
	st := p.status()
	gone, err := r.deleteCluster(ctx, p.scope, false)
	if err != nil {
		return jobs.PhaseResult{}, err
	}
	if !gone {
		return jobs.Acted(ctrl.Result{RequeueAfter: r.Intervals.ProgressCheck}), nil
	}
	st.JobManagerDeploymentStatus = flinkv1beta1.JobManagerMissing
	if info := st.JobStatus.SavepointInfo; info != nil && info.TriggerType == flinkv1beta1.SnapshotTriggerUpgrade {
		info.TriggerID, info.TriggerType, info.TriggerTimestamp = "", "", nil // its cluster is gone
	}
	st.Error = ""
	if err := r.startUpgrade(ctx, p.scope, p.desired); err != nil {
		return jobs.PhaseResult{}, err
	}
	res, err := r.deploy(ctx, p.scope, p.desired, p.desired.Job.InitialSavepointPath, false)
	return jobs.Acted(res), err
}
