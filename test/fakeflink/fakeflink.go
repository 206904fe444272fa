// Package fakeflink is a scripted Flink JobManager REST server for tests that need to drive
// the operator through states real Flink reaches rarely or slowly: jobs appear in the states
// the test sets, savepoints complete or fail on command, and every request is recorded.
// Test-only code; real-Flink tests use test/flinkcluster.
package fakeflink

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a fake JobManager shared by all clusters of a test.
type Server struct {
	*httptest.Server
	mu sync.Mutex
	// Version reported by GET /config.
	Version string
	jobs    map[string]string
	// savepoints by trigger id: "" in progress, else location; failures in failed.
	savepoints map[string]string
	failed     map[string]string
	// SavepointLocation returns the location of a completed savepoint for a trigger.
	SavepointLocation func(jobID, trigger string) string
	// OnStop is called with each stop-with-savepoint request before it is answered.
	OnStop func(jobID, trigger string)
	// autoComplete completes savepoints as soon as they are triggered (the default).
	autoComplete bool
	requests     []string
	// jars uploaded and not deleted, by id; runs records each jar run's request body.
	jars map[string]int
	runs []RunRequest
	// exceptions by job id, newest first, as /jobs/:id/exceptions returns them.
	exceptions map[string][]map[string]any
	// triggered are the trigger ids of savepoints and checkpoints asked for; disposed the
	// savepoint paths disposed.
	triggered, disposed []string
	// stops are the trigger ids of stop-with-savepoint requests (and, for older tests, of plain
	// savepoints); stopTriggers only those of POST /jobs/:id/stop, whose completion ends the job.
	stops        []string
	stopTriggers map[string]bool
	// stopsByJob are the trigger ids of POST /jobs/:id/stop by job id, in the order received.
	stopsByJob map[string][]string
	// jobMetrics are job metric values by job id and name.
	jobMetrics map[string]map[string]string
	// requirements are the adaptive scheduler's resource requirements by job id and vertex.
	requirements map[string]map[string]map[string]map[string]int
	// FailRun, when set, makes POST /jars/:id/run fail with this message (HTTP 400).
	FailRun string
	// runFailure, when set, fails the runs it returns a message for (SetRunFailure).
	runFailure func(RunRequest) string
	// RunDelay and CancelDelay make POST /jars/:id/run and PATCH /jobs/:id (cancel) answer
	// only after this long (a busy JobManager); set them before the operator starts.
	RunDelay, CancelDelay time.Duration
	// onCancel, when set, is called when a job is cancelled (after it is CANCELED).
	onCancel func(jobID string)
	// latestCheckpoints override CheckpointPath as a job's latest completed checkpoint.
	latestCheckpoints map[string]string
	// restored are the checkpoints jobs report they restored from (SetRestored).
	restored map[string]string
	// runningSince is each job's timestamps.RUNNING (epoch ms): its last switch to RUNNING.
	runningSince map[string]int64
	// failCancel, when set, makes PATCH /jobs/:id (cancel) fail with this message (HTTP 500).
	failCancel string
	// checkpointFailure, when set, makes every triggered checkpoint fail with this message.
	checkpointFailure string
	// savepointFailure, when set, makes every savepoint or stop-with-savepoint triggered from
	// then on fail with this message (the job keeps running, as Flink's does).
	savepointFailure string
	// unreachable, when set, answers every request with HTTP 503 and this message: a
	// JobManager whose REST API cannot serve (overloaded, restarting, cut off).
	unreachable string
	// graphs are the scripted job graphs and metrics (metrics.go).
	graphs *graphs
}

// RunRequest is what a POST /jars/:id/run asked for.
type RunRequest struct {
	JarID         string `json:"-"`
	JobID         string `json:"jobId"`
	EntryClass    string `json:"entryClass"`
	Parallelism   int    `json:"parallelism"`
	SavepointPath string `json:"savepointPath"`
	// FlinkConfiguration is the job's configuration sent with the run (Flink 1.17 and later).
	FlinkConfiguration map[string]string `json:"flinkConfiguration"`
}

