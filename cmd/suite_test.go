package main

import (
	"os"
	"testing"

	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// shared is the one control plane of this package's tests (starting one takes seconds),
// started by the first test that needs it. Each test uses namespaces, Lease names and
// ConfigMaps of its own (testEnv(t).NewNamespace), and the managers it starts watch only its
// namespaces, so what one test leaves is never another's input.
var shared kubeenv.Shared

func TestMain(m *testing.M) {
	os.Exit(shared.Run(m))
}

// testEnv is the package's control plane, started on first use.
func testEnv(t testing.TB) *kubeenv.Env {
	t.Helper()
	return shared.Get(t)
}
