//go:build e2e

package upstreame2e_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/kubeenv"
	"github.com/flink-operator/flink-operator/test/localenv"
	"github.com/flink-operator/flink-operator/test/nodeagent"
	"github.com/flink-operator/flink-operator/test/operatorinstall"
	"github.com/flink-operator/flink-operator/test/podnet"
	upstreame2e "github.com/flink-operator/flink-operator/test/upstream-e2e"
	"github.com/flink-operator/flink-operator/test/wait"
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	// The scripts reach the operator's webhooks and Flink's REST API through Services and the
	// Ingress controller, which need pod addresses EndpointSlices accept (package podnet); port
	// 80 of the Ingress address is bound inside the namespace, nowhere else.
	podnet.Enter("upstream-e2e", true)
	os.Exit(m.Run())
}

// ingressIP is what `minikube ip` prints: the Ingress controller serves port 80 there, inside
// the test's network namespace.
const ingressIP = "127.0.0.2"

// The namespaces the scripts use, both watched by the operator (test_multi_sessionjob.sh).
var jobNamespaces = []string{"default", "flink"}

// operatorPods selects the operator's pods as the scripts do (utils.sh get_operator_pod_name).
const operatorPods = "app.kubernetes.io/name=flink-kubernetes-operator"

// scriptAnnotation on the operator's pod template names the script the install is for: a new
// value rolls the operator out, so every script starts with operator pods (and logs) of its own,
// as on upstream's CI, which installs the operator afresh for each script.
const scriptAnnotation = "upstream-e2e.flink-operator.io/script"

type result struct {
	script, outcome string
	// took is the script's own run, as upstream's CI step runs it (not the install before it).
	took  time.Duration
	swept []leftover
}

// TestUpstreamScripts runs upstream's e2e scripts, unchanged, one subtest each in upstream's order,
// on one local cluster with the operator installed as `make deploy` installs it (the overlay in
// install/). UPSTREAM_E2E_SCRIPTS (space-separated names) runs some of them;
// UPSTREAM_E2E_SCRIPT_TIMEOUT bounds each (default 20m); each script's output goes to
// UPSTREAM_E2E_LOGS (default bin/upstream-e2e/logs)/<script>.log.
func TestUpstreamScripts(t *testing.T) {
	ctx := context.Background()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	dir := t.TempDir()
	scriptTimeout := 20 * time.Minute
	if v := os.Getenv("UPSTREAM_E2E_SCRIPT_TIMEOUT"); v != "" {
		scriptTimeout, err = time.ParseDuration(v)
		require.NoError(t, err, "UPSTREAM_E2E_SCRIPT_TIMEOUT")
	}
	logDir := os.Getenv("UPSTREAM_E2E_LOGS")
	if logDir == "" {
		logDir = filepath.Join(root, "bin", "upstream-e2e", "logs")
	}
	require.NoError(t, os.MkdirAll(logDir, 0o755))
	scripts := selected(t, upstreame2e.Scripts())

	in, err := operatorinstall.Build(filepath.Join(root, "test", "upstream-e2e", "install"))
	require.NoError(t, err)
	// The Flink image's examples/streaming, which the local distribution lacks StateMachineExample
	// of: the manifests that run it name local:///opt/flink/examples/streaming/StateMachineExample.jar.
	jars := filepath.Join(root, "bin", "upstream-e2e", "jars")
	distExamples, err := filepath.Glob(filepath.Join(root, "bin", "flink", "1.20.*", "examples", "streaming"))
	require.NoError(t, err)
	require.NotEmpty(t, distExamples, "a Flink 1.20 distribution (make flink-dist)")
	examples := filepath.Join(dir, "image-examples")
	require.NoError(t, upstreame2e.ImageExamples(distExamples[len(distExamples)-1], filepath.Join(jars, upstreame2e.StreamingJar), examples))

	manager := filepath.Join(dir, "manager")
	require.NoError(t, kubeenv.BuildOperator(ctx, manager))
	start := time.Now()
	env, err := localenv.Start(ctx, localenv.Options{Dir: filepath.Join(dir, "env"), SkipCRDs: true, Pods: podnet.Current(),
		ProcessImages: in.ProcessImages(manager), Ingress: ingressIP + ":80",
		FlinkImages: map[string]nodeagent.FlinkImage{upstreame2e.FlinkImage: {Dirs: map[string]string{"/opt/flink/examples/streaming": examples}}}})
	require.NoError(t, err)
	t.Cleanup(env.Stop)
	t.Logf("local cluster up after %s (%s)", time.Since(start).Round(time.Second), env.Dir)

	jarURL := serveJars(t, jars)
	tools := filepath.Join(dir, "tools")
	kubectl := filepath.Join(localenv.KubeBinDir(root), "kubectl")
	require.NoError(t, upstreame2e.WriteTools(tools, kubectl, filepath.Join(root, "bin", "yq-v4.54.3"), ingressIP))

	r := &runner{root: root, dir: dir, logDir: logDir, in: in, env: env, kubectl: kubectl, tools: tools, jarURL: jarURL,
		timeout: scriptTimeout}
	var results []result
	t.Cleanup(func() { printResults(t, results) })
	queue := os.Getenv("UPSTREAM_E2E_QUEUE")
	for _, s := range scripts {
		if queue != "" {
			mine, err := upstreame2e.Claim(queue, s.Name)
			require.NoError(t, err)
			if !mine {
				t.Logf("%s: taken by another runner", s.Name)
				continue
			}
		}
		res := result{script: s.Name, outcome: "FAIL"}
		t.Run(s.Name, func(t *testing.T) {
			t.Cleanup(func() { res.swept = r.sweep(t, ctx) })
			r.install(t, ctx, s)
			began := time.Now()
			logPath, err := r.run(ctx, s)
			res.took = time.Since(began)
			if err != nil {
				t.Errorf("%s: %v after %s; its output: %s; last lines:\n%s", s.Name, err, res.took.Round(time.Second), logPath, tail(logPath, 60))
				return
			}
			t.Logf("%s passed in %s; its output: %s", s.Name, res.took.Round(time.Second), logPath)
			res.outcome = "PASS"
		})
		results = append(results, res)
	}
}