// New starts a fake JobManager.
func New(t testing.TB) *Server {
	s := &Server{Version: "1.20.3", jobs: map[string]string{}, savepoints: map[string]string{}, failed: map[string]string{},
		autoComplete: true, jars: map[string]int{}, exceptions: map[string][]map[string]any{}, jobMetrics: map[string]map[string]string{},
		requirements: map[string]map[string]map[string]map[string]int{}, stopTriggers: map[string]bool{}, stopsByJob: map[string][]string{}}
	s.SavepointLocation = func(jobID, trigger string) string {
		return "file:/flink/savepoints/savepoint-" + jobID[:6] + "-" + trigger[:12]
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// SetJob sets a job's state ("" removes it).
func (s *Server) SetJob(id, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if state == "" {
		delete(s.jobs, id)
		return
	}
	s.jobs[id] = state
}

// SetRunningSince sets when a job last switched to RUNNING (its details' timestamps.RUNNING, in
// epoch milliseconds): a failover keeps the job id and start-time and moves this. 1 when unset.
func (s *Server) SetRunningSince(id string, ms int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runningSince == nil {
		s.runningSince = map[string]int64{}
	}
	s.runningSince[id] = ms
}

func (s *Server) runningSinceLocked(id string) int64 {
	if ms, ok := s.runningSince[id]; ok {
		return ms
	}
	return 1
}

// Job returns a job's state ("" when unknown).
func (s *Server) Job(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobs[id]
}

// AddException records a failure of a job (newest first in the answers).
func (s *Server) AddException(jobID, name, message, task string, timestamp int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := map[string]any{"exceptionName": name, "stacktrace": name + ": " + message + "\n\tat org.example.Job.run(Job.java:1)",
		"timestamp": timestamp, "taskName": task}
	s.exceptions[jobID] = append([]map[string]any{e}, s.exceptions[jobID]...)
}

// Triggered returns the trigger ids of the savepoints and checkpoints triggered so far.
func (s *Server) Triggered() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.triggered...)
}

// SetVertices gives a job (on the adaptive scheduler) vertices with parallelism bounds.
func (s *Server) SetVertices(jobID string, parallelism map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	reqs := map[string]map[string]map[string]int{}
	for v, p := range parallelism {
		reqs[v] = map[string]map[string]int{"parallelism": {"lowerBound": 1, "upperBound": p}}
	}
	s.requirements[jobID] = reqs
}

// Vertices returns a job's per-vertex upper parallelism bounds.
func (s *Server) Vertices(jobID string) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for v, r := range s.requirements[jobID] {
		out[v] = r["parallelism"]["upperBound"]
	}
	return out
}

// OnCancel sets a function called with the job id whenever a job is cancelled (nil: none).
func (s *Server) OnCancel(f func(jobID string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onCancel = f
}

// FailCancel makes every cancel fail with an internal server error carrying message, leaving
// the job as it is ("" ends that).
func (s *Server) FailCancel(message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failCancel = message
}

// SetRestored makes path what the job's checkpoint statistics say it restored from
// (latest.restored), as a job recovered from HA metadata reports.
func (s *Server) SetRestored(jobID, path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.restored == nil {
		s.restored = map[string]string{}
	}
	s.restored[jobID] = path
}

// SetLatestCheckpoint makes path the job's latest completed checkpoint (instead of
// CheckpointPath), as when a newer checkpoint completes.
func (s *Server) SetLatestCheckpoint(jobID, path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latestCheckpoints == nil {
		s.latestCheckpoints = map[string]string{}
	}
	s.latestCheckpoints[jobID] = path
}

// SetJobMetric sets a job metric (numRestarts, numberOfCompletedCheckpoints, ...).
func (s *Server) SetJobMetric(jobID, name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jobMetrics[jobID] == nil {
		s.jobMetrics[jobID] = map[string]string{}
	}
	s.jobMetrics[jobID][name] = value
}

// Stops returns the trigger ids of stop-with-savepoint requests so far (repeats included).
func (s *Server) Stops() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.stops...)
}

// StopsOf returns the trigger ids of the stop-with-savepoint requests one job received, in order.
// Unlike Requests, which records a request as it arrives, a trigger is listed only once the
// request's body was read, so a test waiting on StopsOf never sees a stop without its trigger.
func (s *Server) StopsOf(jobID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.stopsByJob[jobID]...)
}

// Disposed returns the savepoint paths disposed so far.
func (s *Server) Disposed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.disposed...)
}

// Runs returns the jar runs so far.
func (s *Server) Runs() []RunRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]RunRequest(nil), s.runs...)
}

// Jars returns the number of uploaded jars not deleted yet.
func (s *Server) Jars() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.jars)
}

