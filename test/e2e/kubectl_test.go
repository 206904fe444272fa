//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-operator/flink-operator/test/kubeenv"
	"github.com/flink-operator/flink-operator/test/localenv"
	"github.com/flink-operator/flink-operator/test/nodeagent"
	"github.com/flink-operator/flink-operator/test/wait"
)

// shellImage runs the machine's /bin/sh as the container's entrypoint (TestMain gives the node
// agent shellImages), so a pod can be a shell script.
const shellImage = "nodeagent.local/shell:1"

var shellImages = map[string]nodeagent.ProcessImage{shellImage: {Binary: "/bin/sh"}}

// countingScript prints two lines naming its run (counted in an emptyDir, which outlives
// restarts), crashes on its first run, and on later ones echoes what is written to a FIFO.
// The FIFO is held open for reading and writing: reopened for each line, a read could find
// the writer of the line before closing and then end of file, and the script, PID 1 of its
// container, would exit and take the writer (the exec'd shell) with it (exit 137).
const countingScript = `n=$(cat /tmp/state/runs 2>/dev/null || echo 0); n=$((n+1)); echo $n > /tmp/state/runs
[ -p /tmp/state/fifo ] || mkfifo /tmp/state/fifo
echo "main run $n line 1"
echo "main run $n line 2"
[ $n -gt 1 ] || exit 1
exec 3<> /tmp/state/fifo
while read line <&3; do echo "main got: $line"; done`

// TestKubectlLogsAndExec: `kubectl logs` and `kubectl exec` work on the local cluster as on
// a real one, the real kubectl through the API server to the node agent's kubelet API.
func TestKubectlLogsAndExec(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const ns = "e2e-kubectl"
	require.NoError(t, env.Namespace(ctx, ns))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "shell", Namespace: ns}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{
			{Name: "main", Image: shellImage, Command: []string{"sh", "-c", countingScript},
				VolumeMounts: []corev1.VolumeMount{{Name: "state", MountPath: "/tmp/state"}}},
			{Name: "side", Image: shellImage, Command: []string{"sh", "-c", `echo "side says hi"; exec sleep 3600`}},
		},
		Volumes: []corev1.Volume{{Name: "state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}}
	require.NoError(t, env.Client.Create(ctx, pod))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pod) })

	kubectl := kubectlCommand(ctx, t, ns)
	run := kubectlIn(ctx, t, ns)

	// The first run has crashed and the second prints its lines.
	const second = "main run 2 line 1\nmain run 2 line 2\n"
	wait.Until(t, ctx, 2*time.Minute, "kubectl logs shows the second run", func() (bool, error) {
		out, err := run("logs", "shell", "-c", "main")
		return out == second, err
	}, func() string {
		p := &corev1.Pod{}
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(pod), p)
		return fmt.Sprintf("container statuses %+v", p.Status.ContainerStatuses)
	})

	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{name: "the pod's default container", args: []string{"logs", "shell"}, want: second},
		{name: "-c", args: []string{"logs", "shell", "-c", "side"}, want: "side says hi\n"},
		{name: "--previous", args: []string{"logs", "shell", "-c", "main", "--previous"}, want: "main run 1 line 1\nmain run 1 line 2\n"},
		{name: "--tail", args: []string{"logs", "shell", "-c", "main", "--tail=1"}, want: "main run 2 line 2\n"},
		{name: "--limit-bytes", args: []string{"logs", "shell", "-c", "main", "--limit-bytes=4"}, want: "main"},
		{name: "exec echo", args: []string{"exec", "shell", "-c", "side", "--", "echo", "hi"}, want: "hi\n"},
		{name: "exec sees the container's mounts", args: []string{"exec", "shell", "-c", "main", "--", "cat", "/tmp/state/runs"}, want: "2\n"},
	} {
		out, err := run(tt.args...)
		require.NoError(t, err, tt.name)
		assert.Equal(t, tt.want, out, tt.name)
	}

	err := kubectl("exec", "shell", "-c", "side", "--", "sh", "-c", "exit 7").Run()
	var exitErr *exec.ExitError
	require.True(t, errors.As(err, &exitErr), "kubectl exec of a failing command: %v", err)
	assert.Equal(t, 7, exitErr.ExitCode(), "kubectl exec exits with the command's code")

	// kubectl logs -f goes on with a line the container prints after it started.
	follow := kubectl("logs", "-f", "shell", "-c", "main")
	stdout, err := follow.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, follow.Start())
	defer func() { _ = follow.Process.Kill(); _ = follow.Wait() }()
	lines := make(chan string)
	go func() {
		defer close(lines)
		for s := bufio.NewScanner(stdout); s.Scan(); {
			lines <- s.Text()
		}
	}()
	next := func() string {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "kubectl logs -f ended")
			return l
		case <-time.After(30 * time.Second):
			t.Fatal("no line from kubectl logs -f in 30 s")
			return ""
		}
	}
	assert.Equal(t, "main run 2 line 1", next())
	assert.Equal(t, "main run 2 line 2", next())
	_, err = run("exec", "shell", "-c", "main", "--", "sh", "-c", "echo hello > /tmp/state/fifo")
	require.NoError(t, err)
	assert.Equal(t, "main got: hello", next(), "kubectl logs -f shows a line printed after it started")
}

// kubectlCommand returns how to run the real kubectl (built with the cluster) against the
// local cluster in namespace ns.
func kubectlCommand(ctx context.Context, t *testing.T, ns string) func(args ...string) *exec.Cmd {
	t.Helper()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	kubectl := filepath.Join(localenv.KubeBinDir(root), "kubectl")
	return func(args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", env.Cluster.Kubeconfig, "-n", ns}, args...)...)
	}
}

// kubectlIn returns how to run kubectl in namespace ns for its stdout; a failure is an error
// naming its stderr.
func kubectlIn(ctx context.Context, t *testing.T, ns string) func(args ...string) (string, error) {
	t.Helper()
	kubectl := kubectlCommand(ctx, t, ns)
	return func(args ...string) (string, error) {
		var stderr strings.Builder
		cmd := kubectl(args...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return string(out), errors.New(err.Error() + ": " + stderr.String())
		}
		return string(out), nil
	}
}
