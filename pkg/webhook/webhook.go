// Package webhook serves the admission webhooks of the three kinds: validation (the rules of
// pkg/validation, all violations reported at once with their field paths) and, for session
// jobs, defaulting. Served by controller-runtime's webhook server, whose certificate watcher
// reloads the serving certificate when its files change (OLM and cert-manager rotate them).
//
// The webhooks' markers set timeoutSeconds=5 (the API server's default is 10 s): with
// failurePolicy Fail, a hung operator then refuses writes of Flink resources in 5 s instead of
// holding each one for 10. Requests on an object that is being deleted skip the webhooks
// altogether through the matchConditions config/webhook/kustomization.yaml adds (controller-gen
// has no marker for them), so finalizers can be removed while no replica answers.
package webhook

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	extvalidator "github.com/flink-operator/flink-operator/pkg/extension/validator"
	"github.com/flink-operator/flink-operator/pkg/shard"
	"github.com/flink-operator/flink-operator/pkg/upstreamoptions"
	"github.com/flink-operator/flink-operator/pkg/validation"
)

// LabelTargetSession names a session job's FlinkDeployment, as upstream's mutating webhook
// sets it, so that `kubectl get flinksessionjobs -l target.session=<name>` lists a cluster's jobs.
const LabelTargetSession = "target.session"

