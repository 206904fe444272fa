//go:build migration

// Package migration proves the move from the Apache Flink Kubernetes Operator to this one on
// real Flink: the Apache operator 1.7.0 (the newest on Maven Central) deploys a last-state
// application with Kubernetes HA and a session job on Flink 1.18; it is stopped; this
// operator starts on the same resources and adopts them without restarting anything, rolls
// back a broken change of the application, then upgrades both and Flink restores their state. Run with `make migration-test` (part of
// `make test`), which installs the Apache operator and Flink 1.18 into bin/.
package migration

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flink-operator/flink-operator/test/logtail"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// The Apache operator release and the Flink distribution it runs (Makefile:
// APACHE_OPERATOR_VERSION, MIGRATION_FLINK_VERSION).
const (
	apacheOperatorVersion = "1.7.0"
	flinkVersion          = "1.18.1"
	namespace             = "migration"
)

func TestMain(m *testing.M) {
	// Pods get addresses of their own in a network namespace where possible, as in the e2e
	// suite (package podnet).
	podnet.Enter("migration", false)
	ctrllog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// suite is one run: the local cluster, the two operators, and what was recorded of Flink
// before the switch.
type suite struct {
	t      *testing.T
	env    *localenv.Env
	dir    string
	apache *apacheOperator
}

// TestMigrationFromApacheOperator: the Apache operator 1.7.0 deploys (a) an application in
// last-state mode with Kubernetes HA and (b) a session cluster with a savepoint-mode session
// job; both reach RUNNING with completed checkpoints. The Apache operator is stopped and this
// operator started on the same resources: Flink still runs the same jobs in the same
// JobManager and TaskManager pods, never restarted, and the status reads STABLE/RUNNING. Then a
// change to (a) whose JobManager never runs is rolled back (rollback enabled, short readiness
// timeout) through the HA metadata: the HA ConfigMaps stay, and Flink runs the same job restored
// from a checkpoint at least as new as the last one before the change. Then a parallelism change
// upgrades (a) from its latest checkpoint (last-state, through HA) and (b) from an upgrade
// savepoint, each asserted on what Flink's REST API reports.
func TestMigrationFromApacheOperator(t *testing.T) {
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	home := filepath.Join(root, "bin", "apache-flink-operator", apacheOperatorVersion)
	jar := filepath.Join(root, "bin", "flink", flinkVersion, "examples", "TopSpeedWindowing.jar")
	for _, p := range []string{filepath.Join(home, ".installed"), jar} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: run `make migration-test`, which installs the Apache operator %s and Flink %s into bin/",
				p, apacheOperatorVersion, flinkVersion)
		}
	}
	dir, err := os.MkdirTemp("", "flink-migration-")
	require.NoError(t, err)
	s := &suite{t: t, dir: dir}
	hosts := filepath.Join(dir, "hosts")
	// The setup context also covers building and starting this operator after the Apache
	// operator's part, which waits up to 10 minutes on its own: under CI's parallel lanes 3
	// minutes ran out in the middle of the build.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	start := time.Now()
	s.env, err = localenv.Start(ctx, localenv.Options{Dir: dir, Pods: podnet.Current(), MachineHostsFile: hosts})
	require.NoError(t, err, "local cluster")
	t.Cleanup(func() {
		s.apache.stop()
		if t.Failed() {
			s.dumpOnFailure()
		}
		s.env.Stop()
		if !t.Failed() {
			_ = os.RemoveAll(dir)
		}
	})
	logf(t, "local cluster up in %s on %s (state in %s)", time.Since(start).Round(time.Millisecond), podnet.Current(), dir)
	require.NoError(t, s.env.Namespace(ctx, namespace))

	s.apache, err = startApacheOperator(ctx, s.env, home, dir, hosts)
	require.NoError(t, err)
	logf(t, "Apache operator %s up (log %s)", apacheOperatorVersion, s.apache.log)

	app, session, sessionJob := s.resources(jar, filepath.Join(dir, "session-state"))
	for _, o := range []client.Object{app, session, sessionJob} {
		require.NoError(t, s.env.Client.Create(ctx, o))
	}
	appKey, sessionKey, jobKey := client.ObjectKeyFromObject(app), client.ObjectKeyFromObject(session), client.ObjectKeyFromObject(sessionJob)

	// (1) The Apache operator brings both jobs up; Flink checkpoints them.
	waitFor(s, appKey, "STABLE/RUNNING under the Apache operator", 4*time.Minute, stableRunning)
	waitFor(s, sessionKey, "STABLE under the Apache operator", 3*time.Minute, func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.LifecycleState == flinkv1beta1.LifecycleStable && d.Status.JobManagerDeploymentStatus == flinkv1beta1.JobManagerReady
	})
	waitFor(s, jobKey, "STABLE/RUNNING under the Apache operator", 3*time.Minute, sessionJobStableRunning)
	appBefore := s.record(appKey)
	sessionBefore := s.record(sessionKey)
	require.Len(t, appBefore.jobs, 1, "the application cluster runs one job")
	require.Len(t, sessionBefore.jobs, 1, "the session cluster runs one job")
	appJob, sessionJobID := appBefore.jobs[0], sessionBefore.jobs[0]
	s.dumpObjects("written-by-apache-operator.yaml")
	logf(t, "under the Apache operator: application job %s (JobManager pod %s), session job %s (JobManager pod %s)",
		appJob.ID, appBefore.jobManagerUID, sessionJobID.ID, sessionBefore.jobManagerUID)

	// (2) Switch operators.
	s.apache.stop()
	logf(t, "Apache operator stopped")
	require.NoError(t, s.env.StartOperator(ctx, podnet.Current(), []string{
		"--config-map=flink-operator-config", "--progress-check-interval=2s", "--reconcile-interval=5s",
		"--allowed-jar-schemes=https,file", "--artifact-local-dir=" + filepath.Join(root, "bin", "flink")}))
	logf(t, "this operator started (log %s)", s.env.OperatorLog())

	t.Run("adopts both jobs without restarting them", func(t *testing.T) {
		s.t = t
		waitFor(s, appKey, "Ready and RUNNING under this operator", 2*time.Minute, readyAndRunning)
		waitFor(s, sessionKey, "Ready under this operator", 2*time.Minute, func(d *flinkv1beta1.FlinkDeployment) bool {
			c := meta.FindStatusCondition(d.Status.Conditions, "Ready")
			return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == d.Generation &&
				d.Status.LifecycleState == flinkv1beta1.LifecycleStable
		})
		waitFor(s, jobKey, "Ready and RUNNING under this operator", 2*time.Minute, sessionJobReady)
		// Several reconcile and observe rounds of this operator, so a late restart would show:
		// three of each job (its status asked of Flink), the reconcile interval being 5 s.
		observes := s.flinkRequests("GET /jobs/:jobid/status")
		wait.For(t, 2*time.Minute, "three observe rounds of both jobs by this operator", func() bool {
			return s.flinkRequests("GET /jobs/:jobid/status") >= observes+6
		})
		for _, c := range []struct {
			key    client.ObjectKey
			before *clusterRecord
		}{{appKey, appBefore}, {sessionKey, sessionBefore}} {
			now := s.record(c.key)
			require.Equal(t, c.before.jobManagerUID, now.jobManagerUID, "%s: the JobManager pod was replaced", c.key.Name)
			require.Equal(t, c.before.taskManagerUIDs, now.taskManagerUIDs, "%s: the TaskManager pods changed", c.key.Name)
			require.Len(t, now.jobs, 1, "%s: Flink runs a job it did not run under the Apache operator: %+v", c.key.Name, now.jobs)
			was, is := c.before.jobs[0], now.jobs[0]
			require.Equal(t, was.ID, is.ID, "%s: Flink's job id changed", c.key.Name)
			require.Equal(t, flink.JobState("RUNNING"), is.State, "%s: job %s", c.key.Name, is.ID)
			require.Equal(t, was.StartTime, is.StartTime, "%s: job %s was restarted", c.key.Name, is.ID)
			details, err := s.rest(c.key).JobDetails(context.Background(), is.ID)
			require.NoError(t, err)
			require.Zero(t, details.Timestamps["RESTARTING"], "%s: job %s went through RESTARTING", c.key.Name, is.ID)
			require.Zero(t, details.Timestamps["CANCELLING"], "%s: job %s was cancelled", c.key.Name, is.ID)
		}
		d := s.deployment(appKey)
		require.Equal(t, flinkv1beta1.LifecycleStable, d.Status.LifecycleState)
		require.Equal(t, appJob.ID, d.Status.JobStatus.JobID, "the adopted status names Flink's job")
		j := s.sessionJob(jobKey)
		require.Equal(t, flinkv1beta1.LifecycleStable, j.Status.LifecycleState)
		require.Equal(t, sessionJobID.ID, j.Status.JobStatus.JobID, "the adopted status names Flink's job")
		logf(t, "adopted: same job ids, JobManager and TaskManager pods, start times; no restart, no cancel")
	})
	s.t = t
	if t.Failed() {
		return
	}

	rolledBack := t.Run("a change that never becomes ready is rolled back keeping the job's state", func(t *testing.T) {
		s.t = t
		// The adopted resource's last stable spec is the one the Apache operator recorded, whose
		// upgradeMode is the restore mode it used on the first deployment (stateless). The
		// rollback must still go through the HA metadata, as upstream's prepareCrForRollback
		// takes the mode from the last reconciled spec.
		haBefore := s.haConfigMaps(appKey)
		require.NotEmpty(t, haBefore, "the application has no HA ConfigMaps before the change")
		before := s.completedCheckpoint(appKey, appJob.ID)
		s.patchDeployment(appKey, func(d *flinkv1beta1.FlinkDeployment) {
			d.Spec.Image = "registry.invalid/not-runnable:1" // no Flink image: the JobManager never runs (ImageNotRunnable)
			s.changeFlinkConfiguration(d, func(conf map[string]string) {
				conf["kubernetes.operator.deployment.rollback.enabled"] = "true"
				conf["kubernetes.operator.deployment.readiness.timeout"] = "15 s"
			})
		})
		logf(t, "broken change applied; latest checkpoint before it: %d %s; HA ConfigMaps %v", before.ID, before.ExternalPath, haBefore)
		// The HA ConfigMaps are looked at on every poll: a rollback that deletes them and lets
		// Flink write new ones shows as a missing name or a new UID.
		var haLost string
		waitFor(s, appKey, "ROLLED_BACK and RUNNING", 4*time.Minute, func(d *flinkv1beta1.FlinkDeployment) bool {
			if haLost == "" {
				haLost = haChange(haBefore, s.haConfigMaps(appKey))
			}
			return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationRolledBack &&
				d.Status.LifecycleState == flinkv1beta1.LifecycleRolledBack &&
				d.Status.JobManagerDeploymentStatus == flinkv1beta1.JobManagerReady &&
				d.Status.JobStatus.State == flinkv1beta1.JobStatusRunning
		})
		now := s.record(appKey)
		require.Len(t, now.jobs, 1, "Flink runs %+v after the rollback", now.jobs)
		job := now.jobs[0]
		stats, err := s.rest(appKey).CheckpointStatistics(context.Background(), job.ID)
		require.NoError(t, err)
		restored := stats.Latest.Restored
		if haLost == "" {
			haLost = haChange(haBefore, s.haConfigMaps(appKey))
		}
		logf(t, "after the rollback Flink runs job %s (before: %s), restored %+v, HA ConfigMaps: %s",
			job.ID, appJob.ID, restored, cmp.Or(haLost, "kept"))
		require.Empty(t, haLost, "the rollback did not keep the HA ConfigMaps")
		require.NotNil(t, restored, "job %s restored nothing: the rollback restarted it from empty state", job.ID)
		require.False(t, restored.IsSavepoint, "the rollback restored %+v, not a checkpoint of the HA metadata", restored)
		require.GreaterOrEqual(t, restored.ID, before.ID,
			"Flink restored checkpoint %d (%s), older than %d (%s), the latest before the change", restored.ID, restored.ExternalPath, before.ID, before.ExternalPath)
		require.Equal(t, appJob.ID, job.ID, "a rollback through the HA metadata keeps the job id")
		require.Equal(t, "flink:1.18", s.jobManagerPod(appKey).Spec.Containers[0].Image, "the JobManager runs the last stable spec's image")
		logf(t, "rolled back: job %s restored checkpoint %d (latest before the change: %d)", job.ID, restored.ID, before.ID)
	})
	s.t = t

	t.Run("a last-state upgrade restores the latest checkpoint at the new parallelism", func(t *testing.T) {
		s.t = t
		if !rolledBack {
			t.Fatal("the upgrade starts from the rolled-back job, and the rollback above failed")
		}
		jobManager := s.runningJobManager(appKey)
		before := s.completedCheckpoint(appKey, appJob.ID)
		s.patchDeployment(appKey, func(d *flinkv1beta1.FlinkDeployment) {
			d.Spec.Job.Parallelism = 2
			// Undo the broken change of the rollback above.
			d.Spec.Image = "flink:1.18"
			s.changeFlinkConfiguration(d, func(conf map[string]string) {
				delete(conf, "kubernetes.operator.deployment.rollback.enabled")
				delete(conf, "kubernetes.operator.deployment.readiness.timeout")
			})
		})
		d := waitFor(s, appKey, "upgraded and RUNNING", 3*time.Minute, func(d *flinkv1beta1.FlinkDeployment) bool {
			return readyAndRunning(d) && s.runningJobManager(appKey) != jobManager
		})
		require.Equal(t, appJob.ID, d.Status.JobStatus.JobID, "a last-state upgrade keeps the job id")
		restored := s.restoredFrom(appKey, appJob.ID)
		require.False(t, restored.IsSavepoint, "last-state restores a checkpoint, not a savepoint: %+v", restored)
		require.GreaterOrEqual(t, restored.ID, before.ID, "Flink restored checkpoint %d, older than %d, the latest before the upgrade", restored.ID, before.ID)
		require.Equal(t, 2, s.runningParallelism(appKey, appJob.ID), "the job runs at the new parallelism")
		logf(t, "application: restored checkpoint %d (latest before the upgrade: %d), parallelism 2", restored.ID, before.ID)
	})
	s.t = t

	t.Run("a savepoint upgrade of the session job restores its savepoint", func(t *testing.T) {
		s.t = t
		s.patchSessionJob(jobKey, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.Parallelism = 2 })
		j := waitFor(s, jobKey, "upgraded and RUNNING", 3*time.Minute, func(j *flinkv1beta1.FlinkSessionJob) bool {
			return sessionJobReady(j) && j.Status.JobStatus.JobID != sessionJobID.ID
		})
		sp := j.Status.JobStatus.SavepointInfo.LastSavepoint
		require.NotNil(t, sp, "no upgrade savepoint in the status")
		require.Equal(t, flinkv1beta1.SnapshotTriggerUpgrade, sp.TriggerType)
		restored := s.restoredFrom(sessionKey, j.Status.JobStatus.JobID)
		require.True(t, restored.IsSavepoint, "the upgraded job restored %+v, not a savepoint", restored)
		require.Equal(t, localPath(sp.Location), localPath(restored.ExternalPath), "Flink restored another savepoint than the upgrade's")
		require.Equal(t, 2, s.runningParallelism(sessionKey, j.Status.JobStatus.JobID), "the job runs at the new parallelism")
		state, err := s.rest(sessionKey).JobStatus(context.Background(), sessionJobID.ID)
		require.NoError(t, err)
		require.Equal(t, flink.JobState("FINISHED"), state, "the old job was stopped with a savepoint, not cancelled")
		require.Equal(t, sessionBefore.jobManagerUID, s.runningJobManager(sessionKey), "the session cluster itself was not touched")
		logf(t, "session job: %s restored savepoint %s, parallelism 2", j.Status.JobStatus.JobID, sp.Location)
	})
}

