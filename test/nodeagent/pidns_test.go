package nodeagent

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-operator/flink-operator/test/flinkcluster"
	"github.com/flink-operator/flink-operator/test/wait"
)

// A container's program started by containerInit is PID 1 of a PID namespace of its own, and
// exec enters that namespace: `kill 1` there signals the program, which exits as it handles
// SIGTERM, and not the machine's init.
func TestExecKillOneSignalsTheContainersPID1(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("PID namespaces for containers need root")
	}
	k := newKubelet(t)
	r := k.pod(t, "ns", "p", "main")
	c := r.containers[0]
	path := filepath.Join(r.dir, "logs", "main.out")
	out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	t.Cleanup(func() { out.Close() })
	cmd, ownPIDs, err := containerInit("sh", "-c", `trap 'echo got TERM; exit 143' TERM; echo started; while :; do sleep 0.1; done`)
	require.NoError(t, err)
	require.True(t, ownPIDs, "as root, containers get PID namespaces: %v", pidNamespaces())
	cmd.Env, cmd.Stdout, cmd.Stderr = []string{"PATH=/usr/bin:/bin"}, out, out
	run := newLogRun(path)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // the namespace's PID 1: the kernel kills the rest
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	c.mu.Lock()
	c.proc = cmd
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	c.nextExec = &execTarget{ownPIDs: true} // its env and directory are the process's
	c.recordStart(cmd, run)
	c.mu.Unlock()
	wait.For(t, 10*time.Second, "the program started", func() bool {
		data, err := os.ReadFile(path)
		return err == nil && strings.Contains(string(data), "started")
	})
	require.Equal(t, []string{strconv.Itoa(cmd.Process.Pid), "1"}, nsPIDs(t, cmd.Process.Pid), "the program is PID 1 of its namespace")

	initStart := startTime(t, 1)
	containerNS, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", cmd.Process.Pid))
	require.NoError(t, err)
	got, _, err := k.exec(t, "ns/p/main", []string{"sh", "-c", `readlink /proc/self/ns/pid; echo $$`}, "")
	require.NoError(t, err)
	fields := strings.Fields(got)
	require.Len(t, fields, 2, got)
	require.Equal(t, containerNS, fields[0], "exec runs in the container's PID namespace")
	require.NotEqual(t, "1", fields[1])

	_, _, err = k.exec(t, "ns/p/main", []string{"sh", "-c", "kill 1"}, "")
	require.NoError(t, err)
	wait.For(t, 10*time.Second, "the program exited on kill 1", func() bool {
		select {
		case <-exited:
			return true
		default:
			return false
		}
	})
	assert.Equal(t, 143, cmd.ProcessState.ExitCode(), "the program's own exit on SIGTERM")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(data), "got TERM")
	assert.Equal(t, initStart, startTime(t, 1), "the machine's init is the one that ran before")
}

