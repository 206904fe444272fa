//go:build e2e

// Package e2e runs the operator binary against the local cluster with real Flink (package
// localenv): upstream's e2e scenarios, asserted on CR status and conditions and on Flink's
// own REST answers. Run with `make e2e` (part of `make test`).
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flink-operator/flink-operator/test/logtail"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/test/kubeenv"
	"github.com/flink-operator/flink-operator/test/localenv"
	"github.com/flink-operator/flink-operator/test/podnet"
	"github.com/flink-operator/flink-operator/test/wait"
)

var env *localenv.Env

func TestMain(m *testing.M) {
	// The suite runs in a network namespace of its own where it can (package podnet), so the
	// operator's admission webhooks are served through their Service, as installed.
	podnet.Enter("e2e", false)
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// The test's own clients print API warnings through controller-runtime's logger.
	ctrllog.SetLogger(logr.Discard())
	dir, err := os.MkdirTemp("", "flink-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	root, err := kubeenv.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	fmt.Printf("e2e: pods on %s\n", podnet.Current())
	// TestRESTSSLApplication puts the truststores its clusters name below this directory.
	if err := os.MkdirAll(filepath.Join(dir, "rest-truststores"), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The session jobs' file:// jars are Flink's examples (sessionJobs).
	env, err = localenv.Start(ctx, localenv.Options{Dir: dir, Operator: true, Pods: podnet.Current(), OperatorArgs: []string{
		// The operator ConfigMap as config/manager names it; absent, so an empty configuration.
		"--config-map=flink-operator-config", "--progress-check-interval=2s", "--reconcile-interval=10s", "--allowed-jar-schemes=https,file",
		"--artifact-local-dir=" + filepath.Join(root, "bin", "flink"),
		// TestZooKeeperHA's ZooKeeper server listens on loopback.
		"--zookeeper-allowed-networks=127.0.0.0/8",
		"--flink-rest-truststore-dir=" + filepath.Join(dir, "rest-truststores")},
		FlinkImages: exampleImages(root), ProcessImages: shellImages})
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: local cluster: %v\n", err)
		return 1
	}
	fmt.Printf("e2e: local cluster and operator up in %s (state in %s)\n", time.Since(start).Round(time.Millisecond), dir)
	code := m.Run()
	env.Stop()
	// After the whole run, with the operator and the API server stopped so every request is in
	// the audit log: a test that ran last would miss what later cleanup did, and -run or
	// -shuffle would drop or move it.
	if err := checkRBAC(root, env.AuditDir(), code == 0 && !filtered()); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: RBAC check failed (audit log in %s):\n%v\n", env.AuditDir(), err)
		code = 1
	} else {
		fmt.Println("e2e: RBAC check passed")
	}
	if code == 0 {
		_ = os.RemoveAll(dir)
	} else {
		fmt.Printf("e2e: failed; operator log %s, pod logs %s\n", env.OperatorLog(), filepath.Join(dir, "node", "pods"))
		fmt.Println(logtail.File(env.OperatorLog(), 40))
	}
	return code
}

// example loads a FlinkDeployment from examples/ into a namespace.
func example(t *testing.T, path, namespace string) *flinkv1beta1.FlinkDeployment {
	t.Helper()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, path))
	require.NoError(t, err)
	dep := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, yaml.UnmarshalStrict(data, dep), path)
	dep.Namespace = namespace
	require.NoError(t, env.Namespace(context.Background(), namespace))
	return dep
}

func logf(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf(time.Now().Format("15:04:05")+" "+format, args...)
}

// waitFor polls the named resource (a FlinkDeployment, a FlinkSessionJob, a
// FlinkBlueGreenDeployment...) until cond holds; on timeout the test fails with its last status
// and where the operator's log is.
func waitFor[T any, PT interface {
	*T
	client.Object
}](t *testing.T, key client.ObjectKey, what string, timeout time.Duration, cond func(PT) bool) PT {
	t.Helper()
	obj := wait.Object(t, env.Client, key, timeout, key.Name+": "+what, cond,
		func() string { return "operator log " + env.OperatorLog() })
	logf(t, "%s: %s", key.Name, what)
	return obj
}