// Requests returns "METHOD /path" of every request so far.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.Method+" "+r.URL.Path)
	unreachable := s.unreachable
	s.mu.Unlock()
	if unreachable != "" {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"errors": []string{unreachable}})
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if s.serveGraph(w, r, parts) {
		return
	}
	switch {
	case r.URL.Path == "/config":
		writeJSON(w, 200, map[string]any{"flink-version": s.Version, "flink-revision": "fake", "features": map[string]bool{"web-submit": true}})
	case r.URL.Path == "/jobs/overview":
		s.mu.Lock()
		jobs := make([]map[string]any, 0, len(s.jobs))
		for id, state := range s.jobs {
			jobs = append(jobs, map[string]any{"jid": id, "name": "fake", "state": state, "start-time": 1, "end-time": -1})
		}
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"jobs": jobs})
	case r.URL.Path == "/overview":
		writeJSON(w, 200, map[string]any{"taskmanagers": 1, "slots-total": 2, "flink-version": s.Version})
	case len(parts) == 3 && parts[0] == "jobs" && parts[2] == "resource-requirements":
		s.mu.Lock()
		defer s.mu.Unlock()
		if r.Method == http.MethodPut {
			var body map[string]map[string]map[string]int
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
				writeJSON(w, 400, map[string]any{"errors": []string{err.Error()}})
				return
			}
			s.requirements[parts[1]] = body
			writeJSON(w, 200, map[string]any{})
			return
		}
		reqs, ok := s.requirements[parts[1]]
		if !ok {
			writeJSON(w, 404, map[string]any{"errors": []string{"Job not found or not on the adaptive scheduler"}})
			return
		}
		writeJSON(w, 200, reqs)
	case len(parts) == 3 && parts[0] == "jobs" && parts[2] == "metrics":
		s.mu.Lock()
		values := s.jobMetrics[parts[1]]
		var out []map[string]string
		for _, name := range strings.Split(r.URL.Query().Get("get"), ",") {
			if v, ok := values[name]; ok {
				out = append(out, map[string]string{"id": name, "value": v})
			}
		}
		s.mu.Unlock()
		writeJSON(w, 200, out)
	case len(parts) == 3 && parts[0] == "jobs" && parts[2] == "status":
		s.mu.Lock()
		state, ok := s.jobs[parts[1]]
		s.mu.Unlock()
		if !ok {
			writeJSON(w, 404, map[string]any{"errors": []string{"Job " + parts[1] + " not found"}})
			return
		}
		writeJSON(w, 200, map[string]string{"status": state})
	case len(parts) == 3 && parts[0] == "jobs" && parts[2] == "stop" && r.Method == http.MethodPost:
		var body struct {
			TriggerID string `json:"triggerId"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if s.OnStop != nil {
			s.OnStop(parts[1], body.TriggerID)
		}
		s.mu.Lock()
		if _, ok := s.jobs[parts[1]]; !ok {
			s.mu.Unlock()
			writeJSON(w, 404, map[string]any{"errors": []string{"Job not found"}})
			return
		}
		s.stops = append(s.stops, body.TriggerID)
		s.stopTriggers[body.TriggerID] = true
		s.stopsByJob[parts[1]] = append(s.stopsByJob[parts[1]], body.TriggerID)
		if _, seen := s.savepoints[body.TriggerID]; !seen {
			s.savepoints[body.TriggerID] = ""
			switch {
			case s.savepointFailure != "":
				s.failed[body.TriggerID], s.savepoints[body.TriggerID] = s.savepointFailure, "failed"
			case s.autoComplete:
				s.savepoints[body.TriggerID] = s.SavepointLocation(parts[1], body.TriggerID)
				s.jobs[parts[1]] = "FINISHED"
			}
		}
		s.mu.Unlock()
		writeJSON(w, 202, map[string]string{"request-id": body.TriggerID})
	case len(parts) == 3 && parts[0] == "jobs" && parts[2] == "savepoints" && r.Method == http.MethodPost:
		var body struct {
			TriggerID string `json:"triggerId"`
			Target    string `json:"target-directory"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		s.mu.Lock()
		defer s.mu.Unlock()
		if state, ok := s.jobs[parts[1]]; !ok || state != "RUNNING" {
			writeJSON(w, 404, map[string]any{"errors": []string{"Job not found"}})
			return
		}
		s.triggered = append(s.triggered, body.TriggerID)
		s.stops = append(s.stops, body.TriggerID)
		if _, seen := s.savepoints[body.TriggerID]; !seen {
			s.savepoints[body.TriggerID] = ""
			if s.savepointFailure != "" {
				s.failed[body.TriggerID], s.savepoints[body.TriggerID] = s.savepointFailure, "failed"
			} else if s.autoComplete {
				loc := s.SavepointLocation(parts[1], body.TriggerID)
				if body.Target != "" {
					loc = strings.TrimSuffix(body.Target, "/") + "/savepoint-" + parts[1][:6] + "-" + body.TriggerID[:12]
				}
				s.savepoints[body.TriggerID] = loc
			}
		}
		writeJSON(w, 202, map[string]string{"request-id": body.TriggerID})
	case len(parts) == 3 && parts[0] == "jobs" && parts[2] == "checkpoints" && r.Method == http.MethodPost:
		var body struct {
			TriggerID string `json:"triggerId"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		s.mu.Lock()
		s.triggered = append(s.triggered, body.TriggerID)
		s.mu.Unlock()
		writeJSON(w, 202, map[string]string{"request-id": body.TriggerID})
	case len(parts) == 4 && parts[0] == "jobs" && parts[2] == "checkpoints":
		s.mu.Lock()
		failure := s.checkpointFailure
		s.mu.Unlock()
		if failure != "" {
			writeJSON(w, 200, map[string]any{"status": map[string]string{"id": "COMPLETED"},
				"operation": map[string]any{"failureCause": map[string]string{"class": "java.lang.Exception", "stack-trace": "java.lang.Exception: " + failure}}})
			return
		}
		writeJSON(w, 200, map[string]any{"status": map[string]string{"id": "COMPLETED"}, "operation": map[string]any{"checkpointId": 7}})
	case r.URL.Path == "/savepoint-disposal" && r.Method == http.MethodPost:
		var body struct {
			Path string `json:"savepoint-path"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		s.mu.Lock()
		s.disposed = append(s.disposed, body.Path)
		s.mu.Unlock()
		writeJSON(w, 202, map[string]string{"request-id": "disposal-1"})
	case len(parts) == 4 && parts[0] == "jobs" && parts[2] == "savepoints":
		s.mu.Lock()
		loc, ok := s.savepoints[parts[3]]
		failure := s.failed[parts[3]]
		s.mu.Unlock()
		switch {
		case !ok:
			writeJSON(w, 404, map[string]any{"errors": []string{"There is no savepoint operation with triggerId=" + parts[3]}})
		case failure != "":
			writeJSON(w, 200, map[string]any{"status": map[string]string{"id": "COMPLETED"},
				"operation": map[string]any{"failure-cause": map[string]string{"class": "java.lang.Exception", "stack-trace": "java.lang.Exception: " + failure}}})
		case loc == "":
			writeJSON(w, 200, map[string]any{"status": map[string]string{"id": "IN_PROGRESS"}})
		default:
			writeJSON(w, 200, map[string]any{"status": map[string]string{"id": "COMPLETED"}, "operation": map[string]string{"location": loc}})
		}
	case len(parts) == 3 && parts[0] == "jobs" && parts[2] == "checkpoints" && r.Method == http.MethodGet:
		s.mu.Lock()
		_, ok := s.jobs[parts[1]]
		latest, id := CheckpointPath(parts[1]), 7
		if p, set := s.latestCheckpoints[parts[1]]; set {
			latest, id = p, 8
		}
		restored := s.restored[parts[1]]
		s.mu.Unlock()
		if !ok {
			writeJSON(w, 404, map[string]any{"errors": []string{"Job not found"}})
			return
		}
		stats := map[string]any{"completed": map[string]any{"id": id, "external_path": latest, "state_size": StateSize}}
		if restored != "" {
			stats["restored"] = map[string]any{"id": id - 1, "external_path": restored, "is_savepoint": false}
		}
		writeJSON(w, 200, map[string]any{"counts": map[string]int{"completed": id}, "latest": stats})
	case r.URL.Path == "/jars/upload" && r.Method == http.MethodPost:
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		id := fmt.Sprintf("%d_job.jar", len(s.jars)+len(s.runs)+1)
		s.jars[id] = len(body)
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"filename": "/tmp/flink-web-upload/" + id, "status": "success"})
	case len(parts) == 3 && parts[0] == "jars" && parts[2] == "run" && r.Method == http.MethodPost:
		time.Sleep(s.RunDelay)
		var req RunRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		req.JarID = parts[1]
		s.mu.Lock()
		defer s.mu.Unlock()
		s.runs = append(s.runs, req)
		failure := s.FailRun
		if s.runFailure != nil && failure == "" {
			failure = s.runFailure(req)
		}
		switch {
		case failure != "":
			writeJSON(w, 400, map[string]any{"errors": []string{failure}})
		case s.jobs[req.JobID] != "" && s.jobs[req.JobID] != "CANCELED" && s.jobs[req.JobID] != "FINISHED":
			writeJSON(w, 409, map[string]any{"errors": []string{"Job has already been submitted."}})
		default:
			s.jobs[req.JobID] = "RUNNING"
			writeJSON(w, 200, map[string]any{"jobid": req.JobID})
		}
	case len(parts) == 2 && parts[0] == "jars" && r.Method == http.MethodDelete:
		s.mu.Lock()
		delete(s.jars, parts[1])
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{})
	case len(parts) == 3 && parts[0] == "jobs" && parts[2] == "exceptions":
		s.mu.Lock()
		entries := s.exceptions[parts[1]]
		s.mu.Unlock()
		if entries == nil {
			entries = []map[string]any{}
		}
		writeJSON(w, 200, map[string]any{"exceptionHistory": map[string]any{"entries": entries, "truncated": false}})
	case len(parts) == 2 && parts[0] == "jobs" && r.Method == http.MethodGet:
		s.mu.Lock()
		state, ok := s.jobs[parts[1]]
		s.mu.Unlock()
		if !ok {
			writeJSON(w, 404, map[string]any{"errors": []string{"Job " + parts[1] + " not found"}})
			return
		}
		s.mu.Lock()
		running := s.runningSinceLocked(parts[1])
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"jid": parts[1], "name": "fake", "state": state, "start-time": 1,
			"timestamps": map[string]int64{"RUNNING": running}, "vertices": []any{}})
	case len(parts) == 2 && parts[0] == "jobs" && r.Method == http.MethodPatch:
		time.Sleep(s.CancelDelay)
		s.mu.Lock()
		if s.failCancel != "" {
			failure := s.failCancel
			s.mu.Unlock()
			writeJSON(w, 500, map[string]any{"errors": []string{failure}})
			return
		}
		if _, ok := s.jobs[parts[1]]; !ok {
			s.mu.Unlock()
			writeJSON(w, 404, map[string]any{"errors": []string{"Job not found"}})
			return
		}
		s.jobs[parts[1]] = "CANCELED"
		onCancel := s.onCancel
		s.mu.Unlock()
		if onCancel != nil {
			onCancel(parts[1])
		}
		writeJSON(w, 202, map[string]any{})
	default:
		writeJSON(w, 404, map[string]any{"errors": []string{fmt.Sprintf("fakeflink: no handler for %s %s", r.Method, r.URL.Path)}})
	}
}

