package nodeagent

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/flink-operator/flink-operator/test/pki"
	"github.com/flink-operator/flink-operator/test/wait"
)

// kubelet is the agent's kubelet API on a test server, with a client the way the API server
// calls it: a client certificate of the CA the agent trusts.
type kubelet struct {
	a      *Agent
	url    string
	ca     *pki.CA
	client *http.Client
	config *rest.Config // for client-go's exec executor
}

func newKubelet(t *testing.T) *kubelet {
	t.Helper()
	ca := pki.NewCA(t, "cluster CA")
	a := &Agent{opts: Options{Dir: t.TempDir()}, pods: map[types.UID]*podRunner{}}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	srv := httptest.NewUnstartedServer(a.kubeletHandler(pool))
	srv.TLS = kubeletTLSConfig(ca.Issue(t, "local-node", "127.0.0.1").TLS())
	srv.StartTLS()
	t.Cleanup(srv.Close)
	apiserver := ca.Issue(t, "kube-apiserver-kubelet-client")
	return &kubelet{a: a, url: srv.URL, ca: ca, client: clientWith(ca, apiserver.TLS()),
		config: &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{
			CAData: pki.CertPEM(ca.Cert), CertData: pki.CertPEM(apiserver.Cert), KeyData: apiserver.KeyPEM(t)}}}
}

// clientWith trusts ca for the server and presents certs, if any.
func clientWith(ca *pki.CA, certs ...tls.Certificate) *http.Client {
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs, MinVersion: tls.VersionTLS12}}}
}

// pod adds a pod the agent runs, with containers of these names not started yet.
func (k *kubelet) pod(t *testing.T, ns, name string, containers ...string) *podRunner {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name + "-0123456789")}}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "registry.invalid/not-runnable:1"})
	}
	r := &podRunner{a: k.a, pod: pod, dir: k.a.podDir(pod), startTime: metav1.Now()}
	require.NoError(t, os.MkdirAll(filepath.Join(r.dir, "logs"), 0o755))
	for _, c := range pod.Spec.Containers {
		r.containers = append(r.containers, newContainerRunner(r, c, false))
	}
	k.a.pods[pod.UID] = r
	return r
}

// container is a started container: a real process of script writing to the container's
// output file, recorded as runOnce records one.
type container struct {
	c     *containerRunner
	cmd   *exec.Cmd
	run   *logRun
	stdin io.WriteCloser
}

func start(t *testing.T, r *podRunner, name, script string) *container {
	t.Helper()
	var c *containerRunner
	for _, cr := range r.containers {
		if cr.spec.Name == name {
			c = cr
		}
	}
	require.NotNil(t, c, name)
	path := filepath.Join(r.dir, "logs", name+".out")
	out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	t.Cleanup(func() { out.Close() })
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Stdout, cmd.Stderr = out, out
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	run := newLogRun(path)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	c.mu.Lock()
	c.proc = cmd
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	c.recordStart(cmd, run)
	c.mu.Unlock()
	return &container{c: c, cmd: cmd, run: run, stdin: stdin}
}

// exit waits for the process to end on its own and records it.
func (ct *container) exit(t *testing.T) {
	t.Helper()
	ct.stdin.Close()
	_ = ct.cmd.Wait()
	ct.c.recordExit(ct.run)
}

// output waits until the container's output file holds want.
func output(t *testing.T, ct *container, want string) {
	t.Helper()
	wait.For(t, 10*time.Second, "container output "+want, func() bool {
		data, err := os.ReadFile(ct.run.path)
		return err == nil && strings.Contains(string(data), want)
	})
}