// A Flink container is PID 1 of a PID namespace of its own and exec enters that namespace, so
// `kubectl exec <jm> -- /bin/sh -c "kill 1"` (how Apache's e2e suite kills a JobManager) stops
// the JobManager, not the machine's init, and the agent restarts the container as kubelet
// does, counting the restart.
func TestExecKillOneRestartsTheFlinkContainer(t *testing.T) {
	dist := flinkcluster.DistFor(t, flinkcluster.Versions(t)[0])
	if os.Geteuid() != 0 {
		t.Skip("PID namespaces for containers need root; elsewhere Flink containers run in the machine's")
	}
	require.NoError(t, pidNamespaces(), "as root, containers get PID namespaces")
	k := newKubelet(t)
	k.a.opts.Dists = []flinkcluster.Dist{dist}
	const name = "flink-main-container"
	tag := strings.Join(strings.SplitN(dist.Version, ".", 3)[:2], ".")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "jm", UID: "jm-0123456789"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways,
			Containers: []corev1.Container{{Name: name, Image: "flink:" + tag, Args: []string{"jobmanager"}}}}}
	ctx, cancel := context.WithCancel(context.Background())
	// An address of the agent's pod range, far from those a local cluster hands out first.
	r := &podRunner{a: k.a, pod: pod, ip: "127.1.200.17", dir: k.a.podDir(pod), startTime: metav1.Now(), ctx: ctx, cancel: cancel}
	require.NoError(t, os.MkdirAll(filepath.Join(r.dir, "logs"), 0o755))
	require.NoError(t, r.writeHosts(r.ip+" localhost jm\n"))
	c := newContainerRunner(r, pod.Spec.Containers[0], false)
	r.containers = []*containerRunner{c}
	k.a.pods[pod.UID] = r
	stopped := make(chan struct{})
	go func() { defer close(stopped); c.run() }()
	t.Cleanup(func() {
		c.kill(10 * time.Second)
		cancel()
		<-stopped
	})

	initStart := startTime(t, 1)
	first := jobManagerUp(t, c, r.ip)
	require.Equal(t, []string{strconv.Itoa(first), "1"}, nsPIDs(t, first),
		"the container's java process is PID 1 of a PID namespace of its own")

	// Proven harmlessly first: the exec'd shell is in the container's PID namespace.
	containerNS, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", first))
	require.NoError(t, err)
	out, _, err := k.exec(t, "ns/jm/"+name, []string{"/bin/sh", "-c", `readlink /proc/self/ns/pid; echo $$`}, "")
	require.NoError(t, err)
	lines := strings.Fields(out)
	require.Len(t, lines, 2, out)
	require.Equal(t, containerNS, lines[0], "exec runs in the container's PID namespace")
	require.NotEqual(t, "1", lines[1], "the exec'd shell is not the container's PID 1")

	out, _, err = k.exec(t, "ns/jm/"+name, []string{"/bin/sh", "-c", `echo $$; kill 1`}, "")
	require.NoError(t, err, "kill 1 output: %s", out)
	var st corev1.ContainerStatus
	wait.For(t, 2*time.Minute, "the container restarted once and running again", func() bool {
		st = c.status()
		return st.RestartCount == 1 && st.State.Running != nil
	}, func() string { return fmt.Sprintf("status %+v", st) })
	require.NotNil(t, st.LastTerminationState.Terminated)
	assert.Equal(t, int32(143), st.LastTerminationState.Terminated.ExitCode, "the JVM's exit on SIGTERM: kill 1 reached it")

	second := jobManagerUp(t, c, r.ip)
	assert.NotEqual(t, first, second, "a new process")
	assert.Equal(t, []string{strconv.Itoa(second), "1"}, nsPIDs(t, second), "the restarted process is PID 1 of its namespace")
	assert.Equal(t, initStart, startTime(t, 1), "the machine's init is the one that ran before")
}

// jobManagerUp waits until the container's JobManager answers on its REST port and returns its
// process's pid: only then has the JVM installed its signal handlers, without which PID 1 of a
// namespace ignores SIGTERM.
func jobManagerUp(t *testing.T, c *containerRunner, ip string) int {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	wait.Until(t, context.Background(), 2*time.Minute, "the JobManager's REST API", func() (bool, error) {
		resp, err := client.Get("http://" + ip + ":8081/config")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}, func() string { return fmt.Sprintf("status %+v", c.status()) })
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc.Process.Pid
}

// nsPIDs is a process's pid in each PID namespace it is in, the machine's first.
func nsPIDs(t *testing.T, pid int) []string {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
			return strings.Fields(v)
		}
	}
	t.Fatalf("/proc/%d/status has no NSpid", pid)
	return nil
}

// startTime is when a process started (field 22 of /proc/<pid>/stat, in clock ticks after boot).
func startTime(t *testing.T, pid int) string {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return fields[19] // field 22; fields here start at the third
}
