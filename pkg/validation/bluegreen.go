package validation

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/bluegreen"
	"github.com/flink-operator/flink-operator/pkg/native"
)

// ValidateBlueGreenDeployment checks a FlinkBlueGreenDeployment: its blue/green options, its
// ingress, and its template as the FlinkDeployment each child becomes, with the rules of
// ValidateDeployment and the field paths of the template (spec.template.spec...).
func (v *Validator) ValidateBlueGreenDeployment(bg *flinkv1beta1.FlinkBlueGreenDeployment) field.ErrorList {
	var errs field.ErrorList
	conf := field.NewPath("spec", "configuration")
	_, optErrs := bluegreen.ParseOptions(bg.Spec.Configuration)
	for _, e := range optErrs {
		errs = append(errs, field.Invalid(conf.Key(e.Key), e.Value, "not a duration: a number and a unit such as ms, s, min"))
	}
	if bg.Spec.Ingress != nil {
		dep := &flinkv1beta1.FlinkDeployment{}
		dep.Name, dep.Namespace = bg.Name, bg.Namespace
		dep.Spec.Ingress = bg.Spec.Ingress
		if _, err := native.BuildIngress(dep, native.DefaultRESTPort); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ingress", "template"), bg.Spec.Ingress.Template,
				strings.TrimPrefix(err.Error(), "spec.ingress.template: ")))
		}
	}

	// The longer child name bounds the resource's name.
	child := &flinkv1beta1.FlinkDeployment{Spec: *bg.Spec.Template.Spec.DeepCopy()}
	child.Name, child.Namespace = bg.Name+"-green", bg.Namespace
	for _, e := range v.ValidateDeployment(child, nil) {
		switch {
		case e.Field == "metadata.name":
			e.BadValue = bg.Name
			e.Detail = "the children are named <name>-blue and <name>-green, which must be " + nameRule
		case e.Field == "spec" || strings.HasPrefix(e.Field, "spec."):
			e.Field = "spec.template." + e.Field
		}
		errs = append(errs, e)
	}
	return errs
}
