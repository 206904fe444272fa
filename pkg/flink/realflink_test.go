package flink_test

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/test/flinkcluster"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestRealFlink runs the client against real Flink session clusters of every version in
// FLINK_VERSIONS (1.20 and 2.x by default), one cluster per version, scenario by scenario.
func TestRealFlink(t *testing.T) {
	for _, version := range flinkcluster.Versions(t) {
		t.Run(version, func(t *testing.T) {
			dist := flinkcluster.DistFor(t, version)
			cluster := flinkcluster.StartSession(t, dist, flinkcluster.Options{
				// The adaptive scheduler serves /resource-requirements (in-place rescaling).
				Config: map[string]string{"jobmanager.scheduler": "adaptive"},
			})
			testRealFlink(t, dist, cluster)
		})
	}
}

func testRealFlink(t *testing.T, dist flinkcluster.Dist, cluster *flinkcluster.Cluster) {
	ctx := context.Background()
	var calls []flink.Call
	c, err := flink.New(flink.Options{URL: cluster.RESTURL, Timeout: 30 * time.Second,
		OnCall: func(call flink.Call) { calls = append(calls, call) }})
	require.NoError(t, err)

	t.Run("cluster information", func(t *testing.T) {
		v, err := c.Version(ctx)
		require.NoError(t, err)
		assert.Equal(t, dist.Version, v.String())

		o, err := c.Overview(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, o.TaskManagers)
		assert.Equal(t, 2, o.SlotsTotal)

		cfg, err := c.Config(ctx)
		require.NoError(t, err)
		assert.True(t, cfg.Features.WebSubmit, "a session cluster serves /jars")

		jmc, err := c.JobManagerConfig(ctx)
		require.NoError(t, err)
		assert.Equal(t, "adaptive", jmc["jobmanager.scheduler"])

		tms, err := c.TaskManagers(ctx)
		require.NoError(t, err)
		require.Len(t, tms, 1)
		assert.Equal(t, 2, tms[0].SlotsNumber)

		// Metrics appear once the JobManager's metric fetcher has run.
		wait.Until(t, ctx, 30*time.Second, "JobManager metric taskSlotsTotal", func() (bool, error) {
			metrics, err := c.JobManagerMetrics(ctx, "taskSlotsTotal")
			return err == nil && metrics["taskSlotsTotal"] == "2", err
		})
	})

	topSpeed := uploadJar(t, c, dist.Example("TopSpeedWindowing"))
	jobID := strings.Repeat("a1", 16)

	t.Run("run a jar with a fixed job id", func(t *testing.T) {
		got, err := c.RunJar(ctx, topSpeed, flink.RunJarRequest{JobID: jobID, Parallelism: 1})
		require.NoError(t, err)
		assert.Equal(t, jobID, got)
		waitForRunningTasks(t, c, jobID)

		// A submission repeated after an operator crash: Flink's answer is classified, so the
		// operator takes the job for submitted without reading error text.
		_, err = c.RunJar(ctx, topSpeed, flink.RunJarRequest{JobID: jobID, Parallelism: 1})
		assert.True(t, flink.IsDuplicateJob(err), "second run under the same id: %v", err)

		jobs, err := c.JobsOverview(ctx)
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		assert.Equal(t, jobID, jobs[0].ID)
		assert.Equal(t, flink.JobRunning, jobs[0].State)

		details, err := c.JobDetails(ctx, jobID)
		require.NoError(t, err)
		assert.NotEmpty(t, details.Vertices)
		assert.NotEmpty(t, details.Name)
	})

	t.Run("metrics and in-place rescale requirements", func(t *testing.T) {
		details, err := c.JobDetails(ctx, jobID)
		require.NoError(t, err)
		vertex := details.Vertices[0].ID
		wait.For(t, 30*time.Second, "vertex metric ids", func() bool {
			ids, err := c.JobVertexMetrics(ctx, jobID, vertex)
			return err == nil && len(ids) > 0
		})
		// The health check's inputs.
		jobMetrics, err := c.JobMetrics(ctx, jobID, "numRestarts", "numberOfCompletedCheckpoints")
		require.NoError(t, err)
		assert.Equal(t, "0", jobMetrics["numRestarts"])
		assert.Contains(t, jobMetrics, "numberOfCompletedCheckpoints")
		agg, err := c.TaskManagersMetrics(ctx, []string{"Status.JVM.Memory.Heap.Used"}, []string{flink.AggMax})
		require.NoError(t, err)
		require.Len(t, agg, 1)
		require.NotNil(t, agg[0].Max)
		assert.Greater(t, *agg[0].Max, 0.0)

		reqs, err := c.ResourceRequirements(ctx, jobID)
		require.NoError(t, err)
		require.Contains(t, reqs, vertex)
		reqs[vertex] = flink.VertexResources{Parallelism: flink.ParallelismBounds{LowerBound: 1, UpperBound: 1}}
		require.NoError(t, c.SetResourceRequirements(ctx, jobID, reqs))
	})

	t.Run("savepoint with a caller-chosen trigger id is idempotent", func(t *testing.T) {
		trigger := flink.NewTriggerID()
		require.NoError(t, c.TriggerSavepoint(ctx, jobID, flink.SavepointRequest{TriggerID: trigger}))
		res := waitForSavepoint(t, c, jobID, trigger)
		require.Nil(t, res.Failure, res.Failure.Message())
		assertDirExists(t, res.Location)

		// A retried trigger with the same id does not take a second savepoint.
		require.NoError(t, c.TriggerSavepoint(ctx, jobID, flink.SavepointRequest{TriggerID: trigger}))
		again := waitForSavepoint(t, c, jobID, trigger)
		assert.Equal(t, res.Location, again.Location)
		entries, err := os.ReadDir(strings.TrimPrefix(cluster.SavepointDir, "file://"))
		require.NoError(t, err)
		assert.Len(t, entries, 1, "savepoints taken")
	})

	t.Run("checkpoint", func(t *testing.T) {
		trigger := flink.NewTriggerID()
		require.NoError(t, c.TriggerCheckpoint(ctx, jobID, flink.CheckpointRequest{TriggerID: trigger, Type: flink.CheckpointFull}))
		var res *flink.CheckpointResult
		wait.Until(t, ctx, 60*time.Second, "the checkpoint completed", func() (bool, error) {
			var err error
			res, err = c.CheckpointStatus(ctx, jobID, trigger)
			return err == nil && res.State == flink.OperationCompleted, err
		})
		require.Nil(t, res.Failure, res.Failure.Message())
		assert.Positive(t, res.CheckpointID)

		// Periodic checkpoints (every 2 s) subsume older ones and delete their directories, so
		// the latest completed one is read again if it vanished between the two calls.
		var latest *flink.CheckpointRef
		wait.Until(t, ctx, 20*time.Second, "the latest completed checkpoint's directory exists", func() (bool, error) {
			stats, err := c.CheckpointStatistics(ctx, jobID)
			if err != nil || stats.Latest.Completed == nil {
				return false, err
			}
			latest = stats.Latest.Completed
			_, err = os.Stat(stripScheme(latest.ExternalPath))
			return err == nil, err
		})
		assert.GreaterOrEqual(t, latest.ID, res.CheckpointID)
	})

	var stopSavepoint string
	t.Run("stop with savepoint", func(t *testing.T) {
		trigger := flink.NewTriggerID()
		require.NoError(t, c.StopWithSavepoint(ctx, jobID, flink.StopRequest{TriggerID: trigger}))
		res := waitForSavepoint(t, c, jobID, trigger)
		require.Nil(t, res.Failure, res.Failure.Message())
		assertDirExists(t, res.Location)
		stopSavepoint = res.Location
		waitForState(t, c, jobID, flink.JobFinished)
	})

	restoredID := strings.Repeat("b2", 16)
	t.Run("run from the savepoint", func(t *testing.T) {
		require.NotEmpty(t, stopSavepoint)
		_, err := c.RunJar(ctx, topSpeed, flink.RunJarRequest{JobID: restoredID, SavepointPath: stopSavepoint,
			ClaimMode: flink.ClaimModeNoClaim, FlinkConfiguration: map[string]string{"parallelism.default": "2"}})
		require.NoError(t, err)
		waitForRunningTasks(t, c, restoredID)
		wait.Until(t, ctx, 30*time.Second, "the job reports a restore", func() (bool, error) {
			stats, err := c.CheckpointStatistics(ctx, restoredID)
			return err == nil && stats.Latest.Restored != nil, err
		})
		stats, err := c.CheckpointStatistics(ctx, restoredID)
		require.NoError(t, err)
		assert.True(t, stats.Latest.Restored.IsSavepoint)
		assert.Equal(t, stripScheme(stopSavepoint), stripScheme(stats.Latest.Restored.ExternalPath))
		details, err := c.JobDetails(ctx, restoredID)
		require.NoError(t, err)
		// The example's source is not parallel; the window operator takes the default.
		widest := 0
		for _, v := range details.Vertices {
			widest = max(widest, v.Parallelism)
		}
		assert.Equal(t, 2, widest, "per-job parallelism.default reached the job")
	})

	t.Run("cancel; cancelling a finished job conflicts", func(t *testing.T) {
		require.NoError(t, c.CancelJob(ctx, restoredID))
		waitForState(t, c, restoredID, flink.JobCanceled)
		// Flink accepts a second cancel of a cancelled job (202), but refuses to cancel a job
		// that ended otherwise, like the one stopped with a savepoint above (409).
		require.NoError(t, c.CancelJob(ctx, restoredID))
		err := c.CancelJob(ctx, jobID)
		require.Error(t, err)
		assert.True(t, flink.IsConflict(err), "%v", err)

		res, err := c.ExecutionResult(ctx, restoredID)
		require.NoError(t, err)
		assert.True(t, res.Completed)
		assert.Equal(t, "CANCELED", res.ApplicationStatus)

		_, err = c.JobDetails(ctx, strings.Repeat("0f", 16))
		assert.True(t, flink.IsNotFound(err), "%v", err)
	})

	t.Run("exceptions of a failing job", func(t *testing.T) {
		wordCount := uploadJar(t, c, dist.Example("WordCount"))
		failing := strings.Repeat("c3", 16)
		missing := filepath.Join(cluster.Dir, "no-such-input")
		_, err := c.RunJar(ctx, wordCount, flink.RunJarRequest{JobID: failing, Args: []string{"--input", missing}})
		require.NoError(t, err)
		waitForState(t, c, failing, flink.JobFailed)

		exc, err := c.JobExceptions(ctx, failing, 5)
		require.NoError(t, err)
		require.NotEmpty(t, exc.Entries)
		assert.NotEmpty(t, exc.Entries[0].ExceptionName)
		assert.Positive(t, exc.Entries[0].Timestamp)
		assert.Contains(t, exc.Entries[0].Stacktrace, "no-such-input")

		res, err := c.ExecutionResult(ctx, failing)
		require.NoError(t, err)
		assert.Equal(t, "FAILED", res.ApplicationStatus)
		require.NotNil(t, res.Failure)
		assert.NotEmpty(t, res.Failure.Message())
		require.NoError(t, c.DeleteJar(ctx, wordCount))
	})

	t.Run("a bad jar gives a clear error", func(t *testing.T) {
		bad, err := c.UploadJar(ctx, "not-really.jar", bytes.NewReader([]byte("this is not a zip file")))
		require.NoError(t, err)
		_, err = c.RunJar(ctx, bad, flink.RunJarRequest{JobID: flink.NewTriggerID()})
		require.Error(t, err)
		assert.True(t, flink.IsBadRequest(err), "%v", err)
		assert.NotEmpty(t, err.(*flink.Error).Message)
		t.Logf("bad jar: %v", err)
	})

	t.Run("jars are listed and deleted", func(t *testing.T) {
		jars, err := c.ListJars(ctx)
		require.NoError(t, err)
		var ids []string
		for _, j := range jars {
			ids = append(ids, j.ID)
		}
		assert.Contains(t, ids, topSpeed)
		require.NoError(t, c.DeleteJar(ctx, topSpeed))
		assert.True(t, flink.IsNotFound(c.DeleteJar(ctx, topSpeed)) || flink.IsBadRequest(c.DeleteJar(ctx, topSpeed)))
	})

	t.Run("trigger status is unknown after a JobManager restart", func(t *testing.T) {
		jar := uploadJar(t, c, dist.Example("TopSpeedWindowing"))
		job := strings.Repeat("d4", 16)
		_, err := c.RunJar(ctx, jar, flink.RunJarRequest{JobID: job})
		require.NoError(t, err)
		waitForRunningTasks(t, c, job)
		trigger := flink.NewTriggerID()
		require.NoError(t, c.TriggerSavepoint(ctx, job, flink.SavepointRequest{TriggerID: trigger}))
		waitForSavepoint(t, c, job, trigger)

		cluster.RestartJobManager()

		_, err = c.SavepointStatus(ctx, job, trigger)
		require.Error(t, err)
		assert.True(t, flink.IsTriggerNotFound(err), "%v", err)
		_, err = c.CheckpointStatus(ctx, job, flink.NewTriggerID())
		assert.True(t, flink.IsTriggerNotFound(err), "%v", err)
	})

	t.Run("calls are reported for metrics", func(t *testing.T) {
		endpoints := map[string]bool{}
		for _, call := range calls {
			endpoints[call.Endpoint] = true
		}
		for _, want := range []string{"POST /jars/upload", "POST /jars/:jarid/run", "POST /jobs/:jobid/savepoints",
			"GET /jobs/:jobid/savepoints/:triggerid", "POST /jobs/:jobid/stop", "PATCH /jobs/:jobid"} {
			assert.True(t, endpoints[want], want)
		}
	})
}