func (k *kubelet) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := k.client.Get(k.url + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func TestContainerLogs(t *testing.T) {
	k := newKubelet(t)
	r := k.pod(t, "ns", "p", "main", "idle")
	main := start(t, r, "main", `printf 'one\ntwo\nthree\nfour\n'; exec cat`)
	output(t, main, "four\n")

	for _, tt := range []struct {
		name, query, want string
	}{
		{name: "all of a running container", want: "one\ntwo\nthree\nfour\n"},
		{name: "tailLines", query: "?tailLines=2", want: "three\nfour\n"},
		{name: "tailLines beyond the start", query: "?tailLines=10", want: "one\ntwo\nthree\nfour\n"},
		{name: "tailLines=0", query: "?tailLines=0", want: ""},
		{name: "limitBytes", query: "?limitBytes=6", want: "one\ntw"},
		{name: "tailLines then limitBytes", query: "?tailLines=2&limitBytes=8", want: "three\nfo"},
		{name: "timestamps and sinceSeconds are taken and ignored", query: "?timestamps=true&sinceSeconds=10", want: "one\ntwo\nthree\nfour\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := k.get(t, "/containerLogs/ns/p/main"+tt.query)
			assert.Equal(t, http.StatusOK, code, body)
			assert.Equal(t, tt.want, body)
		})
	}

	t.Run("a last line without a newline counts for tailLines", func(t *testing.T) {
		k := newKubelet(t)
		ct := start(t, k.pod(t, "ns", "q", "main"), "main", `printf 'a\nb\nc'`)
		ct.exit(t)
		_, body := k.get(t, "/containerLogs/ns/q/main?tailLines=2")
		assert.Equal(t, "b\nc", body)
	})

	for _, tt := range []struct {
		name, path string
		code       int
		want       string
	}{
		{name: "unknown pod", path: "/containerLogs/ns/nope/main", code: http.StatusNotFound, want: `pod ns/nope not found`},
		{name: "pod of another namespace", path: "/containerLogs/other/p/main", code: http.StatusNotFound, want: `pod other/p not found`},
		{name: "unknown container", path: "/containerLogs/ns/p/nope", code: http.StatusNotFound, want: `container "nope" not found in pod ns/p`},
		{name: "a container not started yet", path: "/containerLogs/ns/p/idle", code: http.StatusBadRequest, want: `container "idle" in pod "p" is waiting to start: ContainerCreating`},
		{name: "no previous run", path: "/containerLogs/ns/p/main?previous=true", code: http.StatusBadRequest, want: `previous terminated container "main" in pod "p" not found`},
		{name: "bad tailLines", path: "/containerLogs/ns/p/main?tailLines=x", code: http.StatusBadRequest, want: "tailLines"},
		{name: "limitBytes=0", path: "/containerLogs/ns/p/main?limitBytes=0", code: http.StatusBadRequest, want: "limitBytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := k.get(t, tt.path)
			assert.Equal(t, tt.code, code, body)
			assert.Contains(t, body, tt.want)
		})
	}
}

// A container's output file holds every run, appended; `kubectl logs` shows the latest run
// (an exited one too, as kubelet shows a crashed container's last words) and --previous the
// one before.
func TestContainerLogsPreviousRun(t *testing.T) {
	k := newKubelet(t)
	r := k.pod(t, "ns", "p", "main")
	first := start(t, r, "main", `echo first run; exit 1`)
	first.exit(t)
	_, body := k.get(t, "/containerLogs/ns/p/main")
	assert.Equal(t, "first run\n", body, "the exited run is the latest")

	second := start(t, r, "main", `echo second run; exec cat`)
	output(t, second, "second run\n")
	_, body = k.get(t, "/containerLogs/ns/p/main")
	assert.Equal(t, "second run\n", body)
	_, body = k.get(t, "/containerLogs/ns/p/main?previous=true")
	assert.Equal(t, "first run\n", body)
	_, body = k.get(t, "/containerLogs/ns/p/main?previous=true&tailLines=1&follow=true")
	assert.Equal(t, "first run\n", body, "a previous run is complete: follow ends at once")

	data, err := os.ReadFile(second.run.path)
	require.NoError(t, err)
	assert.Equal(t, "first run\nsecond run\n", string(data), "the file keeps every run")
}

// With follow, the answer goes on with what the container writes after the request, and ends
// when the container's process exits.
func TestContainerLogsFollow(t *testing.T) {
	k := newKubelet(t)
	ct := start(t, k.pod(t, "ns", "p", "main"), "main", `echo before; read line; echo "$line"; read end`)
	output(t, ct, "before\n")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url+"/containerLogs/ns/p/main?follow=true", nil)
	require.NoError(t, err)
	resp, err := k.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	lines := bufio.NewReader(resp.Body)
	line, err := lines.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "before\n", line)

	_, err = io.WriteString(ct.stdin, "after the request\n")
	require.NoError(t, err)
	line, err = lines.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "after the request\n", line, "a line written after the request arrives")

	ct.exit(t)
	rest, err := io.ReadAll(lines)
	require.NoError(t, err, "the answer ends when the container exits")
	assert.Empty(t, string(rest))
}

