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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of these API types.
	GroupVersion = schema.GroupVersion{Group: "flink.apache.org", Version: "v1beta1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
