package flink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"path"
	"strings"
	"time"
)

// Jar submission (/jars/*) is served by session clusters only.

// Upload deadlines. A jar upload cannot run under the REST timeout of other calls (10 s): the
// jar is fetched while it is sent, and may be hundreds of MiB.
const (
	// DefaultUploadBytesPerSecond is the slowest rate an upload's deadline allows for: a jar
	// of n bytes gets the REST timeout plus n / rate (a 512 MiB jar: 8.5 minutes).
	DefaultUploadBytesPerSecond = 1 << 20
	// unknownUploadBytes sizes the deadline of a jar whose reader announces no size (the
	// artifact fetcher's limit).
	unknownUploadBytes = 512 << 20
)

// errUploadStalled is the cause of an upload cancelled for want of progress.
var errUploadStalled = errors.New("upload stalled")

// UploadJar streams a jar to the cluster (POST /jars/upload) and returns its jar id. The
// content is copied from r as it is sent, never held in memory. name must end in ".jar".
//
// The upload's deadline is sized to the jar: the client's timeout plus the jar's size at
// Options.UploadBytesPerSecond. The size is r's Size() when it has one (bytes.Reader and the
// artifact fetcher's readers do; the artifact fetcher's is its size limit when a server
// announces no length), else 512 MiB. An upload that makes no progress for the client's
// timeout (neither r nor the JobManager moves) fails with KindTimeout early.
func (c *Client) UploadJar(ctx context.Context, name string, r io.Reader) (string, error) {
	const op = "upload jar"
	name = path.Base(name)
	if !strings.HasSuffix(name, ".jar") {
		return "", &Error{Kind: KindBadRequest, Op: op, Message: fmt.Sprintf("file name %q must end in .jar", name)}
	}
	size := int64(unknownUploadBytes)
	if s, ok := r.(interface{ Size() int64 }); ok && s.Size() >= 0 {
		size = s.Size()
	}
	deadline := c.timeout + time.Duration(float64(size)/float64(c.uploadRate)*float64(time.Second))

	// The stall watchdog: every read of the jar (which the pipe paces to what the JobManager
	// takes) postpones it. It stops at the jar's end: the last MiBs may still sit in socket
	// buffers that the JobManager drains at its pace, which the sized deadline allows for.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stall := time.AfterFunc(c.timeout, func() { cancel(errUploadStalled) })
	defer stall.Stop()
	src := &progressReader{r: r, progress: func(done bool) {
		if done {
			stall.Stop()
		} else {
			stall.Reset(c.timeout)
		}
	}}

	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		header := textproto.MIMEHeader{}
		header.Set("Content-Disposition", fmt.Sprintf(`form-data; name="jarfile"; filename=%q`, name))
		header.Set("Content-Type", "application/x-java-archive")
		part, err := mw.CreatePart(header)
		if err == nil {
			_, err = io.Copy(part, src)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err) // nil closes normally
	}()
	var out struct {
		Filename string `json:"filename"`
		Status   string `json:"status"`
	}
	err := c.WithTimeout(deadline).do(ctx, request{op: op, method: http.MethodPost, route: "/jars/upload", path: "/jars/upload",
		rawBody: pr, ctype: mw.FormDataContentType()}, &out)
	// Unblock the writer if the request ended before consuming the body.
	_ = pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		if errors.Is(context.Cause(ctx), errUploadStalled) {
			return "", &Error{Kind: KindTimeout, Op: op, Message: fmt.Sprintf("no progress for %s", c.timeout), Err: err}
		}
		return "", err
	}
	if out.Filename == "" {
		return "", &Error{Kind: KindMalformed, Op: op, Message: "the response names no uploaded file"}
	}
	// The jar id is the base name of the stored file.
	return path.Base(out.Filename), nil
}

// progressReader calls progress after every read that moved the stream, and with done at its end.
type progressReader struct {
	r        io.Reader
	progress func(done bool)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 || err == io.EOF {
		p.progress(err == io.EOF)
	}
	return n, err
}

// ClaimMode says who owns the files of the snapshot a job restores from.
type ClaimMode string

// Claim modes.
const (
	ClaimModeClaim   ClaimMode = "CLAIM"
	ClaimModeNoClaim ClaimMode = "NO_CLAIM"
	ClaimModeLegacy  ClaimMode = "LEGACY"
)