func uploadJar(t *testing.T, c *flink.Client, path string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	id, err := c.WithTimeout(2*time.Minute).UploadJar(context.Background(), filepath.Base(path), f)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(id, ".jar"), id)
	return id
}

func waitForState(t *testing.T, c *flink.Client, jobID string, want flink.JobState) {
	t.Helper()
	var last flink.JobState
	wait.For(t, 90*time.Second, fmt.Sprintf("job %s never reached %s (last %s)", jobID, want, last), func() bool {
		s, err := c.JobStatus(context.Background(), jobID)
		if err != nil {
			return false
		}
		last = s
		return s == want
	})
}

// waitForRunningTasks waits until every vertex runs: a job is RUNNING before its tasks are,
// and a savepoint triggered in between fails ("Not all required tasks are currently running").
func waitForRunningTasks(t *testing.T, c *flink.Client, jobID string) {
	t.Helper()
	wait.For(t, 90*time.Second, fmt.Sprintf("job %s never had all tasks running", jobID), func() bool {
		d, err := c.JobDetails(context.Background(), jobID)
		return err == nil && d.State == flink.JobRunning && d.AllTasksRunning()
	})
}

func waitForSavepoint(t *testing.T, c *flink.Client, jobID, trigger string) *flink.SavepointResult {
	t.Helper()
	var res *flink.SavepointResult
	wait.Until(t, context.Background(), 90*time.Second, "the savepoint completed", func() (bool, error) {
		var err error
		res, err = c.SavepointStatus(context.Background(), jobID, trigger)
		return err == nil && res.State == flink.OperationCompleted, err
	})
	return res
}

func stripScheme(p string) string {
	if u, err := url.Parse(p); err == nil && u.Scheme == "file" {
		return strings.TrimRight(u.Path, "/")
	}
	return strings.TrimRight(p, "/")
}

func assertDirExists(t *testing.T, location string) {
	t.Helper()
	require.NotEmpty(t, location)
	st, err := os.Stat(stripScheme(location))
	require.NoError(t, err, "snapshot directory %s", location)
	assert.True(t, st.IsDir())
}
