package flinkdeployment

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/flink-operator/flink-operator/pkg/flink"
)

// TestUnmanagedJobs: the jobs that keep a session cluster are those not globally terminal.
func TestUnmanagedJobs(t *testing.T) {
	jobs := []flink.JobOverview{{ID: "a", State: flink.JobRunning}, {ID: "b", State: flink.JobFinished}, {ID: "c", State: flink.JobCanceled},
		{ID: "d", State: flink.JobFailed}, {ID: "e", State: flink.JobState("RESTARTING")}, {ID: "f", State: flink.JobSuspended}, {ID: "g", State: flink.JobState("CREATED")}}
	assert.Equal(t, []string{"a", "e", "f", "g"}, nonTerminalJobs(jobs))
	assert.Empty(t, nonTerminalJobs(nil))
}
