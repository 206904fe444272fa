package flink

// Hostile JobManagers: a tenant chooses its Flink image, so whatever a JobManager answers is
// untrusted input. Each test feeds one kind of hostile answer and checks that the operator's
// client stays bounded and never acts on another host's behalf.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRedirectsAreNotFollowed: a JobManager answering 307/308 would otherwise make the client
// replay PATCH (cancel) or POST (savepoint disposal) against another tenant's JobManager.
func TestRedirectsAreNotFollowed(t *testing.T) {
	var victimHits atomic.Int64
	victim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		victimHits.Add(1)
		_, _ = io.WriteString(w, `{"request-id":"x","status":{"id":"COMPLETED"}}`)
	}))
	defer victim.Close()

	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		hostile := func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, victim.URL+r.URL.RequestURI(), code)
		}
		calls := map[string]func(*Client) error{
			"GET job details": func(c *Client) error { _, err := c.JobDetails(context.Background(), testJob); return err },
			"PATCH cancel":    func(c *Client) error { return c.CancelJob(context.Background(), testJob) },
			"POST dispose": func(c *Client) error {
				_, err := c.DisposeSavepoint(context.Background(), "s3://victim-bucket/savepoint-1")
				return err
			},
			"DELETE jar": func(c *Client) error { return c.DeleteJar(context.Background(), "1234_job.jar") },
		}
		for name, call := range calls {
			t.Run(http.StatusText(code)+" "+name, func(t *testing.T) {
				c := fakeFlink(t, "1.20.3", hostile)
				err := call(c)
				require.Error(t, err)
				assert.Equal(t, KindRedirect, KindOf(err), "%v", err)
				assert.Equal(t, code, err.(*Error).StatusCode)
			})
		}
	}
	t.Run("a caller's own http.Client does not follow either", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, victim.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
		}))
		defer srv.Close()
		c, err := New(Options{URL: srv.URL, HTTPClient: &http.Client{}})
		require.NoError(t, err)
		err = c.CancelJob(context.Background(), testJob)
		assert.Equal(t, KindRedirect, KindOf(err), "%v", err)
	})
	assert.Zero(t, victimHits.Load(), "the client followed a redirect to another host")
}

// heapDuring returns the bytes allocated while f runs (all goroutines: the test servers'
// allocations count too, which only makes the bound stricter).
func heapDuring(f func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHugeResponseIsABoundedError: a 40 MiB reply is refused after a few MiB, not read and
// decoded whole.
func TestHugeResponseIsABoundedError(t *testing.T) {
	body := append([]byte(`{"exceptionHistory":{"entries":[`), bytes.Repeat([]byte(`{},`), 40<<20/3)...)
	body = append(body, []byte(`{}]}}`)...)
	c := fakeFlink(t, "1.20.3", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) })
	var err error
	alloc := heapDuring(func() { _, err = c.JobExceptions(context.Background(), testJob, 10) })
	require.Error(t, err)
	assert.Equal(t, KindMalformed, KindOf(err), "%v", err)
	assert.Contains(t, err.Error(), "larger than")
	t.Logf("allocated %d KiB", alloc>>10)
	assert.Less(t, alloc, uint64(64<<20), "allocated %d MiB for one reply", alloc>>20)
}

// TestManySmallValuesAreRefusedBeforeDecoding: a reply under the size cap made of empty
// objects would decode into millions of structs (50x its size in heap).
func TestManySmallValuesAreRefusedBeforeDecoding(t *testing.T) {
	body := append([]byte(`{"exceptionHistory":{"entries":[`), bytes.Repeat([]byte(`{},`), 1<<20)...)
	body = append(body, []byte(`{}]}}`)...)
	c := fakeFlink(t, "1.20.3", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) })
	var err error
	alloc := heapDuring(func() { _, err = c.JobExceptions(context.Background(), testJob, 10) })
	require.Error(t, err)
	assert.Equal(t, KindMalformed, KindOf(err), "%v", err)
	t.Logf("allocated %d KiB", alloc>>10)
	assert.Less(t, alloc, uint64(64<<20), "allocated %d MiB for one reply", alloc>>20)
}

// TestJobExceptionsAreCappedAtMax: a JobManager ignoring maxExceptions does not make the
// operator hold (and report) more entries than it asked for.
func TestJobExceptionsAreCappedAtMax(t *testing.T) {
	entry := `{"exceptionName":"E","stacktrace":"E: boom","timestamp":1,"concurrentExceptions":[` +
		strings.TrimSuffix(strings.Repeat(`{"exceptionName":"C","timestamp":1},`, 50), ",") + `]}`
	body := `{"exceptionHistory":{"entries":[` + strings.TrimSuffix(strings.Repeat(entry+",", 20), ",") + `],"truncated":false}}`
	c := fakeFlink(t, "1.20.3", reply(200, body))
	ex, err := c.JobExceptions(context.Background(), testJob, 5)
	require.NoError(t, err)
	assert.Equal(t, 5, len(ex.Entries))
	assert.True(t, ex.Truncated)
	for _, e := range ex.Entries {
		assert.LessOrEqual(t, len(e.Concurrent), 5)
	}
}

