package reconciler

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/redact"
)

// The job-resource skeleton: what a reconcile of a FlinkDeployment and of a FlinkSessionJob
// does alike (upstream's AbstractJobReconciler and ReconciliationUtils), written once. Each
// kind's scope embeds a jobRecord of its spec type and answers jobResource; the status write,
// the error and validation reports, the recorded spec and the finalizer are the skeleton's.

// jobResource is one reconcile's scope of a job resource, as the skeleton sees it.
type jobResource interface {
	// Object is the resource, with the status being built.
	Object() client.Object
	// Stored is the resource as last read or written: status writes are patches against it.
	Stored() client.Object
	// Statuses are the status being built and the stored one, for comparison and listeners.
	Statuses() (current, stored any)
	// Common is the status being built.
	Common() *flinkv1beta1.CommonStatus
	// MarkStored records the resource as it is now as the stored one (after a write).
	MarkStored()
	// Redactor masks the resource's secrets in status messages.
	Redactor() *redact.Redactor
}

// JobRecord is the last reconciled spec of a job resource, as one reconcile tracks it.
type JobRecord[S any] struct {
	// Deployed is the last reconciled spec (nil before the first deployment): the target the
	// spec is compared with.
	Deployed *S
	// FirstDeployment: deployed is the very first spec recorded (nothing ran before it).
	FirstDeployment bool
	// JobOf is the job part of a spec (nil for a session cluster).
	JobOf func(*S) **flinkv1beta1.JobSpec
}

// Read decodes the last reconciled spec of st, and adopts the generation an upstream operator
// recorded there.
func (r *JobRecord[S]) Read(st *flinkv1beta1.CommonStatus) {
	var spec S
	if found, first, err := flinkv1beta1.DecodeReconciledSpec(st.ReconciliationStatus.LastReconciledSpec, &spec); err == nil && found {
		r.Deployed, r.FirstDeployment = &spec, first
		adoptObservedGeneration(st)
	}
}

// Record writes spec as the last reconciled spec in the given reconciliation state. The trigger
// nonces of the spec recorded before are kept: a savepoint or checkpoint asked for together
// with an upgrade is then still asked for once the upgraded job runs (upstream keeps them for
// the same reason in updateStatusForSpecReconciliation).
func (r *JobRecord[S]) Record(st *flinkv1beta1.CommonStatus, generation int64, spec S, state flinkv1beta1.ReconciliationState) error {
	if r.Deployed != nil {
		job := r.JobOf(&spec)
		*job = withRecordedTriggerNonces(*r.JobOf(r.Deployed), *job)
	}
	return r.write(st, generation, spec, state, r.Deployed == nil)
}

// write writes spec, as it is, as the last reconciled spec in the given state; first says it
// is still the first spec deployed (upstream's resource_metadata.firstDeployment).
func (r *JobRecord[S]) write(st *flinkv1beta1.CommonStatus, generation int64, spec S, state flinkv1beta1.ReconciliationState, first bool) error {
	raw, err := flinkv1beta1.EncodeReconciledSpec(spec, first)
	if err != nil {
		return err
	}
	r.FirstDeployment = first
	rs := &st.ReconciliationStatus
	rs.LastReconciledSpec, rs.State = raw, state
	rs.ReconciliationTimestamp = time.Now().UnixMilli()
	st.ObservedGeneration = generation
	deployed := spec
	r.Deployed = &deployed
	return nil
}

// Persist writes the status of s when it changed: the write-ahead log entry must be stored
// before the action it describes. A merge patch of the status subresource with an optimistic
// lock (patchStatus); compute brings the lifecycle state and conditions up to date first.
func (o *ReconcilerOptions) Persist(ctx context.Context, c client.Client, s jobResource, compute func()) error {
	compute()
	st := s.Common()
	st.Error = s.Redactor().String(st.Error)
	current, stored := s.Statuses()
	if EqualStatus(stored, current) {
		return nil
	}
	obj, before := s.Object(), s.Stored()
	if err := PatchStatus(ctx, c, obj, before); err != nil {
		return err
	}
	StatusWritten(ctx, o.Listener, obj, stored, current, o.SecretKeyPatterns)
	o.ownWrites().wrote(obj.GetUID(), before.GetResourceVersion(), obj.GetResourceVersion())
	s.MarkStored()
	return nil
}

// Finish records a reconcile's error in the status and as an event, then writes the status
// (persist computes it, once). A write conflict is returned as it is: the reconcile runs again
// on a fresh read, and this one's status must not be written.
func Finish(rec record.EventRecorder, s jobResource, reconcileErr error, persist func() error) error {
	if apierrors.IsConflict(reconcileErr) {
		return reconcileErr
	}
	if reconcileErr != nil {
		s.Common().Error = flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionReconciliation, flinkv1beta1.ErrorReasonReconcileFailed, reconcileErr.Error())
		reason := ReasonError
		if _, refused := clients.IsRESTServiceRefused(reconcileErr); refused {
			reason = clients.ReasonRESTServiceRefused
		}
		rec.Event(s.Object(), corev1.EventTypeWarning, reason, reconcileErr.Error())
	}
	if err := persist(); err != nil {
		if reconcileErr != nil {
			return fmt.Errorf("%w (and writing status failed: %v)", reconcileErr, err)
		}
		return err
	}
	return reconcileErr
}