// selected are the scripts UPSTREAM_E2E_SCRIPTS names, in its order (runners sharing a queue
// take them in that order, so the Makefile names the longest first), or all of them in
// upstream's order.
func selected(t *testing.T, all []upstreame2e.Script) []upstreame2e.Script {
	names := strings.Fields(os.Getenv("UPSTREAM_E2E_SCRIPTS"))
	if len(names) == 0 {
		return all
	}
	var out []upstreame2e.Script
	for _, n := range names {
		for _, s := range all {
			if s.Name == n {
				out = append(out, s)
			}
		}
	}
	require.Len(t, out, len(names), "UPSTREAM_E2E_SCRIPTS names scripts the runner knows")
	return out
}

// serveJars serves the example jars over HTTP on the namespace's loopback and returns the URL
// of the directory: the init containers wget them and the operator fetches session jobs' jars
// from there, where upstream's CI names Maven Central.
func serveJars(t *testing.T, dir string) string {
	t.Helper()
	_, err := os.Stat(dir)
	require.NoError(t, err, "the example jars (make upstream-e2e-jars)")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + "/"
}

type runner struct {
	root, dir, logDir string
	in                operatorinstall.Install
	env               *localenv.Env
	kubectl, tools    string
	jarURL            string
	timeout           time.Duration
}