// resources loads testdata/resources.yaml into the test namespace: the application, the
// session cluster (its state directories under stateDir) and the session job (jar).
func (s *suite) resources(jar, stateDir string) (*flinkv1beta1.FlinkDeployment, *flinkv1beta1.FlinkDeployment, *flinkv1beta1.FlinkSessionJob) {
	t := s.t
	data, err := os.ReadFile("testdata/resources.yaml")
	require.NoError(t, err)
	data = []byte(strings.NewReplacer("STATE_DIR", stateDir, "JAR_PATH", jar).Replace(string(data)))
	docs := bytes.Split(data, []byte("\n---\n"))
	require.Len(t, docs, 3, "testdata/resources.yaml")
	app, session, job := &flinkv1beta1.FlinkDeployment{}, &flinkv1beta1.FlinkDeployment{}, &flinkv1beta1.FlinkSessionJob{}
	for i, o := range []any{app, session, job} {
		require.NoError(t, yaml.UnmarshalStrict(docs[i], o), "testdata/resources.yaml document %d", i)
	}
	app.Namespace, session.Namespace, job.Namespace = namespace, namespace, namespace
	return app, session, job
}

// clusterRecord is what Flink and Kubernetes say of one Flink cluster at a moment.
type clusterRecord struct {
	jobManagerUID   types.UID
	taskManagerUIDs []types.UID
	jobs            []flink.JobOverview
}

