//go:build tools

// Package tools pins the local cluster's commands the tests build from the Go
// module proxy (no release downloads are reachable here): the Kubernetes control
// plane and kubectl, etcd and Rancher's local-path provisioner, in one module so
// that one build compiles what they share once (the Makefile's KUBE_BINARIES).
package tools

import (
	_ "github.com/rancher/local-path-provisioner"
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
