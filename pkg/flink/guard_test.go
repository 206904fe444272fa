package flink

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGuardKeepsChangesUnsent: a guard refusing is asked before every request but GETs; a
// refused request never reaches the JobManager, fails as Unavailable wrapping the guard's
// error, and leaves an asynchronous operation pending (its outcome unknown), not failed.
func TestGuardKeepsChangesUnsent(t *testing.T) {
	var mu sync.Mutex
	var received []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		received = append(received, r.Method+" "+r.URL.Path)
		mu.Unlock()
		_, _ = w.Write([]byte(`{"state":"RUNNING","flink-version":"1.20.3"}`))
	}))
	defer srv.Close()
	refused := errors.New("not leading")
	var asked []string
	c, err := New(Options{URL: srv.URL, Guard: func(endpoint string) error {
		asked = append(asked, endpoint)
		return refused
	}})
	require.NoError(t, err)
	ctx := context.Background()
	const job = "0123456789abcdef0123456789abcdef"

	_, err = c.JobStatus(ctx, job)
	require.NoError(t, err, "reads are not guarded")

	err = c.CancelJob(ctx, job)
	require.ErrorIs(t, err, refused)
	assert.True(t, IsUnavailable(err), "a refusal is a JobManager not reachable now: %v", err)

	p := c.WithTimeout(time.Minute).Start(ctx, Operation{Kind: OperationStopWithSavepoint, JobID: job, TriggerID: NewTriggerID()})
	assert.Equal(t, OutcomePending, p.Outcome, "a refused stop is not a failed one")
	require.ErrorIs(t, p.Unreachable, refused)

	_, err = c.DisposeSavepoint(ctx, "file:/sp/savepoint-1")
	require.ErrorIs(t, err, refused)

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"GET /config", "GET /jobs/" + job + "/status"}, received, "nothing but the read reached the JobManager")
	assert.Equal(t, []string{"PATCH /jobs/:jobid", "POST /jobs/:jobid/stop", "POST /savepoint-disposal"}, asked)
}