// record reads the cluster's pods from Kubernetes and its jobs from Flink's REST API, once
// every job is RUNNING with a completed checkpoint.
func (s *suite) record(key client.ObjectKey) *clusterRecord {
	t := s.t
	t.Helper()
	var rec *clusterRecord
	var why string
	wait.For(t, 2*time.Minute, key.Name+": a record of the cluster", func() bool {
		rec, why = s.tryRecord(key)
		return why == ""
	}, func() string { return why })
	return rec
}

func (s *suite) tryRecord(key client.ObjectKey) (*clusterRecord, string) {
	ctx := context.Background()
	rec := &clusterRecord{jobManagerUID: s.runningJobManager(key)}
	if rec.jobManagerUID == "" {
		return nil, "no running JobManager pod"
	}
	var pods corev1.PodList
	if err := s.env.Client.List(ctx, &pods, client.InNamespace(key.Namespace),
		client.MatchingLabels{native.LabelApp: key.Name, native.LabelComponent: native.ComponentTaskManager}); err != nil {
		return nil, err.Error()
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			rec.taskManagerUIDs = append(rec.taskManagerUIDs, p.UID)
		}
	}
	jobs, err := s.rest(key).JobsOverview(ctx)
	if err != nil {
		return nil, fmt.Sprintf("Flink's /jobs/overview: %v", err)
	}
	for _, j := range jobs {
		if j.State == "FINISHED" && key.Name == "session" {
			continue // upgraded session jobs stay listed as FINISHED
		}
		if j.State != "RUNNING" {
			return nil, fmt.Sprintf("job %s is %s", j.ID, j.State)
		}
		stats, err := s.rest(key).CheckpointStatistics(ctx, j.ID)
		if err != nil || stats.Latest.Completed == nil {
			return nil, fmt.Sprintf("job %s has no completed checkpoint yet (%v)", j.ID, err)
		}
		rec.jobs = append(rec.jobs, j)
	}
	if len(rec.jobs) == 0 {
		return nil, "Flink runs no job"
	}
	return rec, ""
}

