//go:build e2e

package benchflink

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flink-operator/flink-operator/test/podnet"
)

func TestMain(m *testing.M) {
	// Pods in a network namespace of the test's own, as the e2e suite's: no port of a
	// JobManager meets one of another suite running on the machine.
	podnet.Enter("benchflink", false)
	ctrllog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// TestBenchFlinkSmoke runs the benchmark once with one job and checks that it measured every
// flow and that the flows did what they are said to (on Flink's REST answers), not how fast.
func TestBenchFlinkSmoke(t *testing.T) {
	dir, err := os.MkdirTemp("", "benchflink-smoke-")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{Jobs: 1, Runs: 1, Dir: dir, Log: os.Stderr})
	require.NoError(t, err, "state and logs in %s", dir)
	t.Log("\n" + res.Table())
	require.NoError(t, res.WriteJSON(filepath.Join(dir, "result.json")))

	flows := map[string]Sample{}
	for _, f := range res.Flows {
		require.Len(t, f.Samples, 1, f.Name)
		flows[f.Name] = f.Samples[0]
	}
	require.Len(t, flows, 5, "every flow measured: %v", flows)
	for name, s := range flows {
		require.Positive(t, s.Total, name)
		require.Positive(t, s.Flink, name)
		require.Positive(t, s.Overhead, name)
		require.NotEmpty(t, s.JobID, name)
	}
	for _, name := range []string{FlowCreate, FlowSavepointUpgrade, FlowLastStateUpgrade, FlowResume} {
		require.Positive(t, flows[name].FlinkStart, "%s: JobManager start to RUNNING", name)
		require.Positive(t, flows[name].JobStart, "%s: INITIALIZING to RUNNING", name)
	}
	for _, name := range []string{FlowSavepointUpgrade, FlowSuspend} {
		require.Positive(t, flows[name].FlinkStop, "%s: stop-with-savepoint", name)
		require.NotEmpty(t, flows[name].Savepoint, "%s: Flink reported the stop's savepoint", name)
	}

	// The timeline saw every step of each flow's objects: a flow that replaces a cluster went
	// through all eight, a create and a resume through the new cluster's three, a suspend
	// through the old cluster's five.
	spanNames := func(s Sample) []string {
		var names []string
		for _, sp := range s.Spans {
			names = append(names, sp.Name)
		}
		return names
	}
	stopSpans := []string{SpanOperatorStop, SpanCascade, SpanFlinkShutdown, SpanPodsGone, SpanDeploymentGone}
	startSpans := []string{SpanOperatorStart, SpanControllers, SpanSchedulerAndNode}
	require.Equal(t, startSpans, spanNames(flows[FlowCreate]), FlowCreate)
	require.Equal(t, startSpans, spanNames(flows[FlowResume]), FlowResume)
	require.Equal(t, stopSpans, spanNames(flows[FlowSuspend]), FlowSuspend)
	require.Equal(t, append(stopSpans, startSpans...), spanNames(flows[FlowSavepointUpgrade]), FlowSavepointUpgrade)
	require.Equal(t, append(stopSpans, startSpans...), spanNames(flows[FlowLastStateUpgrade]), FlowLastStateUpgrade)

	upgrade := flows[FlowSavepointUpgrade]
	require.True(t, upgrade.RestoredSavepoint)
	require.Equal(t, upgrade.Savepoint, upgrade.Restored, "the upgraded job restored the upgrade's savepoint")
	require.NotEqual(t, flows[FlowCreate].JobID, upgrade.JobID, "a savepoint upgrade submits a new job")

	lastState := flows[FlowLastStateUpgrade]
	require.NotEmpty(t, lastState.Restored)
	require.False(t, lastState.RestoredSavepoint, "last-state restores a checkpoint")
	require.Equal(t, upgrade.JobID, lastState.JobID, "last-state through HA keeps the job id")

	resume := flows[FlowResume]
	require.True(t, resume.RestoredSavepoint)
	require.Equal(t, flows[FlowSuspend].Savepoint, resume.Restored, "the resumed job restored the suspend's savepoint")
	_ = os.RemoveAll(dir)
}
