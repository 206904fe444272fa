package validation

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/bluegreen"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
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
		if _, err := native.BuildIngress(ingressShape(bg), flinkconf.DefaultRESTPort); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ingress", "template"), bg.Spec.Ingress.Template,
				strings.TrimPrefix(err.Error(), "spec.ingress.template: ")))
		}
	}

	// The longer child name bounds the resource's name.
	child := greenChild(bg)
	for _, e := range v.ValidateDeployment(child, nil) {
		switch {
		case e.Field == "metadata.name":
			e.BadValue = bg.Name
			e.Detail = "the children are named <name>-blue and <name>-green, which must be " + nameRule
		case e.Field == "spec.ingress.template" && e.Type == field.ErrorTypeInvalid:
			e.BadValue = bg.Spec.Template.Spec.Ingress.Template // as written, not as the child gets it
		}
		errs = append(errs, templatePath(e))
	}
	return append(errs, v.blueGreenIngressPolicy(bg)...)
}

// ValidateBlueGreenPolicy applies the operator-wide policy alone (pod security level, Ingress
// annotations and hosts) to a FlinkBlueGreenDeployment: its Ingress and the children its
// template makes. The controller applies it before acting, so a resource admitted before the
// policy changed (or without the webhook) creates nothing the policy forbids.
func (v *Validator) ValidateBlueGreenPolicy(bg *flinkv1beta1.FlinkBlueGreenDeployment) field.ErrorList {
	var errs field.ErrorList
	for _, e := range v.validatePolicy(greenChild(bg)) {
		errs = append(errs, templatePath(e))
	}
	return append(errs, v.blueGreenIngressPolicy(bg)...)
}

// blueGreenIngressPolicy applies the Ingress policy to the resource's own Ingress (spec.ingress).
func (v *Validator) blueGreenIngressPolicy(bg *flinkv1beta1.FlinkBlueGreenDeployment) field.ErrorList {
	if bg.Spec.Ingress == nil {
		return nil
	}
	p, err := v.policy()
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec"), err)}
	}
	return ingressPolicy(field.NewPath("spec", "ingress"), ingressShape(bg), p)
}

// ingressShape is a FlinkDeployment with the resource's name, namespace and spec.ingress: the
// Ingress the controller builds for the resource is this one's, pointed at the active child.
func ingressShape(bg *flinkv1beta1.FlinkBlueGreenDeployment) *flinkv1beta1.FlinkDeployment {
	dep := &flinkv1beta1.FlinkDeployment{}
	dep.Name, dep.Namespace = bg.Name, bg.Namespace
	dep.Spec.Ingress = bg.Spec.Ingress
	return dep
}

// greenChild is the green child as the controller creates it (the longer name; its own ingress
// with the color prefix).
func greenChild(bg *flinkv1beta1.FlinkBlueGreenDeployment) *flinkv1beta1.FlinkDeployment {
	child := &flinkv1beta1.FlinkDeployment{Spec: *bg.Spec.Template.Spec.DeepCopy()}
	child.Name, child.Namespace = bg.Name+"-green", bg.Namespace
	if child.Spec.Ingress != nil {
		child.Spec.Ingress.Template = bluegreen.ChildIngressTemplate(bluegreen.Green, child.Spec.Ingress.Template)
	}
	return child
}

// templatePath moves an error about a child's spec to the template it comes from.
func templatePath(e *field.Error) *field.Error {
	if e.Field == "spec" || strings.HasPrefix(e.Field, "spec.") {
		e.Field = "spec.template." + e.Field
	}
	return e
}