// RunJarRequest runs an uploaded jar.
type RunJarRequest struct {
	// JobID fixes the job's id (32 hex), so the operator knows it before submission.
	JobID string
	// EntryClass; empty uses the jar manifest's.
	EntryClass string
	// Args are the program arguments.
	Args []string
	// Parallelism; 0 uses the cluster default.
	Parallelism int
	// SavepointPath to restore from.
	SavepointPath string
	// AllowNonRestoredState skips state that maps to no operator.
	AllowNonRestoredState bool
	// ClaimMode of the restore; empty is Flink's default (NO_CLAIM).
	ClaimMode ClaimMode
	// FlinkConfiguration overrides for this job (Flink 1.17+).
	FlinkConfiguration map[string]string
}

// RunJar submits a job from an uploaded jar (POST /jars/:jarid/run) and returns its id. The
// jar's main() runs inside the JobManager; the call returns once the job is submitted.
func (c *Client) RunJar(ctx context.Context, jarID string, r RunJarRequest) (string, error) {
	const op = "run jar"
	if jarID == "" || strings.Contains(jarID, "/") {
		return "", &Error{Kind: KindBadRequest, Op: op, Message: fmt.Sprintf("jar id %q is not an uploaded jar's id", jarID)}
	}
	if r.JobID != "" && !IsValidID(r.JobID) {
		return "", &Error{Kind: KindBadRequest, Op: op, Message: fmt.Sprintf("job id %q is not 32 hex characters", r.JobID)}
	}
	v, err := c.Version(ctx)
	if err != nil {
		return "", err
	}
	body := map[string]any{}
	if r.JobID != "" {
		body["jobId"] = r.JobID
	}
	if r.EntryClass != "" {
		body["entryClass"] = r.EntryClass
	}
	if len(r.Args) > 0 {
		body["programArgsList"] = r.Args // programArgs (one string) is gone in 2.0
	}
	if r.Parallelism > 0 {
		body["parallelism"] = r.Parallelism
	}
	if r.SavepointPath != "" {
		body["savepointPath"] = r.SavepointPath
		body["allowNonRestoredState"] = r.AllowNonRestoredState
	}
	if r.ClaimMode != "" {
		if v.AtLeast(1, 20) {
			body["claimMode"] = r.ClaimMode
		} else {
			body["restoreMode"] = r.ClaimMode // the same values under the older name
		}
	}
	if len(r.FlinkConfiguration) > 0 {
		if !v.AtLeast(1, 17) {
			return "", &Error{Kind: KindUnsupported, Op: op,
				Message: fmt.Sprintf("per-job configuration needs Flink 1.17 or newer, the cluster runs %s", v)}
		}
		body["flinkConfiguration"] = r.FlinkConfiguration
	}
	var out struct {
		JobID string `json:"jobid"`
	}
	if err := c.do(ctx, request{op: op, method: http.MethodPost, route: "/jars/:jarid/run",
		path: "/jars/" + jarID + "/run", body: body}, &out); err != nil {
		return "", programError(err)
	}
	return out.JobID, nil
}

// DeleteJar removes an uploaded jar; KindNotFound when it is gone already (e.g. after a
// JobManager restart, which loses uploaded jars).
func (c *Client) DeleteJar(ctx context.Context, jarID string) error {
	const op = "delete jar"
	if jarID == "" || strings.Contains(jarID, "/") {
		return &Error{Kind: KindBadRequest, Op: op, Message: fmt.Sprintf("jar id %q is not an uploaded jar's id", jarID)}
	}
	return c.do(ctx, request{op: op, method: http.MethodDelete, route: "/jars/:jarid", path: "/jars/" + jarID}, nil)
}

// Jar is one uploaded jar.
type Jar struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Uploaded int64  `json:"uploaded"`
}

// ListJars lists the uploaded jars.
func (c *Client) ListJars(ctx context.Context) ([]Jar, error) {
	var out struct {
		Files []Jar `json:"files"`
	}
	err := c.do(ctx, request{op: "list jars", method: http.MethodGet, route: "/jars", path: "/jars"}, &out)
	return out.Files, err
}

// programError reclassifies a failed run: Flink answers 500 when the user's program cannot
// be run (not a jar, no entry class, main() threw), which is the user's to fix and must not
// be retried as a server fault.
func programError(err error) error {
	var fe *Error
	switch {
	case !errors.As(err, &fe):
	case fe.Kind == KindConflict:
		// A job under this id exists: a submission before a crash reached Flink.
		fe.Kind = KindDuplicateJob
	case fe.Kind == KindServer && strings.Contains(fe.Message, "ProgramInvocationException"):
		fe.Kind = KindBadRequest
	}
	return err
}