// haConfigMaps are the cluster's Kubernetes HA ConfigMaps (what Flink wrote), by name.
func (s *suite) haConfigMaps(key client.ObjectKey) map[string]types.UID {
	var cms corev1.ConfigMapList
	require.NoError(s.t, s.env.Client.List(context.Background(), &cms, client.InNamespace(key.Namespace),
		client.MatchingLabels{native.LabelApp: key.Name, native.LabelConfigMapType: native.ConfigMapTypeHA}))
	out := map[string]types.UID{}
	for _, cm := range cms.Items {
		if cm.DeletionTimestamp == nil {
			out[cm.Name] = cm.UID
		}
	}
	return out
}

// haChange says which of the HA ConfigMaps before are gone or were written anew in now, "" if none.
func haChange(before, now map[string]types.UID) string {
	var changes []string
	for name, uid := range before {
		switch got, ok := now[name]; {
		case !ok:
			changes = append(changes, name+" deleted")
		case got != uid:
			changes = append(changes, name+" deleted and created again")
		}
	}
	sort.Strings(changes)
	return strings.Join(changes, ", ")
}

// runningJobManager is the UID of the cluster's running JobManager pod, "" when there is none.
func (s *suite) runningJobManager(key client.ObjectKey) types.UID {
	if p := s.jobManagerPod(key); p != nil {
		return p.UID
	}
	return ""
}

