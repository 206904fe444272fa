package webhook

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/validation"
)

// +kubebuilder:webhook:path=/validate-flink-apache-org-v1beta1-flinkbluegreendeployment,mutating=false,failurePolicy=fail,sideEffects=None,groups=flink.apache.org,resources=flinkbluegreendeployments,verbs=create;update,versions=v1beta1,name=vflinkbluegreendeployment-v1beta1.flink.apache.org,admissionReviewVersions=v1,timeoutSeconds=5

// blueGreenValidator validates a FlinkBlueGreenDeployment's options and its template with the
// FlinkDeployment rules, so a template that no child could run is refused at apply time.
type blueGreenValidator struct{ v *validation.Validator }

func (b *blueGreenValidator) ValidateCreate(_ context.Context, bg *flinkv1beta1.FlinkBlueGreenDeployment) (admission.Warnings, error) {
	return nil, invalid("FlinkBlueGreenDeployment", bg.Name, b.v.ValidateBlueGreenDeployment(bg))
}

func (b *blueGreenValidator) ValidateUpdate(_ context.Context, _, bg *flinkv1beta1.FlinkBlueGreenDeployment) (admission.Warnings, error) {
	if bg.DeletionTimestamp != nil {
		return nil, nil
	}
	return nil, invalid("FlinkBlueGreenDeployment", bg.Name, b.v.ValidateBlueGreenDeployment(bg))
}

func (b *blueGreenValidator) ValidateDelete(context.Context, *flinkv1beta1.FlinkBlueGreenDeployment) (admission.Warnings, error) {
	return nil, nil
}
