//go:build tools

// Package tools pins the kube-apiserver of the oldest Kubernetes the operator supports (the
// CSV's minKubeVersion), so envtest also runs against it.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
