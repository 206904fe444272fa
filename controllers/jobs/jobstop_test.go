package jobs

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/test/fakeflink"
)

// A cancel Flink accepts is recorded as CANCELLING before the job is looked at again, however
// fast Flink cancels it (the fake cancels at once), as upstream records it: users and
// upstream's e2e scripts wait for that state, polling once a second. It stays visible for
// CancellingVisible (a step before then asks Flink nothing); the step after finds the job
// CANCELED without cancelling it again, and comes then, not at the progress-check interval.
func TestCancelIsRecordedAsCancellingThenFollowed(t *testing.T) {
	const jobID = "00000000000000000000000000000abc"
	fake := fakeflink.New(t)
	fake.SetJob(jobID, "RUNNING")
	cancels := 0
	fake.OnCancel(func(string) { cancels++ })
	st := &flinkv1beta1.CommonStatus{JobStatus: flinkv1beta1.JobStatus{JobID: jobID, State: flinkv1beta1.JobStatusRunning}}
	var persisted []flinkv1beta1.JobStatusState
	stop := &JobStop{
		Flink:      func(context.Context) (*flink.Client, error) { return flink.New(flink.Options{URL: fake.URL}) },
		JobManager: flinkv1beta1.JobManagerReady,
		Status:     st,
		Persist: func(context.Context) error {
			persisted = append(persisted, st.JobStatus.State)
			return nil
		},
	}
	ctx := context.Background()

	progress, err := stop.Run(ctx, UpgradePlan{Stop: StopStateless, Restore: RestoreNothing})
	require.NoError(t, err)
	assert.Equal(t, StopPending, progress, "the cancel is a step of its own")
	assert.Equal(t, []flinkv1beta1.JobStatusState{flinkv1beta1.JobStatusCancelling}, persisted, "CANCELLING is written before the job is looked at again")
	recheck := stop.PendingRecheck(time.Now(), 10*time.Second)
	assert.InDelta(t, CancellingVisible, recheck, float64(time.Second), "looked at again once CANCELLING was visible")
	assert.Less(t, recheck, 10*time.Second, "sooner than the progress-check interval")

	requests := fake.Requests()
	progress, err = stop.Run(ctx, UpgradePlan{Stop: StopStateless, Restore: RestoreNothing})
	require.NoError(t, err)
	assert.Equal(t, StopPending, progress, "a step within CancellingVisible waits")
	assert.Equal(t, flinkv1beta1.JobStatusCancelling, st.JobStatus.State)
	assert.Equal(t, requests, fake.Requests(), "and asks Flink nothing")

	st.JobStatus.UpdateTime = fmt.Sprint(time.Now().Add(-CancellingVisible).UnixMilli())
	progress, err = stop.Run(ctx, UpgradePlan{Stop: StopStateless, Restore: RestoreNothing})
	require.NoError(t, err)
	assert.Equal(t, StopDone, progress)
	assert.Equal(t, flinkv1beta1.JobStatusCanceled, st.JobStatus.State)
	assert.Equal(t, 1, cancels, "a job being cancelled is not asked to cancel again")
}

// Flink's job details are cached (web.refresh-interval): right after a cancel they may still
// say RUNNING. Taken at its word, that answer overwrote CANCELLING and the job was cancelled
// again at every reconcile until the cache expired (a hundred times in two seconds, an event
// each, on upstream's test_sessionjob_operations.sh). A job being cancelled only ends; past
// the window the answer is believed, so a job recovered by a JobManager failover is stopped
// again rather than waited for.
func TestObservedJobStateKeepsACancelAgainstAStaleAnswer(t *testing.T) {
	now := time.Date(2026, 12, 5, 15, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return fmt.Sprint(now.Add(-d).UnixMilli()) }
	for _, c := range []struct {
		name     string
		recorded flinkv1beta1.JobStatusState
		since    string
		observed flinkv1beta1.JobStatusState
		want     flinkv1beta1.JobStatusState
	}{
		{"stale RUNNING right after the cancel", flinkv1beta1.JobStatusCancelling, at(time.Second), flinkv1beta1.JobStatusRunning, flinkv1beta1.JobStatusCancelling},
		{"stale RUNNING once the cancel was visible", flinkv1beta1.JobStatusCancelling, at(CancellingVisible + time.Second), flinkv1beta1.JobStatusRunning, flinkv1beta1.JobStatusCancelling},
		{"an end within CancellingVisible stays CANCELLING", flinkv1beta1.JobStatusCancelling, at(time.Second), flinkv1beta1.JobStatusCanceled, flinkv1beta1.JobStatusCancelling},
		{"the cancel ends", flinkv1beta1.JobStatusCancelling, at(CancellingVisible), flinkv1beta1.JobStatusCanceled, flinkv1beta1.JobStatusCanceled},
		{"failing counts as ended", flinkv1beta1.JobStatusCancelling, at(CancellingVisible + time.Second), flinkv1beta1.JobStatusFailed, flinkv1beta1.JobStatusFailed},
		{"RUNNING long after the cancel is believed", flinkv1beta1.JobStatusCancelling, at(time.Minute), flinkv1beta1.JobStatusRunning, flinkv1beta1.JobStatusRunning},
		{"no recorded time: believed", flinkv1beta1.JobStatusCancelling, "", flinkv1beta1.JobStatusRunning, flinkv1beta1.JobStatusRunning},
		{"not being cancelled: as Flink says", flinkv1beta1.JobStatusRunning, at(time.Second), flinkv1beta1.JobStatusRestarting, flinkv1beta1.JobStatusRestarting},
	} {
		t.Run(c.name, func(t *testing.T) {
			js := &flinkv1beta1.JobStatus{State: c.recorded, UpdateTime: c.since}
			assert.Equal(t, c.want, ObservedJobState(js, c.observed, now))
		})
	}
}