func (s *suite) jobManagerPod(key client.ObjectKey) *corev1.Pod {
	var pods corev1.PodList
	if err := s.env.Client.List(context.Background(), &pods, client.InNamespace(key.Namespace),
		client.MatchingLabels{native.LabelApp: key.Name, native.LabelComponent: native.ComponentJobManager}); err != nil {
		return nil
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp == nil && p.Status.PodIP != "" && p.Status.Phase == corev1.PodRunning {
			return p
		}
	}
	return nil
}

// rest is a client of the cluster's JobManager, at its pod's address: what Flink itself says.
func (s *suite) rest(key client.ObjectKey) *flink.Client {
	s.t.Helper()
	p := s.jobManagerPod(key)
	if p == nil {
		s.t.Fatalf("%s: no running JobManager pod", key.Name)
	}
	cl, err := flink.New(flink.Options{URL: "http://" + p.Status.PodIP + ":8081", Timeout: 5 * time.Second})
	require.NoError(s.t, err)
	return cl
}

func (s *suite) completedCheckpoint(key client.ObjectKey, jobID string) *flink.CheckpointRef {
	s.t.Helper()
	stats, err := s.rest(key).CheckpointStatistics(context.Background(), jobID)
	require.NoError(s.t, err)
	require.NotNil(s.t, stats.Latest.Completed, "%s: job %s has no completed checkpoint", key.Name, jobID)
	return stats.Latest.Completed
}