// readyAndRunning: Ready=True for the current generation and the job RUNNING.
func readyAndRunning(d *flinkv1beta1.FlinkDeployment) bool {
	c := meta.FindStatusCondition(d.Status.Conditions, "Ready")
	return c != nil && c.Status == "True" && c.ObservedGeneration == d.Generation &&
		d.Status.JobStatus.State == flinkv1beta1.JobStatusRunning && d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed
}

func patch(t *testing.T, key client.ObjectKey, change func(*flinkv1beta1.FlinkDeployment)) {
	t.Helper()
	dep := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, env.Client.Get(context.Background(), key, dep))
	before := dep.DeepCopy()
	change(dep)
	require.NoError(t, env.Client.Patch(context.Background(), dep, client.MergeFrom(before)))
}

// jobManagerPod is the running JobManager pod of a cluster.
func jobManagerPod(t *testing.T, key client.ObjectKey) *corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	require.NoError(t, env.Client.List(context.Background(), &pods, client.InNamespace(key.Namespace),
		client.MatchingLabels{native.LabelApp: key.Name, native.LabelComponent: native.ComponentJobManager}))
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp == nil && p.Status.PodIP != "" {
			return p
		}
	}
	t.Fatalf("%s: no JobManager pod", key.Name)
	return nil
}

// flinkREST is a client of the cluster's JobManager, as Flink itself answers.
func flinkREST(t *testing.T, key client.ObjectKey) *flink.Client {
	t.Helper()
	cl, err := flink.New(flink.Options{URL: "http://" + jobManagerPod(t, key).Status.PodIP + ":8081", Timeout: 5 * time.Second})
	require.NoError(t, err)
	return cl
}

// allTasksRunning waits until Flink reports every task of the job RUNNING.
func allTasksRunning(t *testing.T, key client.ObjectKey, jobID string) {
	t.Helper()
	// Four minutes: TaskManagers of tests running side by side start slowly on a loaded machine.
	var err error
	wait.For(t, 4*time.Minute, "job "+jobID+": all tasks running", func() bool {
		var details *flink.JobDetails
		details, err = flinkREST(t, key).JobDetails(context.Background(), jobID)
		return err == nil && details.AllTasksRunning()
	}, func() string { return fmt.Sprintf("last error %v", err) })
}

// runningParallelism is the highest parallelism of the job's vertices as Flink runs them (the
// examples' generator sources are not parallel, so the highest one is the job's parallelism).
func runningParallelism(t *testing.T, key client.ObjectKey, jobID string) int {
	t.Helper()
	details, err := flinkREST(t, key).JobDetails(context.Background(), jobID)
	require.NoError(t, err)
	highest := 0
	for _, v := range details.Vertices {
		highest = max(highest, v.Parallelism)
	}
	return highest
}