func TestKubeletAPIWantsTheClusterCAsClientCertificate(t *testing.T) {
	k := newKubelet(t)
	start(t, k.pod(t, "ns", "p", "main"), "main", `exec cat`)
	other := pki.NewCA(t, "another CA")
	for _, tt := range []struct {
		name   string
		client *http.Client
	}{
		{name: "no client certificate", client: clientWith(k.ca)},
		{name: "a certificate of another CA", client: clientWith(k.ca, other.Issue(t, "kube-apiserver-kubelet-client").TLS())},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"/containerLogs/ns/p/main", "/exec/ns/p/main?command=id&output=1"} {
				resp, err := tt.client.Get(k.url + path)
				require.NoError(t, err)
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s: %s", path, body)
			}
		})
	}
}

// exec runs a command in a container through kubelet's SPDY protocol, as the API server
// calls it: stdout and stderr, and stdin when given.
func (k *kubelet) exec(t *testing.T, container string, argv []string, stdin string) (stdout, stderr string, err error) {
	t.Helper()
	q := url.Values{"command": argv, "output": {"1"}, "error": {"1"}}
	var out, errOut strings.Builder
	opts := remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}
	if stdin != "" {
		q.Set("input", "1")
		opts.Stdin = strings.NewReader(stdin)
	}
	u, perr := url.Parse(k.url + "/exec/" + container + "?" + q.Encode())
	require.NoError(t, perr)
	ex, perr := remotecommand.NewSPDYExecutor(k.config, http.MethodPost, u)
	require.NoError(t, perr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = ex.StreamWithContext(ctx, opts)
	return out.String(), errOut.String(), err
}

func TestExec(t *testing.T) {
	k := newKubelet(t)
	r := k.pod(t, "ns", "p", "main", "idle")
	ct := start(t, r, "main", `exec cat`)
	logDir := filepath.Join(r.dir, "logs")
	require.NoError(t, os.WriteFile(filepath.Join(logDir, "marker"), []byte("in the pod's log directory\n"), 0o644))
	workDir := t.TempDir()
	// As command() sets it up for a Flink container.
	ct.c.mu.Lock()
	ct.c.running = &execTarget{dir: workDir, env: []string{"PATH=/usr/bin:/bin", "GREETING=hello"},
		paths: rewriter([]pathRewrite{{from: "/opt/flink/log", to: logDir}})}
	ct.c.mu.Unlock()

	t.Run("echo", func(t *testing.T) {
		out, _, err := k.exec(t, "ns/p/main", []string{"echo", "hi"}, "")
		require.NoError(t, err)
		assert.Equal(t, "hi\n", out)
	})
	t.Run("exit code, stderr, the container's environment and directory", func(t *testing.T) {
		script := `echo "$GREETING from $(pwd)"; echo oops >&2; exit 3`
		out, errOut, err := k.exec(t, "ns/p/main", []string{"sh", "-c", script}, "")
		var exitErr utilexec.ExitError
		require.True(t, errors.As(err, &exitErr), "want an exit code, got %v", err)
		assert.Equal(t, 3, exitErr.ExitStatus())
		assert.Equal(t, "hello from "+workDir+"\n", out)
		assert.Equal(t, "oops\n", errOut)
	})
	t.Run("stdin", func(t *testing.T) {
		out, _, err := k.exec(t, "ns/p/main", []string{"cat"}, "piped in\n")
		require.NoError(t, err)
		assert.Equal(t, "piped in\n", out)
	})
	t.Run("container paths", func(t *testing.T) {
		out, _, err := k.exec(t, "ns/p/main", []string{"cat", "/opt/flink/log/marker"}, "")
		require.NoError(t, err)
		assert.Equal(t, "in the pod's log directory\n", out)
	})
	for _, tt := range []struct {
		name, path string
		code       int
	}{
		{name: "unknown pod", path: "/exec/ns/nope/main?command=id&output=1", code: http.StatusNotFound},
		{name: "unknown container", path: "/exec/ns/p/nope?command=id&output=1", code: http.StatusNotFound},
		{name: "a container not started", path: "/exec/ns/p/idle?command=id&output=1", code: http.StatusBadRequest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := k.get(t, tt.path)
			assert.Equal(t, tt.code, code, body)
		})
	}
	t.Run("an exited container", func(t *testing.T) {
		ct.exit(t)
		code, body := k.get(t, "/exec/ns/p/main?command=id&output=1")
		assert.Equal(t, http.StatusBadRequest, code, body)
		assert.Contains(t, body, "not running")
	})
}