// restoredFrom is the checkpoint or savepoint Flink says the job restored from.
func (s *suite) restoredFrom(key client.ObjectKey, jobID string) *flink.CheckpointRef {
	s.t.Helper()
	var restored *flink.CheckpointRef
	var err error
	wait.For(s.t, time.Minute, fmt.Sprintf("%s: job %s: Flink reports a restore", key.Name, jobID), func() bool {
		var stats *flink.CheckpointStatistics
		stats, err = s.rest(key).CheckpointStatistics(context.Background(), jobID)
		if err == nil {
			restored = stats.Latest.Restored
		}
		return restored != nil
	}, func() string { return fmt.Sprintf("last error %v", err) })
	return restored
}

// runningParallelism is the highest parallelism among the job's vertices once all its tasks
// run (the example's source is not parallel, so the highest is the job's).
func (s *suite) runningParallelism(key client.ObjectKey, jobID string) int {
	s.t.Helper()
	highest := 0
	var err error
	wait.For(s.t, 2*time.Minute, fmt.Sprintf("%s: job %s: all tasks running", key.Name, jobID), func() bool {
		var details *flink.JobDetails
		details, err = s.rest(key).JobDetails(context.Background(), jobID)
		if err != nil || !details.AllTasksRunning() {
			return false
		}
		for _, v := range details.Vertices {
			highest = max(highest, v.Parallelism)
		}
		return true
	}, func() string { return fmt.Sprintf("last error %v", err) })
	return highest
}

func (s *suite) deployment(key client.ObjectKey) *flinkv1beta1.FlinkDeployment {
	d := &flinkv1beta1.FlinkDeployment{}
	require.NoError(s.t, s.env.Client.Get(context.Background(), key, d))
	return d
}

func (s *suite) sessionJob(key client.ObjectKey) *flinkv1beta1.FlinkSessionJob {
	j := &flinkv1beta1.FlinkSessionJob{}
	require.NoError(s.t, s.env.Client.Get(context.Background(), key, j))
	return j
}

// waitFor polls the named FlinkDeployment or FlinkSessionJob until cond holds; on timeout the
// test fails with its last status.
func waitFor[T any, PT interface {
	*T
	client.Object
}](s *suite, key client.ObjectKey, what string, timeout time.Duration, cond func(PT) bool) PT {
	s.t.Helper()
	obj := wait.Object(s.t, s.env.Client, key, timeout, key.Name+": "+what, cond)
	logf(s.t, "%s: %s", key.Name, what)
	return obj
}

// flinkRequests is how many requests of endpoint (a route template, as the operator's
// flink_operator_flink_rest_requests_total labels it) this operator made and Flink answered
// with a 2xx, from its metrics endpoint.
func (s *suite) flinkRequests(endpoint string) float64 {
	s.t.Helper()
	resp, err := http.Get(s.env.MetricsURL) //nolint:gosec // the local operator's metrics endpoint
	require.NoError(s.t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	prefix := `flink_operator_flink_rest_requests_total{endpoint="` + endpoint + `",outcome="2xx"} `
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, prefix) {
			var v float64
			_, _ = fmt.Sscan(strings.TrimPrefix(line, prefix), &v)
			return v
		}
	}
	return 0
}

