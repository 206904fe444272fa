package bench

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// jobManagers is one HTTP server playing the JobManager REST endpoint of every cluster of the
// running mode ("one process, many addresses"): the operator reaches cluster ns/name at
// <URL>/ns/name (its --flink-rest-url-template), and each cluster has its own jobs and
// savepoints. It answers what the operator asks of a running application cluster: the
// dashboard configuration, job status and exceptions, and stop-with-savepoint, which completes
// at once. It counts every call by cluster and route, so the bench can tell what observing
// a job costs. Unlike test/fakeflink it records counts, not every request, so 1,000 clusters
// observed for minutes cost it nothing, and it needs no testing.TB.
type jobManagers struct {
	srv *httptest.Server

	mu       sync.Mutex
	clusters map[string]*fakeCluster
	// calls not addressed to a cluster, by route.
	calls callCounts
}

// fakeCluster is the state of one cluster's JobManager.
type fakeCluster struct {
	// jobs by id.
	jobs map[string]*fakeJob
	// savepoints are the locations of completed stop-with-savepoints, by trigger id.
	savepoints map[string]string
	// lastSavepoint is the location of the newest stop-with-savepoint.
	lastSavepoint string
	calls         callCounts
}

type fakeJob struct {
	state string
	// restoredFrom is the savepoint the job was started from ("" when started empty).
	restoredFrom string
}

// callCounts are REST calls by "METHOD route", routes as pkg/flink names them
// ("GET /jobs/:jobid/status").
type callCounts map[string]int