// install installs the operator for s as upstream's CI does before each script: the overlay's
// objects with the script's replicas and configuration key, the ConfigMap written afresh (a
// script before may have patched it), and a rollout, so the script sees operator pods of its own.
func (r *runner) install(t *testing.T, ctx context.Context, s upstreame2e.Script) {
	t.Helper()
	objs := make([]*unstructured.Unstructured, 0, len(r.in.Objects))
	for _, o := range r.in.Objects {
		o = o.DeepCopy()
		switch {
		case o.GetKind() == "Deployment":
			require.NoError(t, unstructured.SetNestedField(o.Object, int64(s.OperatorReplicas), "spec", "replicas"))
			require.NoError(t, unstructured.SetNestedField(o.Object, s.Name, "spec", "template", "metadata", "annotations", scriptAnnotation))
		case o.GetKind() == "ConfigMap" && o.GetName() == "flink-operator-config":
			data, _, err := unstructured.NestedStringMap(o.Object, "data")
			require.NoError(t, err)
			conf, ok := data["flink-conf.yaml"]
			require.True(t, ok, "the overlay's operator configuration is under flink-conf.yaml")
			require.NoError(t, unstructured.SetNestedStringMap(o.Object, map[string]string{s.ConfigKey: conf}, "data"))
		}
		objs = append(objs, o)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.in.Namespace(), Name: "flink-operator-config"}}
	if err := r.env.Client.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
		require.NoError(t, err)
	}
	require.NoError(t, operatorinstall.Apply(ctx, r.kubectl, r.env.Cluster.Kubeconfig, objs, "--force-conflicts"))
	var pods corev1.PodList
	wait.Until(t, ctx, 3*time.Minute, fmt.Sprintf("%d operator pod(s) of the install for %s, ready, and no other", s.OperatorReplicas, s.Name), func() (bool, error) {
		if ok, err := r.in.Ready(ctx, r.env.Client); !ok || err != nil {
			return false, err
		}
		if err := r.env.Client.List(ctx, &pods, client.InNamespace(r.in.Namespace()), matching(operatorPods)); err != nil {
			return false, err
		}
		if len(pods.Items) != int(s.OperatorReplicas) {
			return false, nil
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || p.Annotations[scriptAnnotation] != s.Name || !podReady(&p) {
				return false, nil
			}
		}
		return true, nil
	}, func() string { return fmt.Sprintf("%d operator pods", len(pods.Items)) })
}

func matching(selector string) client.MatchingLabels {
	k, v, _ := strings.Cut(selector, "=")
	return client.MatchingLabels{k: v}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// run runs s as upstream's CI does (`bash e2e-tests/<script>` from a checkout whose data files
// it localized) with a kubeconfig of its own (the scripts switch its namespace), under the
// timeout; its output goes to its log file, whose path it returns. At the timeout the script
// gets SIGINT, which runs its on_exit cleanup, and is killed when that takes more than 7 minutes.
func (r *runner) run(ctx context.Context, s upstreame2e.Script) (string, error) {
	logPath := filepath.Join(r.logDir, strings.TrimSuffix(s.Name, ".sh")+".log")
	work := filepath.Join(r.dir, "scripts", strings.TrimSuffix(s.Name, ".sh"))
	if err := upstreame2e.Prepare(filepath.Join(r.root, "test", "upstream-e2e", "upstream"), work, r.jarURL+s.Jar); err != nil {
		return logPath, fmt.Errorf("prepare: %w", err)
	}
	kubeconfig, err := os.ReadFile(r.env.Cluster.Kubeconfig)
	if err != nil {
		return logPath, err
	}
	if err := os.WriteFile(filepath.Join(work, "kubeconfig"), kubeconfig, 0o600); err != nil {
		return logPath, err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return logPath, err
	}
	defer logFile.Close()

	sctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	cmd := exec.CommandContext(sctx, "bash", filepath.Join("e2e-tests", s.Name))
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(work, "kubeconfig"), "PATH="+r.tools+":"+os.Getenv("PATH"))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A group of its own, so a timeout reaches what it runs too; killed with the test binary,
	// so a script outliving a killed run does not write into the next run's log.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
	cmd.WaitDelay = 7 * time.Minute
	err = cmd.Run()
	if sctx.Err() != nil {
		// Whatever the script left running (its backgrounded kubectl delete, a wait).
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return logPath, fmt.Errorf("timed out after %s (%v)", r.timeout, err)
	}
	return logPath, err
}

