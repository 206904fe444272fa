package controllers

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/native"
)

// A FlinkDeployment reconcile is observe → validate (reconcileDeployment), then the phases
// below, in order, then the status (finish). Each phase looks at the status and what observe
// found, and either acts, which ends the reconcile (the next one starts again from the top
// with what the action recorded), or leaves the resource to the phases after it. Every action
// is idempotent and records its inputs in the status before it touches anything (write-ahead),
// so an operator restarted at any moment takes the same path again.

// phase is one step of the reconcile of a validated spec.
type phase struct {
	name string
	run  func(ctx context.Context, p *pass) (phaseResult, error)
}

// phaseResult is what a phase did: acted (done), or not, with when it wants to look again.
type phaseResult struct {
	// done: the phase acted; the phases after it wait for the next reconcile.
	done bool
	// result is the reconcile's result when done; otherwise its RequeueAfter, when set, is the
	// latest time this phase wants the resource looked at again.
	result ctrl.Result
}

// next leaves the resource to the following phases.
func next() phaseResult { return phaseResult{} }

// nextWithin leaves the resource to the following phases, to be looked at again within d
// (ignored unless positive).
func nextWithin(d time.Duration) phaseResult {
	return phaseResult{result: ctrl.Result{RequeueAfter: max(d, 0)}}
}

// acted ends the reconcile with res.
func acted(res ctrl.Result) phaseResult { return phaseResult{done: true, result: res} }

// runPhases runs phases in order until one acts or fails, as cluster-api's doReconcile runs a
// machine's phases; unlike there, a phase that acts ends the reconcile, since each phase here
// is for a situation the ones before it did not have to handle. The phases that let the
// reconcile go on have their looks-again merged: the soonest wins. An error ends the
// reconcile; its result is dropped, as controller-runtime drops it.
func runPhases(ctx context.Context, p *pass, phases []phase) (ctrl.Result, error) {
	var res ctrl.Result
	for _, ph := range phases {
		out, err := ph.run(ctx, p)
		if err != nil {
			log.FromContext(ctx).V(1).Info("phase failed", "phase", ph.name)
			return ctrl.Result{}, err
		}
		if out.done {
			log.FromContext(ctx).V(1).Info("phase acted", "phase", ph.name)
			return out.result, nil
		}
		res = requeueSooner(res, out.result.RequeueAfter)
	}
	return res, nil
}

// pass is what the phases of one reconcile share: the scope, the spec reconciled to (the
// validated spec with the autoscaler's overrides) and, for the phases of an unchanged spec,
// its effective configuration.
type pass struct {
	*scope
	desired *flinkv1beta1.FlinkDeploymentSpec
	conf    native.Config
}

// specPhases are the phases of the reconcile of a validated spec, in the order they are tried.
func (r *FlinkDeploymentReconciler) specPhases() []phase {
	return []phase{
		// Nothing deployed yet: deploy, restoring initialSavepointPath, unless created suspended.
		{"firstDeployment", r.firstDeployment},
		// A new savepointRedeployNonce, in any state: the cluster and its HA metadata go without
		// a savepoint, then the spec is deployed from initialSavepointPath.
		{"savepointRedeploy", r.savepointRedeploy},
		// ROLLING_BACK with the spec unchanged: the rollback goes on (a changed spec abandons it,
		// in recordChange).
		{"continueRollback", r.rollingBack},
		// ROLLED_BACK: a lost JobManager is recovered by rolling back again; a spec set back to
		// the stable one is recorded without a restart.
		{"rolledBack", r.rolledBack},
		// A settled deployment whose spec did not change: unchangedPhases.
		{"unchanged", r.unchanged},
		// The spec changed: record it as the upgrade target (write-ahead), unless it is scaled in
		// place or a pending savepoint is waited for first.
		{"recordChange", r.recordChange},
		// Carry the recorded upgrade out: planUpgrade decides how the job stops and what is
		// restored, jobStop stops it, the cluster goes, the target is deployed (continueUpgrade).
		{"upgrade", r.upgrade},
	}
}

// unchangedPhases look after a settled deployment whose spec did not change, in this order.
func (r *FlinkDeploymentReconciler) unchangedPhases() []phase {
	return []phase{
		// Not healthy within kubernetes.operator.deployment.readiness.timeout after a change, with
		// rollback enabled: ROLLING_BACK to the last stable spec, through the upgrade steps keeping
		// HA metadata, then ROLLED_BACK (the failed spec stays the last reconciled one until the
		// spec changes). When it cannot be rolled back, the reason is reported and the rest goes on.
		{"rollback", r.rollbackNotReady},
		// A missing JobManager Deployment (kubernetes.operator.jm-deployment-recovery.enabled) is
		// deployed again through the upgrade steps, restoring HA metadata.
		{"recoverJobManager", r.recoverJobManager},
		// A job the health check found unhealthy is restarted from its HA metadata.
		{"restartUnhealthy", r.restartUnhealthy},
		// The JobManager of a job that ended goes after kubernetes.operator.jm-deployment.shutdown-ttl.
		{"shutdownTTL", r.shutdownAfterTTL},
		// A FAILED job with kubernetes.operator.job.restart.failed is upgraded to the same spec,
		// restoring what its upgrade mode keeps.
		{"restartFailed", r.restartFailed},
		// Manual (nonce) and periodic savepoints and checkpoints of a running job; look again
		// when one may be done, or at the interval the cluster's state asks for.
		{"snapshots", r.takeSnapshots},
	}
}