// Setup registers the webhooks with the manager's webhook server. reader looks up the
// FlinkDeployments and session jobs that other resources refer to. custom, when given, are
// custom validators (pkg/extension/validator) whose field errors join the operator's own.
func Setup(mgr ctrl.Manager, v *validation.Validator, custom ...extvalidator.Validator) error {
	ext := customValidators(custom)
	// An operator instance serving one shard (kubernetes.operator.label.selector) caches its
	// own resources only, but admission is asked of whichever instance, for every shard's
	// resources: a reference to another shard's FlinkDeployment is found all the same.
	reader := shard.ReadThrough{Client: mgr.GetClient(), Live: mgr.GetAPIReader()}
	if err := ctrl.NewWebhookManagedBy(mgr, &flinkv1beta1.FlinkDeployment{}).
		WithValidator(&deploymentValidator{v: v, custom: ext}).Complete(); err != nil {
		return fmt.Errorf("set up FlinkDeployment webhook: %w", err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &flinkv1beta1.FlinkSessionJob{}).
		WithValidator(&sessionJobValidator{v: v, reader: reader, custom: ext}).
		WithDefaulter(sessionJobDefaulter{}).Complete(); err != nil {
		return fmt.Errorf("set up FlinkSessionJob webhook: %w", err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &flinkv1beta1.FlinkStateSnapshot{}).
		WithValidator(&snapshotValidator{v: v, reader: reader, custom: ext}).Complete(); err != nil {
		return fmt.Errorf("set up FlinkStateSnapshot webhook: %w", err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &flinkv1beta1.FlinkBlueGreenDeployment{}).
		WithValidator(&blueGreenValidator{v: v}).Complete(); err != nil {
		return fmt.Errorf("set up FlinkBlueGreenDeployment webhook: %w", err)
	}
	return nil
}

// customValidators combines the custom validators given to Setup (nil when none).
func customValidators(custom []extvalidator.Validator) extvalidator.Validator {
	switch len(custom) {
	case 0:
		return nil
	case 1:
		return custom[0]
	}
	return extvalidator.Func(func(ctx context.Context, req extvalidator.Request) (field.ErrorList, error) {
		var errs field.ErrorList
		for _, v := range custom {
			errs = append(errs, extvalidator.Run(ctx, v, req)...)
		}
		return errs, nil
	})
}

// askCustom asks the custom validators about obj (canaries are never validated); their field
// errors join the operator's own in one answer.
func askCustom(ctx context.Context, v extvalidator.Validator, op extvalidator.Operation, kind string, obj, old client.Object) field.ErrorList {
	if v == nil || validation.IsCanary(obj.GetLabels()) {
		return nil
	}
	return extvalidator.Run(ctx, v, extvalidator.Request{Operation: op, Kind: kind, Object: obj, OldObject: old})
}

// invalid turns violations into the API's Invalid error: one response listing all of them.
func invalid(kind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(schema.GroupKind{Group: flinkv1beta1.GroupVersion.Group, Kind: kind}, name, errs)
}

// +kubebuilder:webhook:path=/validate-flink-apache-org-v1beta1-flinkdeployment,mutating=false,failurePolicy=fail,sideEffects=None,groups=flink.apache.org,resources=flinkdeployments,verbs=create;update,versions=v1beta1,name=vflinkdeployment-v1beta1.flink.apache.org,admissionReviewVersions=v1,timeoutSeconds=5

type deploymentValidator struct {
	v      *validation.Validator
	custom extvalidator.Validator
}

func (d *deploymentValidator) ValidateCreate(ctx context.Context, dep *flinkv1beta1.FlinkDeployment) (admission.Warnings, error) {
	errs := append(d.v.ValidateDeployment(dep, nil), askCustom(ctx, d.custom, extvalidator.Create, "FlinkDeployment", dep, nil)...)
	return append(deprecations(dep), unhonouredOptions(dep.Spec.FlinkConfiguration)...), invalid("FlinkDeployment", dep.Name, errs)
}

func (d *deploymentValidator) ValidateUpdate(ctx context.Context, old, dep *flinkv1beta1.FlinkDeployment) (admission.Warnings, error) {
	if dep.DeletionTimestamp != nil {
		return nil, nil // finalizer removal must never be blocked
	}
	errs := append(d.v.ValidateDeployment(dep, old), askCustom(ctx, d.custom, extvalidator.Update, "FlinkDeployment", dep, old)...)
	return append(deprecations(dep), unhonouredOptions(dep.Spec.FlinkConfiguration)...), invalid("FlinkDeployment", dep.Name, errs)
}

func (d *deploymentValidator) ValidateDelete(context.Context, *flinkv1beta1.FlinkDeployment) (admission.Warnings, error) {
	return nil, nil
}

// unhonouredOptions warn about the Apache operator's options a resource sets that have no
// effect here, so that none is silently ignored (pkg/upstreamoptions says why for each). A
// configuration that does not flatten is refused by the validation rules.
func unhonouredOptions(cfg flinkv1beta1.FlinkConfiguration) admission.Warnings {
	conf, err := cfg.Flatten()
	if err != nil {
		return nil
	}
	return upstreamoptions.Warnings(conf)
}

// deprecations warn about what upstream deprecates (kubectl prints admission warnings).
func deprecations(dep *flinkv1beta1.FlinkDeployment) admission.Warnings {
	var w admission.Warnings
	switch dep.Spec.FlinkVersion {
	case flinkv1beta1.FlinkVersion1_15, flinkv1beta1.FlinkVersion1_16, flinkv1beta1.FlinkVersion1_17, flinkv1beta1.FlinkVersion1_18:
		w = append(w, fmt.Sprintf("spec.flinkVersion %s is deprecated; support ends in a future release", dep.Spec.FlinkVersion))
	}
	for _, c := range []struct {
		path string
		used bool
	}{
		{"spec.jobManager.resource", dep.Spec.JobManager != nil && dep.Spec.JobManager.Resource != nil},
		{"spec.taskManager.resource", dep.Spec.TaskManager != nil && dep.Spec.TaskManager.Resource != nil},
	} {
		if c.used {
			w = append(w, c.path+" is deprecated; use "+c.path+"s (Kubernetes resource requirements)")
		}
	}
	return w
}

// +kubebuilder:webhook:path=/validate-flink-apache-org-v1beta1-flinksessionjob,mutating=false,failurePolicy=fail,sideEffects=None,groups=flink.apache.org,resources=flinksessionjobs,verbs=create;update,versions=v1beta1,name=vflinksessionjob-v1beta1.flink.apache.org,admissionReviewVersions=v1,timeoutSeconds=5
// +kubebuilder:webhook:path=/mutate-flink-apache-org-v1beta1-flinksessionjob,mutating=true,failurePolicy=fail,sideEffects=None,groups=flink.apache.org,resources=flinksessionjobs,verbs=create;update,versions=v1beta1,name=mflinksessionjob-v1beta1.flink.apache.org,admissionReviewVersions=v1,timeoutSeconds=5

type sessionJobValidator struct {
	v      *validation.Validator
	reader client.Reader
	custom extvalidator.Validator
}

func (s *sessionJobValidator) validate(ctx context.Context, job, old *flinkv1beta1.FlinkSessionJob) (admission.Warnings, error) {
	if validation.IsCanary(job.Labels) {
		return nil, nil
	}
	var session *flinkv1beta1.FlinkDeployment
	if job.Spec.DeploymentName != "" {
		dep := &flinkv1beta1.FlinkDeployment{}
		err := s.reader.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: job.Spec.DeploymentName}, dep)
		switch {
		case err == nil:
			session = dep
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("look up session FlinkDeployment %s: %w", job.Spec.DeploymentName, err)
		}
	}
	w := unhonouredOptions(job.Spec.FlinkConfiguration)
	if session == nil && job.Spec.DeploymentName != "" {
		w = append(w, fmt.Sprintf("FlinkDeployment %s does not exist yet; the job starts once it does", job.Spec.DeploymentName))
	}
	op, oldObj := extvalidator.Create, client.Object(nil)
	if old != nil {
		op, oldObj = extvalidator.Update, old
	}
	errs := append(s.v.ValidateSessionJob(ctx, job, old, session), askCustom(ctx, s.custom, op, "FlinkSessionJob", job, oldObj)...)
	return w, invalid("FlinkSessionJob", job.Name, errs)
}

func (s *sessionJobValidator) ValidateCreate(ctx context.Context, job *flinkv1beta1.FlinkSessionJob) (admission.Warnings, error) {
	return s.validate(ctx, job, nil)
}

func (s *sessionJobValidator) ValidateUpdate(ctx context.Context, old, job *flinkv1beta1.FlinkSessionJob) (admission.Warnings, error) {
	if job.DeletionTimestamp != nil {
		return nil, nil
	}
	return s.validate(ctx, job, old)
}

func (s *sessionJobValidator) ValidateDelete(context.Context, *flinkv1beta1.FlinkSessionJob) (admission.Warnings, error) {
	return nil, nil
}

type sessionJobDefaulter struct{}

// Default sets the target.session label to the session's name.
func (sessionJobDefaulter) Default(_ context.Context, job *flinkv1beta1.FlinkSessionJob) error {
	if job.Spec.DeploymentName == "" {
		return nil
	}
	if job.Labels == nil {
		job.Labels = map[string]string{}
	}
	job.Labels[LabelTargetSession] = job.Spec.DeploymentName
	return nil
}

// +kubebuilder:webhook:path=/validate-flink-apache-org-v1beta1-flinkstatesnapshot,mutating=false,failurePolicy=fail,sideEffects=None,groups=flink.apache.org,resources=flinkstatesnapshots,verbs=create;update,versions=v1beta1,name=vflinkstatesnapshot-v1beta1.flink.apache.org,admissionReviewVersions=v1,timeoutSeconds=5

type snapshotValidator struct {
	v      *validation.Validator
	reader client.Reader
	custom extvalidator.Validator
}

func (s *snapshotValidator) validate(ctx context.Context, snap, old *flinkv1beta1.FlinkStateSnapshot) error {
	exists := func(kind flinkv1beta1.JobKind, name string) (bool, error) {
		var obj client.Object = &flinkv1beta1.FlinkDeployment{}
		if kind == flinkv1beta1.JobKindFlinkSessionJob {
			obj = &flinkv1beta1.FlinkSessionJob{}
		}
		err := s.reader.Get(ctx, client.ObjectKey{Namespace: snap.Namespace, Name: name}, obj)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
	op, oldObj := extvalidator.Create, client.Object(nil)
	if old != nil {
		op, oldObj = extvalidator.Update, old
	}
	errs := append(s.v.ValidateSnapshot(snap, exists), askCustom(ctx, s.custom, op, "FlinkStateSnapshot", snap, oldObj)...)
	return invalid("FlinkStateSnapshot", snap.Name, errs)
}

func (s *snapshotValidator) ValidateCreate(ctx context.Context, snap *flinkv1beta1.FlinkStateSnapshot) (admission.Warnings, error) {
	return disposalWarnings(snap), s.validate(ctx, snap, nil)
}

func (s *snapshotValidator) ValidateUpdate(ctx context.Context, old, snap *flinkv1beta1.FlinkStateSnapshot) (admission.Warnings, error) {
	if snap.DeletionTimestamp != nil {
		return nil, nil
	}
	return disposalWarnings(snap), s.validate(ctx, snap, old)
}

// disposalWarnings warn that a record of an existing savepoint (alreadyExists) disposes of that
// savepoint's data when it is deleted, as upstream does by default: whoever records a savepoint
// made elsewhere rarely means deleting the record to delete the data. The behaviour is kept
// (upstream compatibility); only an explicit disposeOnDelete: false silences the warning. An
// explicit true cannot be told from the default, since the API server fills in the schema's
// default (true) before admission.
func disposalWarnings(snap *flinkv1beta1.FlinkStateSnapshot) admission.Warnings {
	sp := snap.Spec.Savepoint
	if sp == nil || sp.AlreadyExists == nil || !*sp.AlreadyExists || (sp.DisposeOnDelete != nil && !*sp.DisposeOnDelete) {
		return nil
	}
	return admission.Warnings{fmt.Sprintf("spec.savepoint.disposeOnDelete is true (the default): deleting this FlinkStateSnapshot "+
		"disposes of the existing savepoint %s; set spec.savepoint.disposeOnDelete: false to keep the data", sp.Path)}
}

func (s *snapshotValidator) ValidateDelete(context.Context, *flinkv1beta1.FlinkStateSnapshot) (admission.Warnings, error) {
	return nil, nil
}

// The webhooks read FlinkDeployments and FlinkSessionJobs through the manager's cache (list and
// watch; a cached get is no request).
// +kubebuilder:rbac:groups=flink.apache.org,resources=flinkdeployments;flinksessionjobs,verbs=list;watch
