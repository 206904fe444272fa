package jobs

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// PhaseOf is one step of a reconcile whose phases share P: a FlinkDeployment's pass, a
// FlinkSessionJob's jobPass (controllers/flinksessionjob/phases.go).
type PhaseOf[P any] struct {
	Name string
	Run  func(ctx context.Context, p P) (PhaseResult, error)
}

// PhaseResult is what a phase did: acted (done), or not, with when it wants to look again.
type PhaseResult struct {
	// Done: the phase acted; the phases after it wait for the next reconcile.
	Done bool
	// Result is the reconcile's result when done; otherwise its RequeueAfter, when set, is the
	// latest time this phase wants the resource looked at again.
	Result ctrl.Result
}

// Next leaves the resource to the following phases.
func Next() PhaseResult { return PhaseResult{} }

// NextWithin leaves the resource to the following phases, to be looked at again within d
// (ignored unless positive).
func NextWithin(d time.Duration) PhaseResult {
	return PhaseResult{Result: ctrl.Result{RequeueAfter: max(d, 0)}}
}

// Acted ends the reconcile with res.
func Acted(res ctrl.Result) PhaseResult { return PhaseResult{Done: true, Result: res} }

// RunPhases runs phases in order until one acts or fails, as cluster-api's doReconcile runs a
// machine's phases; unlike there, a phase that acts ends the reconcile, since each phase here
// is for a situation the ones before it did not have to handle. The phases that let the
// reconcile go on have their looks-again merged: the soonest wins. An error ends the
// reconcile; its result is dropped, as controller-runtime drops it.
func RunPhases[P any](ctx context.Context, p P, phases []PhaseOf[P]) (ctrl.Result, error) {
	var res ctrl.Result
	for _, ph := range phases {
		out, err := ph.Run(ctx, p)
		if err != nil {
			log.FromContext(ctx).V(1).Info("phase failed", "phase", ph.Name)
			return ctrl.Result{}, err
		}
		if out.Done {
			log.FromContext(ctx).V(1).Info("phase acted", "phase", ph.Name)
			return out.Result, nil
		}
		res = RequeueSooner(res, out.Result.RequeueAfter)
	}
	return res, nil
}

// RequeueSooner picks the earlier of two requeues (zero means none).
func RequeueSooner(res ctrl.Result, d time.Duration) ctrl.Result {
	if d > 0 && (res.RequeueAfter == 0 || d < res.RequeueAfter) {
		res.RequeueAfter = d
	}
	return res
}

// SettledPhase is the last phase of a job resource's reconcile: reached only when no phase
// before it acted, it says so in the operator's log, as "[namespace/name] Resource fully
// reconciled, nothing to do", the line the Apache operator writes (its e2e suite and the
// runbooks written for it look for it, e.g. to see a new leader take a resource over).
func SettledPhase[P any](key func(P) client.ObjectKey) PhaseOf[P] {
	return PhaseOf[P]{Name: "settled", Run: func(ctx context.Context, p P) (PhaseResult, error) {
		k := key(p)
		log.FromContext(ctx).Info(fmt.Sprintf("[%s/%s] Resource fully reconciled, nothing to do", k.Namespace, k.Name))
		return Next(), nil
	}}
}