// leftovers are the objects a script's manifests make that still exist in the job namespaces:
// the Flink resources, Flink's pods, the claims, Flink's HA ConfigMaps.
func (r *runner) leftovers(ctx context.Context) ([]leftover, error) {
	var out []leftover
	for _, ns := range jobNamespaces {
		for kind, l := range map[string]client.ObjectList{
			"FlinkBlueGreenDeployment": &flinkv1beta1.FlinkBlueGreenDeploymentList{}, "FlinkDeployment": &flinkv1beta1.FlinkDeploymentList{},
			"FlinkSessionJob": &flinkv1beta1.FlinkSessionJobList{}, "FlinkStateSnapshot": &flinkv1beta1.FlinkStateSnapshotList{},
			"Pod": &corev1.PodList{}, "PersistentVolumeClaim": &corev1.PersistentVolumeClaimList{},
			"ConfigMap": &corev1.ConfigMapList{},
		} {
			opts := []client.ListOption{client.InNamespace(ns)}
			if kind == "ConfigMap" {
				opts = append(opts, client.MatchingLabels{"configmap-type": "high-availability"})
			}
			if err := r.env.Client.List(ctx, l, opts...); err != nil {
				return nil, err
			}
			items, err := meta.ExtractList(l)
			if err != nil {
				return nil, err
			}
			for _, o := range items {
				m, err := meta.Accessor(o)
				if err != nil {
					return nil, err
				}
				out = append(out, leftover{kind: kind, namespace: ns, name: m.GetName()})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// sweep runs after each script: it waits for what the script deletes to be gone (its on_exit
// cleanup deletes the Flink resources, partly in the background, and the operator then their
// pods and HA ConfigMaps), then deletes what is left, the way upstream's cleanup_snapshots does
// for snapshots (finalizers removed), so the next script starts on an empty cluster as on
// upstream's CI, which starts a new minikube for each. Claims no script deletes (the blue/green
// scripts') are deleted without waiting for them. It returns what it had to delete.
func (r *runner) sweep(t *testing.T, ctx context.Context) []leftover {
	t.Helper()
	var left []leftover
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var err error
		if left, err = r.leftovers(ctx); err == nil && onlyClaims(left) {
			if len(left) == 0 {
				return nil
			}
			break
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return left
		case <-time.After(2 * time.Second):
		}
	}
	t.Logf("left behind after the script: %s; deleting", describe(left))
	c := r.env.Client
	for _, ns := range jobNamespaces {
		var snaps flinkv1beta1.FlinkStateSnapshotList
		if err := c.List(ctx, &snaps, client.InNamespace(ns)); err == nil {
			for i := range snaps.Items {
				s := &snaps.Items[i]
				_ = c.Patch(ctx, s, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))
			}
		}
		for _, o := range []client.Object{&flinkv1beta1.FlinkBlueGreenDeployment{}, &flinkv1beta1.FlinkDeployment{},
			&flinkv1beta1.FlinkSessionJob{}, &flinkv1beta1.FlinkStateSnapshot{}, &corev1.PersistentVolumeClaim{}} {
			_ = c.DeleteAllOf(ctx, o, client.InNamespace(ns))
		}
		_ = c.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(ns), client.MatchingLabels{"configmap-type": "high-availability"})
	}
	wait.Until(t, ctx, 5*time.Minute, "the script's resources deleted", func() (bool, error) {
		rest, err := r.leftovers(ctx)
		return len(rest) == 0, err
	}, func() string {
		rest, _ := r.leftovers(ctx)
		return "still there: " + describe(rest)
	})
	return left
}

// leftover is an object a script left behind.
type leftover struct{ kind, namespace, name string }

func (l leftover) String() string { return l.kind + " " + l.namespace + "/" + l.name }

func describe(ls []leftover) string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.String()
	}
	return strings.Join(out, ", ")
}

// onlyClaims reports whether ls holds nothing but PersistentVolumeClaims, which upstream's
// scripts never delete.
func onlyClaims(ls []leftover) bool {
	for _, l := range ls {
		if l.kind != "PersistentVolumeClaim" {
			return false
		}
	}
	return true
}

// tail is the last n lines of the file at path.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func printResults(t *testing.T, results []result) {
	var b bytes.Buffer
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "script\tresult\ttime\tleft behind (deleted by the runner)")
	for _, r := range results {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", r.script, r.outcome, r.took.Round(time.Second), len(r.swept))
	}
	_ = w.Flush()
	t.Logf("upstream e2e scripts:\n%s", b.String())
	fmt.Print(b.String())
}