func (s *suite) patchDeployment(key client.ObjectKey, change func(*flinkv1beta1.FlinkDeployment)) {
	d := s.deployment(key)
	before := d.DeepCopy()
	change(d)
	require.NoError(s.t, s.env.Client.Patch(context.Background(), d, client.MergeFrom(before)))
}

func (s *suite) changeFlinkConfiguration(d *flinkv1beta1.FlinkDeployment, change func(map[string]string)) {
	conf, err := d.Spec.FlinkConfiguration.Flatten()
	require.NoError(s.t, err)
	change(conf)
	d.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(conf)
}

func (s *suite) patchSessionJob(key client.ObjectKey, change func(*flinkv1beta1.FlinkSessionJob)) {
	j := s.sessionJob(key)
	before := j.DeepCopy()
	change(j)
	require.NoError(s.t, s.env.Client.Patch(context.Background(), j, client.MergeFrom(before)))
}

// stableRunning is how the Apache operator reports a running job (it sets no Ready condition).
func stableRunning(d *flinkv1beta1.FlinkDeployment) bool {
	return d.Status.LifecycleState == flinkv1beta1.LifecycleStable && d.Status.JobStatus.State == flinkv1beta1.JobStatusRunning
}

func sessionJobStableRunning(j *flinkv1beta1.FlinkSessionJob) bool {
	return j.Status.LifecycleState == flinkv1beta1.LifecycleStable && j.Status.JobStatus.State == flinkv1beta1.JobStatusRunning
}

// readyAndRunning: this operator's Ready condition for the current generation, STABLE and RUNNING.
func readyAndRunning(d *flinkv1beta1.FlinkDeployment) bool {
	c := meta.FindStatusCondition(d.Status.Conditions, "Ready")
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == d.Generation && stableRunning(d) &&
		d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed
}

func sessionJobReady(j *flinkv1beta1.FlinkSessionJob) bool {
	c := meta.FindStatusCondition(j.Status.Conditions, "Ready")
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == j.Generation && sessionJobStableRunning(j)
}

// localPath turns a file: URI Flink reported into a path (the node agent rewrote container
// paths to local ones, and Flink writes file:/ or file:///).
func localPath(uri string) string {
	return strings.TrimPrefix(strings.TrimPrefix(uri, "file://"), "file:")
}

// dumpObjects writes the CRs and ConfigMaps of the test namespace to the run's directory.
func (s *suite) dumpObjects(name string) {
	ctx := context.Background()
	var b bytes.Buffer
	for _, list := range []client.ObjectList{&flinkv1beta1.FlinkDeploymentList{}, &flinkv1beta1.FlinkSessionJobList{}, &corev1.ConfigMapList{}} {
		if err := s.env.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
			fmt.Fprintf(&b, "# list: %v\n", err)
			continue
		}
		out, _ := yaml.Marshal(list)
		b.Write(out)
		b.WriteString("---\n")
	}
	_ = os.WriteFile(filepath.Join(s.dir, name), b.Bytes(), 0o644)
}

// dumpOnFailure prints where everything is and the tails of both operators' logs.
func (s *suite) dumpOnFailure() {
	s.dumpObjects("at-failure.yaml")
	fmt.Printf("migration: failed; objects in %s, pod logs in %s, node agent log %s\n",
		filepath.Join(s.dir, "at-failure.yaml"), filepath.Join(s.dir, "node", "pods"), filepath.Join(s.dir, "nodeagent.log"))
	if s.apache != nil {
		fmt.Printf("--- Apache operator log %s (tail) ---\n", s.apache.log)
		fmt.Println(logtail.File(s.apache.log, 60))
	}
	fmt.Printf("--- this operator's log %s (tail) ---\n", s.env.OperatorLog())
	fmt.Println(logtail.File(s.env.OperatorLog(), 60))
}

func logf(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf(time.Now().Format("15:04:05")+" "+format, args...)
}