// SetRunFailure makes the runs f returns a message for fail with it (HTTP 400), as Flink
// answers a program whose main method throws (a missing entry class, bad arguments); nil
// lets every run through again.
func (s *Server) SetRunFailure(f func(RunRequest) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runFailure = f
}

// SetCheckpointFailure makes every triggered checkpoint fail with message ("" lets them
// complete).
func (s *Server) SetCheckpointFailure(message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checkpointFailure = message
}

// SetSavepointFailure makes every savepoint and stop-with-savepoint triggered from now on
// fail with message ("" lets them complete again).
func (s *Server) SetSavepointFailure(message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.savepointFailure = message
}

// SetUnreachable makes the JobManager answer every request with HTTP 503 and message ("" makes
// it answer again).
func (s *Server) SetUnreachable(message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unreachable = message
}

// SetAutoComplete says whether savepoints complete as soon as they are triggered; when not,
// CompleteSavepoint ends them.
func (s *Server) SetAutoComplete(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.autoComplete = on
}

// CompleteSavepoint completes a pending savepoint (when AutoComplete is off), or fails it
// with a message. A completed stop-with-savepoint ends its job; a plain savepoint does not.
func (s *Server) CompleteSavepoint(jobID, trigger, failure string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if failure != "" {
		s.failed[trigger] = failure
		s.savepoints[trigger] = "failed"
		return
	}
	s.savepoints[trigger] = s.SavepointLocation(jobID, trigger)
	if s.stopTriggers[trigger] {
		s.jobs[jobID] = "FINISHED"
	}
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	out, _ := json.Marshal(body)
	_, _ = w.Write(out)
}

// StateSize is the size of every job's latest completed checkpoint.
const StateSize = 9685

// CheckpointPath is the latest completed checkpoint the fake reports for a job.
func CheckpointPath(jobID string) string { return "file:/flink/checkpoints/" + jobID + "/chk-7" }
