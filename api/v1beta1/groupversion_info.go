// Package v1beta1 contains the API types of the flink.apache.org/v1beta1 group:
// FlinkDeployment, FlinkSessionJob and FlinkStateSnapshot.
//
// The types are wire-compatible with the Apache Flink Kubernetes Operator: same
// group, version, kinds, JSON field names, enums and meaning, so that manifests
// written for the upstream operator apply unchanged. Where this operator adds
// something (standard status conditions on every kind, categories) it is an
// addition only; nothing upstream accepts is rejected by the schema.
//
// +kubebuilder:object:generate=true
// +groupName=flink.apache.org
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of these API types.
	GroupVersion = schema.GroupVersion{Group: "flink.apache.org", Version: "v1beta1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = &schemeBuilder{}

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// schemeBuilder is apimachinery's SchemeBuilder with controller-runtime's Register(objects...):
// controller-runtime's own builder is deprecated, since an API package should import
// apimachinery only.
type schemeBuilder struct{ builder runtime.SchemeBuilder }

// Register adds objs, of GroupVersion, to what AddToScheme registers.
func (b *schemeBuilder) Register(objs ...runtime.Object) {
	b.builder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, objs...)
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})
}

// AddToScheme registers every type registered so far (a pointer receiver, so that the package's
// AddToScheme, taken before the types' init functions run, sees them all).
func (b *schemeBuilder) AddToScheme(s *runtime.Scheme) error { return b.builder.AddToScheme(s) }