// checkpointInterval is the checkpoint interval (ms) Flink runs the job with
// (GET /jobs/:jobid/checkpoints/config).
func checkpointInterval(t *testing.T, key client.ObjectKey, jobID string) int64 {
	t.Helper()
	resp, err := http.Get("http://" + jobManagerPod(t, key).Status.PodIP + ":8081/jobs/" + jobID + "/checkpoints/config")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var conf struct {
		Interval int64 `json:"interval"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&conf))
	return conf.Interval
}

// restoredFrom is the checkpoint or savepoint Flink says the job restored from.
func restoredFrom(t *testing.T, key client.ObjectKey, jobID string) *flink.CheckpointRef {
	t.Helper()
	var restored *flink.CheckpointRef
	var err error
	wait.For(t, time.Minute, "job "+jobID+": Flink reports a restore", func() bool {
		var stats *flink.CheckpointStatistics
		stats, err = flinkREST(t, key).CheckpointStatistics(context.Background(), jobID)
		if err == nil {
			restored = stats.Latest.Restored
		}
		return restored != nil
	}, func() string { return fmt.Sprintf("last error %v", err) })
	return restored
}

// completedCheckpoint waits for a checkpoint completed after the job (re)started.
func completedCheckpoint(t *testing.T, key client.ObjectKey, jobID string) *flink.CheckpointRef {
	t.Helper()
	var completed *flink.CheckpointRef
	var err error
	// Three minutes, as the waits after a JobManager restart: with checkpoints every few seconds a
	// minute is ample on an idle machine, and was not at a load of 25 on two cores.
	wait.For(t, 3*time.Minute, "job "+jobID+": a completed checkpoint", func() bool {
		var stats *flink.CheckpointStatistics
		stats, err = flinkREST(t, key).CheckpointStatistics(context.Background(), jobID)
		if err == nil {
			completed = stats.Latest.Completed
		}
		return completed != nil
	}, func() string { return fmt.Sprintf("last error %v", err) })
	return completed
}

// localPath turns a file: URI Flink reported into a path on this machine (the node agent
// rewrote the container paths to local ones).
func localPath(uri string) string {
	return strings.TrimPrefix(strings.TrimPrefix(uri, "file://"), "file:")
}

// TestApplicationWithHA is upstream's core e2e flow on one application cluster with
// Kubernetes HA: it comes up; a manual savepoint lands on disk; a parallelism change with a
// savepoint upgrade restores from the upgrade savepoint; a last-state upgrade keeps the job id
// and restores from the latest checkpoint; a killed JobManager recovers through HA; suspend
// and resume keep the state; deletion removes every object.
func TestApplicationWithHA(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dep := example(t, "examples/checkpoint-ha/checkpoint-ha.yaml", "e2e-ha")
	key := client.ObjectKeyFromObject(dep)
	start := time.Now()
	require.NoError(t, env.Client.Create(ctx, dep))

	d := waitFor(t, key, "Ready and RUNNING", 3*time.Minute, readyAndRunning)
	logf(t, "deployed in %s", time.Since(start).Round(time.Second))
	jobID := d.Status.JobStatus.JobID
	require.Equal(t, flinkv1beta1.LifecycleStable, d.Status.LifecycleState)
	require.Equal(t, flinkv1beta1.JobManagerReady, d.Status.JobManagerDeploymentStatus)
	allTasksRunning(t, key, jobID)
	var ha corev1.ConfigMapList
	require.NoError(t, env.Client.List(ctx, &ha, client.InNamespace(key.Namespace), native.HALabels(key.Name)))
	require.NotEmpty(t, ha.Items, "Kubernetes HA keeps its ConfigMaps in the API server")

	t.Run("manual savepoint (nonce) becomes a FlinkStateSnapshot", func(t *testing.T) {
		patch(t, key, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.SavepointTriggerNonce = ptr(int64(1)) })
		snaps := waitForSnapshots(t, key.Namespace, key.Name, "MANUAL", 1, time.Minute)
		snap := waitSnapshotState(t, client.ObjectKeyFromObject(&snaps[0]), flinkv1beta1.SnapshotCompleted)
		require.FileExists(t, filepath.Join(localPath(snap.Status.Path), "_metadata"))
		d := &flinkv1beta1.FlinkDeployment{}
		require.NoError(t, env.Client.Get(ctx, key, d))
		require.Contains(t, d.Status.ReconciliationStatus.LastReconciledSpec, `"savepointTriggerNonce":1`, "the nonce is recorded")
		require.Equal(t, jobID, d.Status.JobStatus.JobID, "a manual savepoint does not restart the job")
	})

	t.Run("a FlinkStateSnapshot savepoint restores into a new deployment", func(t *testing.T) {
		snap := &flinkv1beta1.FlinkStateSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: "before-migration"},
			Spec: flinkv1beta1.FlinkStateSnapshotSpec{JobReference: &flinkv1beta1.JobReference{Kind: "FlinkDeployment", Name: key.Name},
				Savepoint: &flinkv1beta1.SavepointSpec{DisposeOnDelete: ptr(false)}}}
		require.NoError(t, env.Client.Create(ctx, snap))
		done := waitSnapshotState(t, client.ObjectKeyFromObject(snap), flinkv1beta1.SnapshotCompleted)
		require.FileExists(t, filepath.Join(localPath(done.Status.Path), "_metadata"))

		copyDep := example(t, "examples/checkpoint-ha/checkpoint-ha.yaml", key.Namespace)
		copyDep.Name = "restored-copy"
		copyDep.Spec.Job.InitialSavepointPath = done.Status.Path
		copyKey := client.ObjectKeyFromObject(copyDep)
		require.NoError(t, env.Client.Create(ctx, copyDep))
		c := waitFor(t, copyKey, "the copy runs", 3*time.Minute, readyAndRunning)
		restored := restoredFrom(t, copyKey, c.Status.JobStatus.JobID)
		require.Equal(t, localPath(done.Status.Path), localPath(restored.ExternalPath), "restored from the snapshot's savepoint")
		require.NoError(t, env.Client.Delete(ctx, c))
		requireNoPods(t, copyKey)
	})

	t.Run("periodic savepoints create snapshots and the history is trimmed", func(t *testing.T) {
		patch(t, key, func(d *flinkv1beta1.FlinkDeployment) {
			conf := setConfig(t, d.Spec.FlinkConfiguration, "kubernetes.operator.periodic.savepoint.interval", "3s")
			d.Spec.FlinkConfiguration = setConfig(t, conf, "kubernetes.operator.savepoint.history.max.count", "2")
		})
		seen := map[string]bool{}
		wait.For(t, 2*time.Minute, "four periodic snapshots", func() bool {
			for _, s := range listSnapshots(t, key.Namespace, key.Name, "PERIODIC") {
				seen[s.Name] = true
			}
			return len(seen) >= 4
		}, func() string { return fmt.Sprintf("periodic snapshots seen: %v", seen) })
		patch(t, key, func(d *flinkv1beta1.FlinkDeployment) {
			conf := setConfig(t, d.Spec.FlinkConfiguration, "kubernetes.operator.periodic.savepoint.interval", "0")
			d.Spec.FlinkConfiguration = conf
		})
		wait.For(t, time.Minute, "at most max.count (2) completed periodic savepoint snapshots are kept, and at least one", func() bool {
			completed := 0
			for _, s := range listSnapshots(t, key.Namespace, key.Name, "PERIODIC") {
				if s.Status.State == flinkv1beta1.SnapshotCompleted && s.DeletionTimestamp.IsZero() {
					completed++
				}
			}
			return completed >= 1 && completed <= 2
		})
		// Trimming never touches what a user asked for: the nonce savepoint and the hand-made one.
		manual := map[string]bool{}
		for _, s := range listSnapshots(t, key.Namespace, key.Name, "MANUAL") {
			if s.Status.State == flinkv1beta1.SnapshotCompleted && s.DeletionTimestamp.IsZero() {
				manual[s.Name] = true
			}
		}
		require.True(t, manual["before-migration"], "the user-created snapshot is kept: %v", manual)
		require.Len(t, manual, 2, "the nonce snapshot and the user-created one are kept: %v", manual)
		d := &flinkv1beta1.FlinkDeployment{}
		require.NoError(t, env.Client.Get(ctx, key, d))
		require.Equal(t, jobID, d.Status.JobStatus.JobID, "option changes do not restart the job")
	})

	t.Run("parallelism change with savepoint upgrade restores the savepoint", func(t *testing.T) {
		patch(t, key, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Parallelism = 2 })
		d := waitFor(t, key, "upgraded to parallelism 2", 4*time.Minute, func(d *flinkv1beta1.FlinkDeployment) bool {
			return readyAndRunning(d) && d.Status.JobStatus.SavepointInfo.LastSavepoint.TriggerType == flinkv1beta1.SnapshotTriggerUpgrade
		})
		upgradeSavepoint := d.Status.JobStatus.SavepointInfo.LastSavepoint.Location
		newJob := d.Status.JobStatus.JobID
		jobID = newJob
		allTasksRunning(t, key, newJob)
		restored := restoredFrom(t, key, newJob)
		require.True(t, restored.IsSavepoint)
		require.Equal(t, localPath(upgradeSavepoint), localPath(restored.ExternalPath), "Flink restored the upgrade savepoint")
		require.Equal(t, 2, runningParallelism(t, key, newJob), "the job runs with the new parallelism")
	})

	t.Run("last-state upgrade applies the new parallelism and configuration, keeps the job id and restores the latest checkpoint", func(t *testing.T) {
		cp := completedCheckpoint(t, key, jobID)
		logf(t, "checkpoint %d completed before the upgrade", cp.ID)
		patch(t, key, func(d *flinkv1beta1.FlinkDeployment) {
			d.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeLastState
			d.Spec.Job.Parallelism = 1
			d.Spec.FlinkConfiguration = setConfig(t, d.Spec.FlinkConfiguration, "execution.checkpointing.interval", "4s")
		})
		d := waitFor(t, key, "upgraded with last-state", 4*time.Minute, func(d *flinkv1beta1.FlinkDeployment) bool {
			return readyAndRunning(d) && strings.Contains(string(d.Status.ReconciliationStatus.LastReconciledSpec), `"4s"`)
		})
		require.Equal(t, jobID, d.Status.JobStatus.JobID, "last-state through HA keeps the job id")
		restored := restoredFrom(t, key, jobID)
		require.False(t, restored.IsSavepoint)
		require.GreaterOrEqual(t, restored.ID, cp.ID, "restored from the latest checkpoint or a newer one")
		allTasksRunning(t, key, jobID)
		// Flink, not our status, says what runs: the new job graph, not the one HA kept.
		require.Equal(t, 1, runningParallelism(t, key, jobID), "Flink runs the job at the new parallelism")
		require.Equal(t, int64(4000), checkpointInterval(t, key, jobID), "Flink runs the job with the new checkpoint interval")
	})

	t.Run("a killed JobManager recovers through HA", func(t *testing.T) { killedJobManagerRecovers(t, key, jobID) })

	t.Run("suspend and resume", func(t *testing.T) {
		cp := completedCheckpoint(t, key, jobID)
		patch(t, key, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.State = flinkv1beta1.JobStateSuspended })
		waitFor(t, key, "SUSPENDED", 3*time.Minute, func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.LifecycleState == flinkv1beta1.LifecycleSuspended
		})
		requireNoPods(t, key)
		patch(t, key, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.State = flinkv1beta1.JobStateRunning })
		d := waitFor(t, key, "resumed", 3*time.Minute, readyAndRunning)
		require.Equal(t, jobID, d.Status.JobStatus.JobID, "last-state resume through HA keeps the job id")
		restored := restoredFrom(t, key, jobID)
		require.GreaterOrEqual(t, restored.ID, cp.ID)
		allTasksRunning(t, key, jobID)
	})

	t.Run("the operator's metrics saw it all", func(t *testing.T) {
		resp, err := http.Get(env.MetricsURL)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		series := func(name, labels string) float64 {
			for _, line := range strings.Split(string(body), "\n") {
				if strings.HasPrefix(line, name+"{"+labels+"}") {
					var v float64
					_, _ = fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v)
					return v
				}
			}
			return 0
		}
		transition := func(name string) float64 {
			return series("flink_operator_lifecycle_transition_seconds_count", `kind="FlinkDeployment",namespace="e2e-ha",transition="`+name+`"`)
		}
		require.GreaterOrEqual(t, transition("Upgrade"), 2.0, "parallelism and last-state upgrades")
		require.GreaterOrEqual(t, transition("Suspend"), 1.0)
		require.GreaterOrEqual(t, transition("Resume"), 1.0)
		require.GreaterOrEqual(t, transition("Stabilization"), 1.0)
		require.Equal(t, 1.0, series("flink_operator_resources", `kind="FlinkDeployment",namespace="e2e-ha"`))
		require.GreaterOrEqual(t, series("flink_operator_flink_rest_requests_total", `endpoint="POST /jobs/:jobid/stop",outcome="2xx"`), 1.0)
	})

	t.Run("delete removes every object", func(t *testing.T) {
		require.NoError(t, env.Client.Delete(ctx, &flinkv1beta1.FlinkDeployment{ObjectMeta: dep.ObjectMeta}))
		wait.For(t, 3*time.Minute, "FlinkDeployment deleted", func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, key, &flinkv1beta1.FlinkDeployment{}))
		})
		requireNoPods(t, key)
		labels := client.MatchingLabels{native.LabelApp: key.Name}
		var cms corev1.ConfigMapList
		require.NoError(t, env.Client.List(ctx, &cms, client.InNamespace(key.Namespace), labels))
		require.Empty(t, cms.Items, "ConfigMaps left (HA included)")
		var svcs corev1.ServiceList
		require.NoError(t, env.Client.List(ctx, &svcs, client.InNamespace(key.Namespace), labels))
		require.Empty(t, svcs.Items)
	})
}

// killContainer SIGKILLs the process group of a pod's container (the node agent runs it).
func killContainer(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	pid := 0
	_, err := fmt.Sscanf(pod.Status.ContainerStatuses[0].ContainerID, "nodeagent://%d", &pid)
	require.NoError(t, err)
	logf(t, "killing process %d of pod %s", pid, pod.Name)
	require.NoError(t, syscall.Kill(-pid, syscall.SIGKILL))
}

// killedJobManagerRecovers kills the JobManager's process and checks that the job comes back
// through HA (Kubernetes or ZooKeeper): the same job id, restored from the latest checkpoint
// or a newer one (not a savepoint), all its tasks running again.
func killedJobManagerRecovers(t *testing.T, key client.ObjectKey, jobID string) {
	t.Helper()
	cp := completedCheckpoint(t, key, jobID)
	pod := jobManagerPod(t, key)
	killContainer(t, pod)
	waitContainerRestarted(t, pod)
	d := waitFor(t, key, "Ready again after the JobManager restart", 3*time.Minute, readyAndRunning)
	require.Equal(t, jobID, d.Status.JobStatus.JobID)
	restored := restoredFrom(t, key, jobID)
	require.False(t, restored.IsSavepoint)
	require.GreaterOrEqual(t, restored.ID, cp.ID)
	allTasksRunning(t, key, jobID)
}

// waitContainerRestarted waits until the pod's container restarted and is ready again.
func waitContainerRestarted(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	wait.Until(t, context.Background(), 3*time.Minute, "the container of "+pod.Name+" restarted and ready", func() (bool, error) {
		p := &corev1.Pod{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), p); err != nil {
			return false, err
		}
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1 && p.Status.ContainerStatuses[0].Ready, nil
	})
}

// requireNoPods waits until the cluster has no pods left.
func requireNoPods(t *testing.T, key client.ObjectKey) {
	t.Helper()
	var pods corev1.PodList
	wait.Until(t, context.Background(), 2*time.Minute, "no pods of "+key.Name+" left", func() (bool, error) {
		err := env.Client.List(context.Background(), &pods, client.InNamespace(key.Namespace),
			client.MatchingLabels{native.LabelApp: key.Name})
		return err == nil && len(pods.Items) == 0, err
	}, func() string { return fmt.Sprintf("%d pods left", len(pods.Items)) })
}

func setConfig(t *testing.T, conf flinkv1beta1.FlinkConfiguration, key, value string) flinkv1beta1.FlinkConfiguration {
	t.Helper()
	flat, err := conf.Flatten()
	require.NoError(t, err)
	flat[key] = value
	return flinkv1beta1.NewFlinkConfiguration(flat)
}

func ptr[T any](v T) *T { return &v }

// listSnapshots lists the savepoint snapshots of a resource, of one trigger type ("" for all).
func listSnapshots(t *testing.T, ns, name, trigger string) []flinkv1beta1.FlinkStateSnapshot {
	t.Helper()
	labels := client.MatchingLabels{"job-reference.name": name, "snapshot.type": "SAVEPOINT"}
	if trigger != "" {
		labels["snapshot.trigger-type"] = trigger
	}
	var list flinkv1beta1.FlinkStateSnapshotList
	require.NoError(t, env.Client.List(context.Background(), &list, client.InNamespace(ns), labels))
	return list.Items
}

func waitForSnapshots(t *testing.T, ns, name, trigger string, n int, timeout time.Duration) []flinkv1beta1.FlinkStateSnapshot {
	t.Helper()
	var l []flinkv1beta1.FlinkStateSnapshot
	wait.For(t, timeout, fmt.Sprintf("%d %s snapshots of %s", n, trigger, name), func() bool {
		l = listSnapshots(t, ns, name, trigger)
		return len(l) >= n
	})
	return l
}

func waitSnapshotState(t *testing.T, key client.ObjectKey, state flinkv1beta1.SnapshotState) *flinkv1beta1.FlinkStateSnapshot {
	t.Helper()
	return waitFor(t, key, fmt.Sprintf("state %s", state), 2*time.Minute, func(s *flinkv1beta1.FlinkStateSnapshot) bool {
		return s.Status.State == state
	})
}
