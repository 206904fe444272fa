package flink

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scriptedOperations is a JobManager whose operation answers the test sets, and which records
// the trigger ids it was sent.
type scriptedOperations struct {
	mu       sync.Mutex
	triggers []string
	// trigger answers POSTs: status code and body ("" echoes the trigger id).
	triggerStatus int
	// status answers GETs of the operation.
	status     int
	statusBody string
	// details answers GET /jobs/:id/checkpoints/details/:id.
	details string
}

func (s *scriptedOperations) handler(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.Method == http.MethodPost:
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		id, _ := body["triggerId"].(string)
		s.triggers = append(s.triggers, id)
		w.WriteHeader(s.triggerStatus)
		if s.triggerStatus >= 300 {
			_, _ = io.WriteString(w, `{"errors":["job is not running"]}`)
			return
		}
		_, _ = io.WriteString(w, `{"request-id":"`+id+`"}`)
	case strings.Contains(r.URL.Path, "/checkpoints/details/"):
		if s.details == "" {
			w.WriteHeader(404)
			_, _ = io.WriteString(w, `{"errors":["unknown"]}`)
			return
		}
		_, _ = io.WriteString(w, s.details)
	default:
		w.WriteHeader(s.status)
		_, _ = io.WriteString(w, s.statusBody)
	}
}

func (s *scriptedOperations) sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.triggers...)
}

func TestTrackerOutcomes(t *testing.T) {
	trigger := NewTriggerID()
	savepoint := Operation{Kind: OperationStopWithSavepoint, JobID: testJob, TriggerID: trigger}
	checkpoint := Operation{Kind: OperationCheckpoint, JobID: testJob, TriggerID: trigger}
	tests := []struct {
		name       string
		op         Operation
		status     int
		body       string
		details    string
		want       Outcome
		wantWhere  string
		wantResent bool
		wantFail   string
		wantReason bool
	}{
		{name: "in progress", op: savepoint, status: 200, body: `{"status":{"id":"IN_PROGRESS"}}`, want: OutcomePending},
		{name: "savepoint completed", op: savepoint, status: 200, body: `{"status":{"id":"COMPLETED"},"operation":{"location":"file:/sp/savepoint-1"}}`,
			want: OutcomeCompleted, wantWhere: "file:/sp/savepoint-1"},
		{name: "savepoint failed", op: savepoint, status: 200,
			body: `{"status":{"id":"COMPLETED"},"operation":{"failure-cause":{"class":"java.lang.Exception","stack-trace":"java.lang.Exception: disk full\n\tat x"}}}`,
			want: OutcomeFailed, wantFail: "disk full"},
		{name: "forgotten by a restarted JobManager: sent again under the same id", op: savepoint, status: 404,
			body: `{"errors":["There is no savepoint operation with triggerId"]}`, want: OutcomePending, wantResent: true},
		{name: "JobManager unavailable: pending, with the reason", op: savepoint, status: 503, body: `{"errors":["down"]}`, want: OutcomePending, wantReason: true},
		{name: "checkpoint completed, its location from the details", op: checkpoint, status: 200,
			body: `{"status":{"id":"COMPLETED"},"operation":{"checkpointId":12}}`, details: `{"id":12,"external_path":"file:/cp/chk-12"}`,
			want: OutcomeCompleted, wantWhere: "file:/cp/chk-12"},
		{name: "checkpoint failed", op: checkpoint, status: 200,
			body: `{"status":{"id":"COMPLETED"},"operation":{"failureCause":{"class":"java.lang.Exception","stack-trace":"java.lang.Exception: declined"}}}`,
			want: OutcomeFailed, wantFail: "declined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jm := &scriptedOperations{triggerStatus: 202, status: tt.status, statusBody: tt.body, details: tt.details}
			cl := fakeFlink(t, "1.20.3", jm.handler)
			p := cl.Advance(context.Background(), tt.op)
			assert.Equal(t, tt.want, p.Outcome)
			assert.Equal(t, tt.wantWhere, p.Location)
			assert.Contains(t, p.Failure, tt.wantFail)
			assert.Equal(t, tt.wantReason, p.Unreachable != nil, "%v", p.Unreachable)
			if tt.wantResent {
				assert.Equal(t, []string{trigger}, jm.sent(), "the same trigger id, once")
			} else {
				assert.Empty(t, jm.sent(), "nothing triggered")
			}
		})
	}
}

func TestTrackerStart(t *testing.T) {
	op := Operation{Kind: OperationSavepoint, JobID: testJob, TriggerID: NewTriggerID(), Format: SavepointFormatNative}
	jm := &scriptedOperations{triggerStatus: 202}
	p := fakeFlink(t, "1.20.3", jm.handler).Start(context.Background(), op)
	assert.Equal(t, OutcomePending, p.Outcome)
	assert.Equal(t, []string{op.TriggerID}, jm.sent())

	refused := &scriptedOperations{triggerStatus: 409}
	p = fakeFlink(t, "1.20.3", refused.handler).Start(context.Background(), op)
	require.Equal(t, OutcomeFailed, p.Outcome, "Flink's refusal fails the operation")
	assert.Contains(t, p.Failure, "job is not running")

	busy := &scriptedOperations{triggerStatus: 503}
	p = fakeFlink(t, "1.20.3", busy.handler).Start(context.Background(), op)
	assert.Equal(t, OutcomePending, p.Outcome, "it may have arrived: the next Advance finds out")
	assert.Error(t, p.Unreachable)
}
