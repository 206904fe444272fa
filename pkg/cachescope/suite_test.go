package cachescope

import (
	"os"
	"testing"

	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// shared is the control plane of the name index's test, started on first use; the other tests
// run without one.
var shared kubeenv.Shared

func TestMain(m *testing.M) {
	os.Exit(shared.Run(m))
}

func testEnv(t testing.TB) *kubeenv.Env {
	t.Helper()
	return shared.Get(t)
}
