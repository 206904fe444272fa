package native

import (
	"os"
	"testing"

	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// shared is the one control plane of this package's tests that need an API server, started by
// the first of them (the golden and table tests run without one). Each works in a namespace of
// its own (testEnv(t).NewNamespace).
var shared kubeenv.Shared

func TestMain(m *testing.M) {
	os.Exit(shared.Run(m))
}

// testEnv is the package's control plane, started on first use.
func testEnv(t testing.TB) *kubeenv.Env {
	t.Helper()
	return shared.Get(t)
}
