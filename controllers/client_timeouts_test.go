package controllers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/wait"
)

// The controller tests' REST client times out after 2 s (flink.client.timeout); a JobManager
// answering a run or a cancel after 3 s is within upstream's defaults of
// kubernetes.operator.job.submission.timeout (10 min) and flink.client.cancel.timeout (1 min).
const slowAnswer = 3 * time.Second

// TestSessionJobSubmissionTimeout: a session job's jar run is bounded by
// kubernetes.operator.job.submission.timeout, not by the ordinary REST call timeout: a run the
// JobManager answers slowly (its main method builds the job graph) is one submission, with no
// failure reported. Set shorter than the answer, the run times out.
func TestSessionJobSubmissionTimeout(t *testing.T) {
	e := newSessionJobs(t, "submission-timeout", false, "session")
	e.flink.RunDelay = slowAnswer
	key, jobID := e.run("orders", flinkv1beta1.UpgradeModeStateless)
	assert.Equal(t, 1, e.submitted(jobID), "submitted once")
	assert.False(t, e.events.has("Job submission failed"), "a slow run is not a failed one")
	assert.Empty(t, e.get(key).Status.Error)

	t.Run("set shorter than the answer", func(t *testing.T) {
		conf := flinkv1beta1.NewFlinkConfiguration(map[string]string{"kubernetes.operator.job.submission.timeout": "1 s"})
		e.update(key, func(j *flinkv1beta1.FlinkSessionJob) {
			j.Spec.FlinkConfiguration = conf
			j.Spec.Job.Parallelism = 2 // an upgrade: cancel, then a new submission
		})
		wait.For(t, 30*time.Second, "the run timed out after 1 s", func() bool { return e.events.has("Job submission failed") })
	})
}

// TestCancelTimeout: the cancel call is bounded by kubernetes.operator.flink.client.cancel.timeout,
// not by the ordinary REST call timeout: a stateless upgrade of a session job whose JobManager
// answers the cancel slowly goes through.
func TestCancelTimeout(t *testing.T) {
	e := newSessionJobs(t, "cancel-timeout", false, "session")
	key, jobID := e.run("orders", flinkv1beta1.UpgradeModeStateless)
	e.flink.CancelDelay = slowAnswer
	e.update(key, func(j *flinkv1beta1.FlinkSessionJob) { j.Spec.Job.Parallelism = 2 })
	run := e.lastSubmission(jobID)
	assert.Equal(t, 2, run.Parallelism)
	assert.Equal(t, "CANCELED", e.flink.Job(jobID))
	assert.False(t, e.events.has("deadline exceeded"), "the cancel did not time out")
}