func (c callCounts) total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// minus is c - o, route by route, without the routes that did not move.
func (c callCounts) minus(o callCounts) callCounts {
	out := callCounts{}
	for k, v := range c {
		if d := v - o[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func newJobManagers() *jobManagers {
	j := &jobManagers{clusters: map[string]*fakeCluster{}, calls: callCounts{}}
	j.srv = httptest.NewServer(http.HandlerFunc(j.serve))
	return j
}

func (j *jobManagers) close() { j.srv.Close() }

// urlTemplate is the operator's --flink-rest-url-template that routes each cluster here.
func (j *jobManagers) urlTemplate() string { return j.srv.URL + "/{{namespace}}/{{name}}" }

// start runs job jobID on cluster ns/name, restored from restoredFrom, as an application
// cluster's JobManager does when it comes up.
func (j *jobManagers) start(ns, name, jobID, restoredFrom string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	c := j.cluster(ns + "/" + name)
	c.jobs[jobID] = &fakeJob{state: "RUNNING", restoredFrom: restoredFrom}
}

// restoredFromLastSavepoint says whether job jobID of cluster ns/name runs and was started
// from the cluster's newest stop-with-savepoint.
func (j *jobManagers) restoredFromLastSavepoint(ns, name, jobID string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	c, ok := j.clusters[ns+"/"+name]
	if !ok || c.lastSavepoint == "" {
		return false
	}
	job, ok := c.jobs[jobID]
	return ok && job.state == "RUNNING" && job.restoredFrom == c.lastSavepoint
}

// counts returns the calls so far by route: to every cluster when clusters is nil, else to
// the named ones (ns/name).
func (j *jobManagers) counts(clusters map[string]bool) callCounts {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := callCounts{}
	for key, c := range j.clusters {
		if clusters != nil && !clusters[key] {
			continue
		}
		for route, n := range c.calls {
			out[route] += n
		}
	}
	if clusters == nil {
		for route, n := range j.calls {
			out[route] += n
		}
	}
	return out
}

// cluster returns the state of cluster key, creating it; j.mu is held.
func (j *jobManagers) cluster(key string) *fakeCluster {
	c, ok := j.clusters[key]
	if !ok {
		c = &fakeCluster{jobs: map[string]*fakeJob{}, savepoints: map[string]string{}, calls: callCounts{}}
		j.clusters[key] = c
	}
	return c
}

func (j *jobManagers) serve(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) < 3 {
		j.count(r.Method+" (no cluster)", "")
		reply(w, http.StatusNotFound, errorsBody("fake JobManager: no cluster in "+r.URL.Path))
		return
	}
	key, rest := parts[0]+"/"+parts[1], parts[2:]
	route := r.Method + " " + routeOf(rest)
	j.count(route, key)

	j.mu.Lock()
	defer j.mu.Unlock()
	c := j.cluster(key)
	switch route {
	case "GET /config":
		reply(w, http.StatusOK, map[string]any{"flink-version": "1.20.3", "flink-revision": "fake",
			"features": map[string]bool{"web-submit": false}})
	case "GET /jobs/:jobid/status":
		job, ok := c.jobs[rest[1]]
		if !ok {
			reply(w, http.StatusNotFound, errorsBody("Job "+rest[1]+" not found"))
			return
		}
		reply(w, http.StatusOK, map[string]string{"status": job.state})
	case "GET /jobs/:jobid":
		job, ok := c.jobs[rest[1]]
		if !ok {
			reply(w, http.StatusNotFound, errorsBody("Job "+rest[1]+" not found"))
			return
		}
		reply(w, http.StatusOK, map[string]any{"jid": rest[1], "name": "bench", "state": job.state, "start-time": 1, "vertices": []any{}})
	case "GET /jobs/:jobid/exceptions":
		reply(w, http.StatusOK, map[string]any{"exceptionHistory": map[string]any{"entries": []any{}, "truncated": false}})
	case "POST /jobs/:jobid/stop":
		var body struct {
			TriggerID string `json:"triggerId"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.TriggerID) < 12 {
			reply(w, http.StatusBadRequest, errorsBody("stop: a triggerId is required"))
			return
		}
		job, ok := c.jobs[rest[1]]
		if !ok {
			reply(w, http.StatusNotFound, errorsBody("Job "+rest[1]+" not found"))
			return
		}
		// The savepoint completes at once: the bench measures the operator, not Flink.
		if _, seen := c.savepoints[body.TriggerID]; !seen && job.state == "RUNNING" {
			loc := fmt.Sprintf("file:/flink/savepoints/%s/savepoint-%s-%s", key, rest[1][:6], body.TriggerID[:12])
			c.savepoints[body.TriggerID], c.lastSavepoint, job.state = loc, loc, "FINISHED"
		}
		reply(w, http.StatusAccepted, map[string]string{"request-id": body.TriggerID})
	case "GET /jobs/:jobid/savepoints/:triggerid":
		loc, ok := c.savepoints[rest[3]]
		if !ok {
			reply(w, http.StatusNotFound, errorsBody("There is no savepoint operation with triggerId="+rest[3]))
			return
		}
		reply(w, http.StatusOK, map[string]any{"status": map[string]string{"id": "COMPLETED"},
			"operation": map[string]string{"location": loc}})
	default:
		reply(w, http.StatusNotFound, errorsBody("fake JobManager: no handler for "+route))
	}
}

func (j *jobManagers) count(route, cluster string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if cluster == "" {
		j.calls[route]++ // not addressed to any cluster: a wrong URL template
		return
	}
	j.cluster(cluster).calls[route]++
}

// routeOf names a REST path as pkg/flink's route templates do: job and trigger ids replaced.
func routeOf(parts []string) string {
	out := make([]string, len(parts))
	copy(out, parts)
	if len(out) >= 2 && out[0] == "jobs" && out[1] != "overview" {
		out[1] = ":jobid"
		if len(out) >= 4 && (out[2] == "savepoints" || out[2] == "checkpoints") {
			out[3] = ":triggerid"
		}
	}
	return "/" + strings.Join(out, "/")
}

func errorsBody(msg string) map[string]any { return map[string]any{"errors": []string{msg}} }

func reply(w http.ResponseWriter, status int, body any) {
	out, err := json.Marshal(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(out)
}