// Judge applies the result of validation: on violations the error is recorded in the status
// and reported, and the reconcile goes on with the last deployed spec if there is one (so the
// resource keeps being observed), else stops; a validation error that no longer holds is
// cleared.
func Judge[S any](ctx context.Context, rec record.EventRecorder, s jobResource, errs field.ErrorList, current, deployed *S) (*S, bool) {
	st := s.Common()
	if len(errs) == 0 {
		if IsValidationError(st.Error) {
			st.Error = ""
		}
		return current, true
	}
	msg := errs.ToAggregate().Error()
	st.Error = flinkv1beta1.NewStatusError(flinkv1beta1.ExceptionValidation, flinkv1beta1.ErrorReasonInvalidSpec, msg)
	rec.Event(s.Object(), corev1.EventTypeWarning, ReasonValidationError, msg)
	log.FromContext(ctx).Info("invalid spec", "errors", msg)
	if deployed == nil {
		return nil, false
	}
	return deployed, true
}

// AddFinalizer adds the kind's finalizer to a resource that lacks it, so the resource is not
// gone before its cleanup ran, and records the write as the reconciler's own. The status is
// then patched against the updated object.
func (o *ReconcilerOptions) AddFinalizer(ctx context.Context, c client.Client, s jobResource, finalizer string) error {
	obj := s.Object()
	if controllerutil.ContainsFinalizer(obj, finalizer) {
		return nil
	}
	controllerutil.AddFinalizer(obj, finalizer)
	before := obj.GetResourceVersion()
	if err := c.Update(ctx, obj); err != nil {
		return fmt.Errorf("add finalizer: %w", err)
	}
	o.ownWrites().wrote(obj.GetUID(), before, obj.GetResourceVersion())
	s.MarkStored()
	return nil
}

// Release removes the finalizer of a resource whose cleanup is done, forgetting what the
// reconciler tracked of it.
func (o *ReconcilerOptions) Release(ctx context.Context, c client.Client, obj client.Object, finalizer string) error {
	if o.Lifecycle != nil {
		o.Lifecycle.Forget(obj.GetUID())
	}
	o.ownWrites().forget(obj.GetUID())
	controllerutil.RemoveFinalizer(obj, finalizer)
	if err := c.Update(ctx, obj); err != nil {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	return nil
}

// ClusterConfig is the configuration of a cluster as every reconciler reads it: the effective
// configuration Flink gets (its REST port and SSL settings among them) plus the operator
// options of the user's configuration, from the operator's default configuration in force.
// The FlinkDeployment, the session jobs on it and the snapshots of its jobs all address the
// cluster from this one composition.
func ClusterConfig(dep *flinkv1beta1.FlinkDeployment, defaults flinkconf.Defaults) (flinkconf.Config, error) {
	effective, err := flinkconf.EffectiveConfig(dep, defaults, flinkconf.BuildOptions{})
	if err != nil {
		return nil, err
	}
	user, err := flinkconf.UserConfig(dep, defaults)
	if err != nil {
		return nil, err
	}
	return flinkconf.WithOptions(effective, user), nil
}

// RecordNonces stores the trigger nonces of desired in the last reconciled spec, so the same
// nonce never triggers twice; the rest of the reconciled spec, its state and its timestamp (the
// job id derives from it) are kept. Taking a nonce deploys nothing: the first deployment stays
// the first until an upgrade, as upstream records it.
func (r *JobRecord[S]) RecordNonces(st *flinkv1beta1.CommonStatus, generation int64, desired *S) error {
	if r.Deployed == nil {
		return nil
	}
	spec := *r.Deployed
	recorded, wanted := r.JobOf(&spec), *r.JobOf(desired)
	if *recorded == nil || wanted == nil {
		return nil
	}
	job := (*recorded).DeepCopy()
	job.SavepointTriggerNonce, job.CheckpointTriggerNonce = wanted.SavepointTriggerNonce, wanted.CheckpointTriggerNonce
	*recorded = job
	rs := &st.ReconciliationStatus
	ts := rs.ReconciliationTimestamp
	if err := r.write(st, generation, spec, rs.State, r.FirstDeployment); err != nil {
		return err
	}
	rs.ReconciliationTimestamp = ts
	return nil
}

func IsTerminal(s flinkv1beta1.JobStatusState) bool {
	return s == flinkv1beta1.JobStatusFinished || s == flinkv1beta1.JobStatusFailed || s == flinkv1beta1.JobStatusCanceled
}

// adoptObservedGeneration fills in status.observedGeneration from the generation an upstream
// operator recorded in lastReconciledSpec, when the status has none (upstream 1.7 records it
// only there). Without it an adopted, unchanged resource would never be Ready: Ready needs the
// observed generation, and only a spec change would write it.
func adoptObservedGeneration(st *flinkv1beta1.CommonStatus) {
	if st.ObservedGeneration == 0 {
		st.ObservedGeneration = flinkv1beta1.ReconciledGeneration(st.ReconciliationStatus.LastReconciledSpec)
	}
}

// withRecordedTriggerNonces is job with the savepoint and checkpoint trigger nonces of the job
// recorded before (recorded): the spec an upgrade records must not mark a trigger nonce changed
// together with it as handled, or the snapshot it asks for would never be taken (upstream's
// ReconciliationUtils.updateStatusForSpecReconciliation keeps the old nonces for this reason).
// The nonces are recorded once the snapshot is asked for of the running job (recordNonces).
func withRecordedTriggerNonces(recorded, job *flinkv1beta1.JobSpec) *flinkv1beta1.JobSpec {
	if recorded == nil || job == nil {
		return job
	}
	job = job.DeepCopy()
	job.SavepointTriggerNonce, job.CheckpointTriggerNonce = recorded.SavepointTriggerNonce, recorded.CheckpointTriggerNonce
	return job
}
