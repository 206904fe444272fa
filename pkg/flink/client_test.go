package flink

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testJob = "0123456789abcdef0123456789abcdef"

// fakeFlink is a scripted JobManager: it answers /config with version and every other
// path with the handler of the test.
func fakeFlink(t *testing.T, version string, handler http.HandlerFunc) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/config" {
			_, _ = io.WriteString(w, `{"flink-version":"`+version+`","flink-revision":"abc","features":{"web-submit":true}}`)
			return
		}
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := New(Options{URL: srv.URL, Timeout: 2 * time.Second})
	require.NoError(t, err)
	return c
}

func reply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func TestErrorClassification(t *testing.T) {
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		call     func(*Client) error
		kind     ErrorKind
		message  string
		is       func(error) bool
		wantCode int
	}{
		{
			name:    "404 on a job is NotFound",
			handler: reply(404, `{"errors":["org.apache.flink.runtime.rest.handler.RestHandlerException: Job 0123 not found\n\tat ..."]}`),
			call:    func(c *Client) error { _, err := c.JobDetails(context.Background(), testJob); return err },
			kind:    KindNotFound, message: "Job 0123 not found", is: IsNotFound, wantCode: 404,
		},
		{
			name:    "404 on a trigger is TriggerNotFound",
			handler: reply(404, `{"errors":["There is no savepoint operation with triggerId=x for job y."]}`),
			call: func(c *Client) error {
				_, err := c.SavepointStatus(context.Background(), testJob, NewTriggerID())
				return err
			},
			kind: KindTriggerNotFound, message: "There is no savepoint operation", is: IsTriggerNotFound, wantCode: 404,
		},
		{
			name:    "409 on cancel is Conflict",
			handler: reply(409, `{"errors":["Job has already terminated"]}`),
			call:    func(c *Client) error { return c.CancelJob(context.Background(), testJob) },
			kind:    KindConflict, message: "Job has already terminated", is: IsConflict, wantCode: 409,
		},
		{
			name:    "400 carries Flink's message",
			handler: reply(400, `{"errors":["Config key [state.savepoints.dir] is not set. Property [targetDirectory] must be provided."]}`),
			call: func(c *Client) error {
				return c.StopWithSavepoint(context.Background(), testJob, StopRequest{TriggerID: NewTriggerID()})
			},
			kind: KindBadRequest, message: "Property [targetDirectory] must be provided", is: IsBadRequest, wantCode: 400,
		},
		{
			name:    "503 is Unavailable",
			handler: reply(503, `{"errors":["Rescaling is temporarily disabled. See FLINK-12312."]}`),
			call:    func(c *Client) error { _, err := c.Overview(context.Background()); return err },
			kind:    KindUnavailable, message: "Rescaling is temporarily disabled", is: IsUnavailable, wantCode: 503,
		},
		{
			name:    "408 is Timeout",
			handler: reply(408, `{"errors":["Request did not complete in time"]}`),
			call:    func(c *Client) error { return c.CancelJob(context.Background(), testJob) },
			kind:    KindTimeout, is: IsTimeout, wantCode: 408,
		},
		{
			name:    "500 shows the server-side exception",
			handler: reply(500, `{"errors":["Internal server error.","<Exception on server side:\njava.lang.UnsupportedOperationException: The DefaultScheduler does not support changing the parallelism\n\tat x\nEnd of exception on server side>"]}`),
			call:    func(c *Client) error { _, err := c.Overview(context.Background()); return err },
			kind:    KindServer, message: "Internal server error. java.lang.UnsupportedOperationException: The DefaultScheduler",
			wantCode: 500,
		},
		{
			name:    "500 from a program that cannot run is BadRequest",
			handler: reply(500, `{"errors":["Internal server error.","<Exception on server side:\norg.apache.flink.client.program.ProgramInvocationException: The main method caused an error: boom\n>"]}`),
			call: func(c *Client) error {
				_, err := c.RunJar(context.Background(), "x_job.jar", RunJarRequest{})
				return err
			},
			kind: KindBadRequest, message: "The main method caused an error: boom", is: IsBadRequest, wantCode: 500,
		},
		{
			name:    "a job id the cluster has is a duplicate job",
			handler: reply(409, `{"errors":["Job has already been submitted."]}`),
			call: func(c *Client) error {
				_, err := c.RunJar(context.Background(), "x_job.jar", RunJarRequest{})
				return err
			},
			kind: KindDuplicateJob, message: "Job has already been submitted.", is: IsDuplicateJob, wantCode: 409,
		},
		{
			name:    "a repeated submission on real Flink: 400 whose trace names the duplicate",
			handler: reply(400, `{"errors":["org.apache.flink.runtime.rest.handler.RestHandlerException: Could not execute application.\n\tat ...\nCaused by: org.apache.flink.runtime.client.DuplicateJobSubmissionException: Job has already been submitted.\n"]}`),
			call: func(c *Client) error {
				_, err := c.RunJar(context.Background(), "x_job.jar", RunJarRequest{})
				return err
			},
			kind: KindDuplicateJob, message: "Could not execute application.", is: IsDuplicateJob, wantCode: 400,
		},
		{
			name:    "an unknown job on real Flink: 500 whose trace names FlinkJobNotFoundException",
			handler: reply(500, `{"errors":["Internal server error.","<Exception on server side:\norg.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job (647f2942eb043e9647c667e634ce8e70)\n\tat x\nEnd of exception on server side>"]}`),
			call: func(c *Client) error {
				_, err := c.JobStatus(context.Background(), "647f2942eb043e9647c667e634ce8e70")
				return err
			},
			kind: KindNotFound, message: "Could not find Flink job", is: IsNotFound, wantCode: 500,
		},
		{
			name:    "malformed JSON",
			handler: reply(200, `{"taskmanagers": "two"`),
			call:    func(c *Client) error { _, err := c.Overview(context.Background()); return err },
			kind:    KindMalformed, message: "cannot decode", wantCode: 200,
		},
		{
			name:    "non-JSON error body is kept",
			handler: reply(502, `<html>Bad Gateway</html>`),
			call:    func(c *Client) error { _, err := c.Overview(context.Background()); return err },
			kind:    KindUnavailable, message: "<html>Bad Gateway</html>", wantCode: 502,
		},
		{
			name: "a slow JobManager times out",
			handler: func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(5 * time.Second):
				}
			},
			call: func(c *Client) error {
				_, err := c.WithTimeout(100 * time.Millisecond).Overview(context.Background())
				return err
			},
			kind: KindTimeout, is: IsTimeout,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeFlink(t, "1.20.3", tt.handler)
			err := tt.call(c)
			require.Error(t, err)
			var fe *Error
			require.True(t, errors.As(err, &fe), "%T: %v", err, err)
			assert.Equal(t, tt.kind, fe.Kind, err.Error())
			assert.Equal(t, tt.wantCode, fe.StatusCode)
			assert.Contains(t, fe.Message+fe.Error(), tt.message)
			assert.NotContains(t, fe.Message, "\tat ", "stack traces stay out of messages")
			if tt.is != nil {
				assert.True(t, tt.is(err))
			}
		})
	}
}

func TestConnectionRefusedIsUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	c, err := New(Options{URL: "http://" + addr})
	require.NoError(t, err)
	_, err = c.Overview(context.Background())
	assert.True(t, IsUnavailable(err), "%v", err)
}

func TestNewRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "localhost:8081", "ftp://x:1", "http://"} {
		_, err := New(Options{URL: u})
		assert.ErrorContains(t, err, "must be http(s)://host:port", u)
	}
}

func TestInvalidIDsAreRejectedBeforeCalling(t *testing.T) {
	var calls atomic.Int32
	c := fakeFlink(t, "1.20.3", func(http.ResponseWriter, *http.Request) { calls.Add(1) })
	ctx := context.Background()
	_, err := c.JobDetails(ctx, "../overview")
	assert.True(t, IsBadRequest(err))
	err = c.TriggerSavepoint(ctx, testJob, SavepointRequest{TriggerID: "not-hex"})
	assert.True(t, IsBadRequest(err))
	assert.ErrorContains(t, err, "use NewTriggerID")
	_, err = c.UploadJar(ctx, "job.zip", strings.NewReader("x"))
	assert.True(t, IsBadRequest(err))
	assert.Zero(t, calls.Load())
}

func TestTriggerRequestsCarryTheCallersTriggerID(t *testing.T) {
	trigger := NewTriggerID()
	var bodies []map[string]any
	c := fakeFlink(t, "1.20.3", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		require.NoError(t, json.NewDecoder(r.Body).Decode(&body))
		bodies = append(bodies, body)
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"request-id":"`+trigger+`"}`)
	})
	ctx := context.Background()
	require.NoError(t, c.TriggerSavepoint(ctx, testJob, SavepointRequest{TriggerID: trigger, TargetDirectory: "s3://b/sp", FormatType: SavepointFormatNative}))
	require.NoError(t, c.StopWithSavepoint(ctx, testJob, StopRequest{TriggerID: trigger, TargetDirectory: "s3://b/sp", Drain: true}))
	require.NoError(t, c.TriggerCheckpoint(ctx, testJob, CheckpointRequest{TriggerID: trigger, Type: CheckpointFull}))
	require.Len(t, bodies, 3)
	// Savepoints use kebab-case, stop and checkpoint camelCase: Flink's wire format.
	assert.Equal(t, map[string]any{"triggerId": trigger, "target-directory": "s3://b/sp", "cancel-job": false, "formatType": "NATIVE"}, bodies[0])
	assert.Equal(t, map[string]any{"triggerId": trigger, "targetDirectory": "s3://b/sp", "drain": true}, bodies[1])
	assert.Equal(t, map[string]any{"triggerId": trigger, "checkpointType": "FULL"}, bodies[2])
}

func TestTriggerIgnoredByOldFlinkIsUnsupported(t *testing.T) {
	c := fakeFlink(t, "1.14.6", reply(202, `{"request-id":"ffffffffffffffffffffffffffffffff"}`))
	err := c.TriggerSavepoint(context.Background(), testJob, SavepointRequest{TriggerID: NewTriggerID()})
	assert.True(t, IsUnsupported(err), "%v", err)
}

func TestVersionDifferences(t *testing.T) {
	t.Run("checkpoints need 1.17", func(t *testing.T) {
		c := fakeFlink(t, "1.16.3", reply(500, "must not be called"))
		err := c.TriggerCheckpoint(context.Background(), testJob, CheckpointRequest{TriggerID: NewTriggerID()})
		assert.True(t, IsUnsupported(err), "%v", err)
		assert.ErrorContains(t, err, "needs Flink 1.17 or newer, the cluster runs 1.16.3")
	})
	t.Run("resource requirements need 1.18", func(t *testing.T) {
		c := fakeFlink(t, "1.17.2", reply(500, "must not be called"))
		_, err := c.ResourceRequirements(context.Background(), testJob)
		assert.True(t, IsUnsupported(err), "%v", err)
	})
	t.Run("job status on 1.15 reads the job details", func(t *testing.T) {
		c := fakeFlink(t, "1.15.4", func(w http.ResponseWriter, r *http.Request) {
			require.Equal(t, "/jobs/"+testJob, r.URL.Path)
			_, _ = io.WriteString(w, `{"jid":"`+testJob+`","state":"RUNNING","vertices":[]}`)
		})
		s, err := c.JobStatus(context.Background(), testJob)
		require.NoError(t, err)
		assert.Equal(t, JobRunning, s)
	})
	t.Run("job status on 1.16+ uses /status", func(t *testing.T) {
		c := fakeFlink(t, "2.0.0", func(w http.ResponseWriter, r *http.Request) {
			require.Equal(t, "/jobs/"+testJob+"/status", r.URL.Path)
			_, _ = io.WriteString(w, `{"status":"FAILING"}`)
		})
		s, err := c.JobStatus(context.Background(), testJob)
		require.NoError(t, err)
		assert.Equal(t, JobFailing, s)
	})
	runBody := func(t *testing.T, version string, req RunJarRequest) (map[string]any, error) {
		var body map[string]any
		c := fakeFlink(t, version, func(w http.ResponseWriter, r *http.Request) {
			require.NoError(t, json.NewDecoder(r.Body).Decode(&body))
			_, _ = io.WriteString(w, `{"jobid":"`+testJob+`"}`)
		})
		_, err := c.RunJar(context.Background(), "abc_job.jar", req)
		return body, err
	}
	t.Run("claim mode is claimMode from 1.20, restoreMode before", func(t *testing.T) {
		req := RunJarRequest{JobID: testJob, SavepointPath: "file:/sp", ClaimMode: ClaimModeClaim, Args: []string{"--a", "b c"}}
		body, err := runBody(t, "1.20.3", req)
		require.NoError(t, err)
		assert.Equal(t, "CLAIM", body["claimMode"])
		assert.NotContains(t, body, "restoreMode")
		assert.Equal(t, []any{"--a", "b c"}, body["programArgsList"])
		body, err = runBody(t, "1.18.1", req)
		require.NoError(t, err)
		assert.Equal(t, "CLAIM", body["restoreMode"])
		assert.NotContains(t, body, "claimMode")
	})
	t.Run("per-job configuration needs 1.17", func(t *testing.T) {
		_, err := runBody(t, "1.16.3", RunJarRequest{FlinkConfiguration: map[string]string{"a": "b"}})
		assert.True(t, IsUnsupported(err), "%v", err)
		body, err := runBody(t, "1.17.2", RunJarRequest{FlinkConfiguration: map[string]string{"a": "b"}})
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"a": "b"}, body["flinkConfiguration"])
	})
}

func TestVersionIsAskedOnce(t *testing.T) {
	var configCalls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/config" {
			configCalls.Add(1)
			_, _ = io.WriteString(w, `{"flink-version":"2.1.0"}`)
			return
		}
		_, _ = io.WriteString(w, `{"status":"RUNNING"}`)
	}))
	defer srv.Close()
	c, err := New(Options{URL: srv.URL})
	require.NoError(t, err)
	for range 3 {
		_, err := c.JobStatus(context.Background(), testJob)
		require.NoError(t, err)
	}
	assert.Equal(t, int32(1), configCalls.Load())
}

func TestJobExceptionsShapes(t *testing.T) {
	t.Run("2.x exception history", func(t *testing.T) {
		c := fakeFlink(t, "2.0.0", func(w http.ResponseWriter, r *http.Request) {
			assert.Equal(t, "3", r.URL.Query().Get("maxExceptions"))
			_, _ = io.WriteString(w, `{"exceptionHistory":{"entries":[{"exceptionName":"java.io.IOException: disk","stacktrace":"java.io.IOException: disk\n\tat x","timestamp":1700000000000,"taskName":"Sink (1/2)","endpoint":"10.0.0.1:6121","failureLabels":{"type":"user"},"concurrentExceptions":[{"exceptionName":"other","timestamp":1}]}],"truncated":true}}`)
		})
		exc, err := c.JobExceptions(context.Background(), testJob, 3)
		require.NoError(t, err)
		require.Len(t, exc.Entries, 1)
		e := exc.Entries[0]
		assert.Equal(t, "java.io.IOException: disk", e.ExceptionName)
		assert.Equal(t, int64(1700000000000), e.Timestamp)
		assert.Equal(t, "10.0.0.1:6121", e.Endpoint)
		assert.Equal(t, map[string]string{"type": "user"}, e.FailureLabels)
		require.Len(t, e.Concurrent, 1)
		assert.True(t, exc.Truncated)
	})
	t.Run("old 1.x root exception only", func(t *testing.T) {
		c := fakeFlink(t, "1.15.4", reply(200, `{"root-exception":"java.lang.RuntimeException: boom\n\tat y","timestamp":1650000000000,"all-exceptions":[],"truncated":false}`))
		exc, err := c.JobExceptions(context.Background(), testJob, 0)
		require.NoError(t, err)
		require.Len(t, exc.Entries, 1)
		assert.Equal(t, "java.lang.RuntimeException: boom", exc.Entries[0].ExceptionName)
		assert.Equal(t, int64(1650000000000), exc.Entries[0].Timestamp)
	})
}

func TestExecutionResultShapes(t *testing.T) {
	t.Run("up to 2.2: application-status", func(t *testing.T) {
		c := fakeFlink(t, "1.20.3", reply(200, `{"status":{"id":"COMPLETED"},"job-execution-result":{"id":"x","application-status":"FAILED","net-runtime":12,"failure-cause":{"class":"java.lang.Exception","stack-trace":"java.lang.Exception: bad\n\tat z","serialized-throwable":"AAA"}}}`))
		r, err := c.ExecutionResult(context.Background(), testJob)
		require.NoError(t, err)
		assert.True(t, r.Completed)
		assert.Equal(t, "FAILED", r.ApplicationStatus)
		assert.Equal(t, "java.lang.Exception: bad", r.Failure.Message())
	})
	t.Run("2.3: job-status", func(t *testing.T) {
		c := fakeFlink(t, "2.3.0", reply(200, `{"status":{"id":"COMPLETED"},"job-execution-result":{"id":"x","job-status":"FINISHED"}}`))
		r, err := c.ExecutionResult(context.Background(), testJob)
		require.NoError(t, err)
		assert.Equal(t, "SUCCEEDED", r.ApplicationStatus)
	})
	t.Run("running", func(t *testing.T) {
		c := fakeFlink(t, "1.20.3", reply(200, `{"status":{"id":"IN_PROGRESS"}}`))
		r, err := c.ExecutionResult(context.Background(), testJob)
		require.NoError(t, err)
		assert.False(t, r.Completed)
	})
}

func TestMetricsAreBareArrays(t *testing.T) {
	c := fakeFlink(t, "1.20.3", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/jobmanager/metrics":
			assert.Equal(t, "taskSlotsTotal,taskSlotsAvailable", r.URL.Query().Get("get"))
			_, _ = io.WriteString(w, `[{"id":"taskSlotsTotal","value":"4"},{"id":"taskSlotsAvailable","value":"1"}]`)
		case "/taskmanagers/metrics":
			assert.Equal(t, "max,avg", r.URL.Query().Get("agg"))
			_, _ = io.WriteString(w, `[{"id":"Status.JVM.Memory.Heap.Used","max":10.5,"avg":7}]`)
		}
	})
	m, err := c.JobManagerMetrics(context.Background(), "taskSlotsTotal", "taskSlotsAvailable")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"taskSlotsTotal": "4", "taskSlotsAvailable": "1"}, m)
	agg, err := c.TaskManagersMetrics(context.Background(), []string{"Status.JVM.Memory.Heap.Used"}, []string{AggMax, AggAvg})
	require.NoError(t, err)
	require.Len(t, agg, 1)
	assert.Equal(t, 10.5, *agg[0].Max)
	assert.Nil(t, agg[0].Sum)
}

// TestUploadJarStreams proves the jar is streamed: the reader refuses to produce its last
// chunk until the server has received the first ones, which could not happen if the client
// read the whole jar before sending.
func TestUploadJarStreams(t *testing.T) {
	const chunk = 1 << 20
	serverGotData := make(chan struct{})
	var received atomic.Int64
	c := fakeFlink(t, "1.20.3", func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/jars/upload", r.URL.Path)
		mr, err := r.MultipartReader()
		require.NoError(t, err)
		part, err := mr.NextPart()
		require.NoError(t, err)
		assert.Equal(t, "jarfile", part.FormName())
		assert.Equal(t, "big.jar", part.FileName())
		assert.Equal(t, "application/x-java-archive", part.Header.Get("Content-Type"))
		buf := make([]byte, 64<<10)
		signalled := false
		for {
			n, err := part.Read(buf)
			received.Add(int64(n))
			if !signalled && received.Load() >= chunk {
				close(serverGotData)
				signalled = true
			}
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
		}
		_, err = mr.NextPart()
		assert.Equal(t, io.EOF, err, "exactly one file part")
		_, _ = io.WriteString(w, `{"filename":"/tmp/flink-web/flink-web-upload/1234_big.jar","status":"success"}`)
	})
	src := &gatedReader{remaining: 8 * chunk, gateAt: 4 * chunk, gate: serverGotData}
	id, err := c.WithTimeout(10*time.Second).UploadJar(context.Background(), "/some/dir/big.jar", src)
	require.NoError(t, err)
	assert.Equal(t, "1234_big.jar", id)
	assert.Equal(t, int64(8*chunk), received.Load())
}

// gatedReader yields zeros; past gateAt bytes it waits for gate to close.
type gatedReader struct {
	remaining, gateAt, read int
	gate                    chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	if g.remaining == 0 {
		return 0, io.EOF
	}
	if g.read >= g.gateAt {
		select {
		case <-g.gate:
		case <-time.After(5 * time.Second):
			return 0, errors.New("the server never received data: the upload is not streamed")
		}
	}
	n := min(len(p), g.remaining)
	clear(p[:n])
	g.remaining -= n
	g.read += n
	return n, nil
}

func TestUploadJarFailureUnblocksTheWriter(t *testing.T) {
	c := fakeFlink(t, "1.20.3", reply(400, `{"errors":["Exactly 1 file must be sent, received 0."]}`))
	_, err := c.UploadJar(context.Background(), "x.jar", io.LimitReader(neverEnding{}, 64<<20))
	assert.True(t, IsBadRequest(err) || IsUnavailable(err), "%v", err)
}

type neverEnding struct{}

func (neverEnding) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestHeadersAndObserver(t *testing.T) {
	var seen http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Clone()
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	var calls []Call
	c, err := New(Options{URL: srv.URL + "/", Headers: map[string]string{"Authorization": "Bearer t0k"},
		OnCall: func(call Call) { calls = append(calls, call) }})
	require.NoError(t, err)
	_, err = c.JobDetails(context.Background(), testJob)
	require.True(t, IsNotFound(err))
	assert.Equal(t, "Bearer t0k", seen.Get("Authorization"))
	require.Len(t, calls, 1)
	assert.Equal(t, "GET /jobs/:jobid", calls[0].Endpoint, "routes, not ids: bounded metric cardinality")
	assert.Equal(t, http.StatusNotFound, calls[0].StatusCode)
	assert.Error(t, calls[0].Err)
}

// TestTLS: the caller's TLS configuration is what the client uses (its roots, not the
// system's), and the no-redirect rule holds over https too.
func TestTLS(t *testing.T) {
	var victimHits atomic.Int64
	victim := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { victimHits.Add(1) }))
	defer victim.Close()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPatch {
			http.Redirect(w, r, victim.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
			return
		}
		_, _ = io.WriteString(w, `{"taskmanagers":3}`)
	}))
	defer srv.Close()
	trusted := x509.NewCertPool()
	trusted.AddCert(srv.Certificate())
	cfg := &tls.Config{RootCAs: trusted, MinVersion: tls.VersionTLS12}

	c, err := New(Options{URL: srv.URL, TLS: cfg})
	require.NoError(t, err)
	o, err := c.Overview(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 3, o.TaskManagers)
	err = c.CancelJob(context.Background(), testJob)
	assert.Equal(t, KindRedirect, KindOf(err), "%v", err)
	assert.Zero(t, victimHits.Load(), "the client followed a redirect over https")

	untrusted, err := New(Options{URL: srv.URL, TLS: &tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12}})
	require.NoError(t, err)
	_, err = untrusted.Overview(context.Background())
	var unknownAuthority x509.UnknownAuthorityError
	assert.True(t, errors.As(err, &unknownAuthority), "%v", err)
	assert.Equal(t, KindUnavailable, KindOf(err), "%v", err)
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in      string
		want    Version
		wantErr bool
	}{
		{in: "1.20.3", want: Version{1, 20, 3}},
		{in: "2.0-SNAPSHOT", want: Version{2, 0, 0}},
		{in: "1.18.1-custom", want: Version{1, 18, 1}},
		{in: "v1.2", wantErr: true},
		{in: "1", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseVersion(tt.in)
		if tt.wantErr {
			assert.Error(t, err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got)
	}
	assert.True(t, Version{2, 0, 0}.AtLeast(1, 20))
	assert.False(t, Version{1, 16, 9}.AtLeast(1, 17))
}

func TestNewTriggerID(t *testing.T) {
	a, b := NewTriggerID(), NewTriggerID()
	assert.True(t, IsValidID(a))
	assert.NotEqual(t, a, b)
	assert.False(t, IsValidID("XYZ"))
}
