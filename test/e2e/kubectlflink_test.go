//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// buildPlugin builds cmd/kubectl-flink into a directory of the test, as a user installs it.
func buildPlugin(t *testing.T) string {
	t.Helper()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "kubectl-flink")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/kubectl-flink")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build ./cmd/kubectl-flink: %s", out)
	return bin
}

// pluginIn returns how to run the built plugin against the local cluster in namespace ns: its
// stdout, and an error carrying its stderr when it exits non-zero.
func pluginIn(ctx context.Context, bin, ns string) func(args ...string) (string, error) {
	return func(args ...string) (string, error) {
		var stderr strings.Builder
		cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", env.Cluster.Kubeconfig, "-n", ns}, args...)...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return string(out), fmt.Errorf("%w: %s", err, stderr.String())
		}
		return string(out), nil
	}
}

// TestKubectlFlinkPlugin runs the built kubectl-flink against real Flink on the local cluster:
// status shows the job RUNNING with the id Flink's REST API reports, and the latest checkpoint
// Flink reports (asked through the API server's service proxy); savepoint --wait prints the
// path Flink's checkpoint statistics report as the latest savepoint, and it is on disk; suspend
// and resume patch the spec and the operator carries them out, the resumed job restoring that
// savepoint; logs prints the JobManager's log; explain-scaling says there is no decision;
// adopt-check keeps the running deployment, writing nothing.
func TestKubectlFlinkPlugin(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	bin := buildPlugin(t)
	dep := example(t, "examples/checkpoint-ha/checkpoint-ha.yaml", "e2e-kubectl-flink")
	dep.Name = "plugin"
	key := client.ObjectKeyFromObject(dep)
	require.NoError(t, env.Client.Create(ctx, dep))
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &flinkv1beta1.FlinkDeployment{ObjectMeta: dep.ObjectMeta})
	})
	d := waitFor(t, key, "Ready and RUNNING", 4*time.Minute, readyAndRunning)
	jobID := d.Status.JobStatus.JobID
	allTasksRunning(t, key, jobID)
	run := pluginIn(ctx, bin, key.Namespace)

	t.Run("status shows the job Flink runs", func(t *testing.T) {
		jobs, err := flinkREST(t, key).JobsOverview(ctx)
		require.NoError(t, err)
		var running []string
		for _, j := range jobs {
			if j.State == flink.JobState("RUNNING") {
				running = append(running, j.ID)
			}
		}
		require.Equal(t, []string{jobID}, running, "Flink runs the job the status names")
		checkpoint := completedCheckpoint(t, key, jobID)
		out, err := run("status", key.Name)
		require.NoError(t, err)
		logf(t, "kubectl flink status:\n%s", out)
		assert.Contains(t, out, "RUNNING  id "+running[0])
		// The status records no checkpoint (snapshot resources mode); the plugin asked Flink
		// through the API server's service proxy for its latest completed one.
		assert.Regexp(t, `Last checkpoint:\s+\S+ ago\s+file:\S*/checkpoints/`+jobID+`/chk-\d+`, out)
		assert.NotContains(t, out, "not reached through the API server")
		logf(t, "Flink's latest completed checkpoint before: %s", checkpoint.ExternalPath)
		assert.Regexp(t, `Ready\s+True`, out)
		assert.Contains(t, out, "STABLE")
	})

	var savepoint string
	t.Run("savepoint --wait prints the path Flink reports", func(t *testing.T) {
		out, err := run("savepoint", key.Name, "--wait", "--timeout", "4m")
		require.NoError(t, err, out)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		savepoint = lines[len(lines)-1]
		logf(t, "kubectl flink savepoint --wait:\n%s", out)
		require.Regexp(t, regexp.MustCompile(`^file:`), savepoint)
		stats, err := flinkREST(t, key).CheckpointStatistics(ctx, jobID)
		require.NoError(t, err)
		require.NotNil(t, stats.Latest.Savepoint, "Flink reports a savepoint")
		assert.Equal(t, localPath(stats.Latest.Savepoint.ExternalPath), localPath(savepoint), "the path printed is Flink's latest savepoint")
		_, err = os.Stat(localPath(savepoint))
		require.NoError(t, err, "the savepoint is on disk")

		out, err = run("status", key.Name)
		require.NoError(t, err)
		assert.Contains(t, out, savepoint, "status shows the savepoint")
	})

	t.Run("suspend and resume", func(t *testing.T) {
		out, err := run("suspend", key.Name)
		require.NoError(t, err)
		assert.Equal(t, "flinkdeployment "+key.Namespace+"/"+key.Name+" patched: spec.job.state: running -> suspended\n", out)
		waitFor(t, key, "SUSPENDED", 3*time.Minute, func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.LifecycleState == flinkv1beta1.LifecycleSuspended
		})
		out, err = run("status", key.Name)
		require.NoError(t, err)
		assert.Contains(t, out, "SUSPENDED")
		assert.Contains(t, out, "Suspend", "the suspend is among the recent operations")

		out, err = run("resume", key.Name)
		require.NoError(t, err)
		assert.Equal(t, "flinkdeployment "+key.Namespace+"/"+key.Name+" patched: spec.job.state: suspended -> running\n", out)
		d := waitFor(t, key, "resumed", 4*time.Minute, func(d *flinkv1beta1.FlinkDeployment) bool {
			return readyAndRunning(d) && d.Status.JobStatus.JobID != jobID
		})
		jobID = d.Status.JobStatus.JobID
		restored := restoredFrom(t, key, jobID)
		require.True(t, restored.IsSavepoint)
		logf(t, "resumed job %s from %s (the plugin's savepoint was %s)", jobID, restored.ExternalPath, savepoint)
	})

	t.Run("logs prints the JobManager's log", func(t *testing.T) {
		out, err := run("logs", key.Name, "--tail", "200")
		require.NoError(t, err)
		assert.Contains(t, out, "org.apache.flink")
		assert.Greater(t, strings.Count(out, "\n"), 10)
	})

	t.Run("explain-scaling and adopt-check", func(t *testing.T) {
		out, err := run("explain-scaling", key.Name)
		require.NoError(t, err)
		assert.Contains(t, out, "has no scaling decision (status.scaling): the autoscaler is not enabled for it")

		before := &flinkv1beta1.FlinkDeployment{}
		require.NoError(t, env.Client.Get(ctx, key, before))
		out, err = run("adopt-check")
		require.NoError(t, err)
		logf(t, "kubectl flink adopt-check:\n%s", out)
		assert.Contains(t, out, "flinkdeployment "+key.Namespace+"/"+key.Name+": KEEP")
		after := &flinkv1beta1.FlinkDeployment{}
		require.NoError(t, env.Client.Get(ctx, key, after))
		assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "adopt-check wrote nothing")
	})

	t.Run("errors exit non-zero and say what to do", func(t *testing.T) {
		_, err := run("status", "no-such-deployment")
		var exitErr *exec.ExitError
		require.ErrorAs(t, err, &exitErr)
		assert.Equal(t, 1, exitErr.ExitCode())
		assert.Contains(t, err.Error(), "flinkdeployment "+key.Namespace+"/no-such-deployment not found")
	})
}