// TestJobManagerMessagesAreTruncated: Flink's error text and failure causes reach errors,
// events, logs and status; a JobManager sending megabytes of it must not put them there.
func TestJobManagerMessagesAreTruncated(t *testing.T) {
	huge := strings.Repeat("A", 5<<20)
	t.Run("error body", func(t *testing.T) {
		c := fakeFlink(t, "1.20.3", reply(500, `{"errors":["`+huge+`"]}`))
		_, err := c.JobDetails(context.Background(), testJob)
		require.Error(t, err)
		assert.Equal(t, KindServer, KindOf(err))
		assert.LessOrEqual(t, len(err.Error()), MaxMessageBytes+100)
	})
	t.Run("internal server error detail", func(t *testing.T) {
		c := fakeFlink(t, "1.20.3", reply(500, `{"errors":["Internal server error.","<Exception on server side:\n`+huge+`"]}`))
		_, err := c.JobDetails(context.Background(), testJob)
		require.Error(t, err)
		assert.LessOrEqual(t, len(err.Error()), MaxMessageBytes+100)
	})
	t.Run("failure cause", func(t *testing.T) {
		c := fakeFlink(t, "1.20.3", reply(200, `{"status":{"id":"COMPLETED"},"job-execution-result":{"job-status":"FAILED",`+
			`"failure-cause":{"class":"x","stack-trace":"`+strings.Repeat("B", 1<<20)+`"}}}`))
		res, err := c.ExecutionResult(context.Background(), testJob)
		require.NoError(t, err)
		assert.LessOrEqual(t, len(res.Failure.Message()), MaxMessageBytes)
	})
	t.Run("cut at a character boundary", func(t *testing.T) {
		s := TruncateMessage(strings.Repeat("é", MaxMessageBytes))
		assert.LessOrEqual(t, len(s), MaxMessageBytes)
		assert.True(t, strings.HasSuffix(s, "bytes truncated)"), s[len(s)-40:])
		assert.Equal(t, "short", TruncateMessage("short"))
	})
}

// slowJobManager reads an upload at about rate bytes per second.
func slowJobManager(t *testing.T, rate int) *Client {
	return fakeFlink(t, "1.20.3", func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, rate/10)
		for {
			_, err := io.ReadFull(r.Body, buf)
			if err != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		_, _ = io.WriteString(w, `{"filename":"/tmp/flink-web-upload/1_job.jar","status":"success"}`)
	})
}

// TestUploadDeadlineIsSizedToTheJar: a jar that takes longer to upload than one REST call
// may take still uploads (the REST timeout of the test client is 300 ms, the upload ~1.5 s).
func TestUploadDeadlineIsSizedToTheJar(t *testing.T) {
	c := slowJobManager(t, 2<<20).WithTimeout(300 * time.Millisecond)
	jar := bytes.NewReader(make([]byte, 3<<20)) // has Size(), like the artifact fetcher's readers
	id, err := c.UploadJar(context.Background(), "job.jar", jar)
	require.NoError(t, err)
	assert.Equal(t, "1_job.jar", id)
}

// sizedZeros is a jar of n zero bytes that announces its size.
type sizedZeros struct{ n, read int64 }

func (z *sizedZeros) Size() int64 { return z.n }
func (z *sizedZeros) Read(p []byte) (int, error) {
	if z.read >= z.n {
		return 0, io.EOF
	}
	n := min(int64(len(p)), z.n-z.read)
	clear(p[:n])
	z.read += n
	return int(n), nil
}

// TestStalledUploadTimesOut: the sized deadline is long for a large jar, but an upload that
// makes no progress (a JobManager that stops reading) fails after the REST timeout.
func TestStalledUploadTimesOut(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	c := fakeFlink(t, "1.20.3", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.CopyN(io.Discard, r.Body, 64<<10)
		select { // stop reading
		case <-release:
		case <-r.Context().Done():
		}
	}).WithTimeout(300 * time.Millisecond)
	start := time.Now()
	_, err := c.UploadJar(context.Background(), "job.jar", &sizedZeros{n: 256 << 20})
	require.Error(t, err)
	assert.True(t, IsTimeout(err), "%v", err)
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Contains(t, err.Error(), "no progress")
}

// TestUploadErrorIsNotAStall: a failed source read is reported as such.
func TestUploadErrorIsNotAStall(t *testing.T) {
	c := slowJobManager(t, 10<<20)
	_, err := c.UploadJar(context.Background(), "job.jar", io.MultiReader(bytes.NewReader(make([]byte, 1<<20)), errReader{}))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "no progress")
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("source broke") }
