// Package crd tests the project's CRDs on a real kube-apiserver: upstream manifests apply
// unchanged, invalid ones are rejected with the field named, and kubectl works with them.
package crd

import (
	"os"
	"testing"

	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// env is shared by the tests of this package: starting a control plane takes seconds,
// and every test works in namespaces of its own.
var env *kubeenv.Env

func TestMain(m *testing.M) {
	os.Exit(kubeenv.RunWith(m, &env))
}
