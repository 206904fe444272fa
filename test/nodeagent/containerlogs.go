package nodeagent

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"time"
)

// logRun is one run of a container: the part of its output file that run wrote.
//
// A container's output (<pod dir>/logs/<container>.out) is appended across restarts, so that
// one file tells a pod's whole story to whoever reads the agent's directory after a failed
// test. kubelet keeps one log per run instead; `kubectl logs` reads the latest run and
// `--previous` the one before. The agent tells runs apart by the file's size when each process
// started and ended rather than by splitting the file, so the file stays whole.
type logRun struct {
	path  string
	start int64
	ended chan struct{} // closed when the process has exited; end is final then
	end   int64
}

// newLogRun starts a run at the current end of the output file. It must be called before
// the process starts, so none of its output falls before start.
func newLogRun(path string) *logRun {
	return &logRun{path: path, start: fileSize(path), ended: make(chan struct{})}
}

// finish records where the run's output ends. Called once, after the process has exited.
func (l *logRun) finish() {
	l.end = fileSize(l.path)
	close(l.ended)
}

// bounds are the run's output so far: [start, end), and whether it is complete.
func (l *logRun) bounds() (start, end int64, complete bool) {
	select {
	case <-l.ended:
		return l.start, l.end, true
	default:
		return l.start, max(fileSize(l.path), l.start), false
	}
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// logOptions are the query parameters of kubelet's containerLogs that the agent honours.
// sinceSeconds, sinceTime and timestamps are ignored: the output file has no time per line.
type logOptions struct {
	follow     bool
	previous   bool
	tailLines  int64 // < 0: all
	limitBytes int64 // <= 0: no limit
}

// followPoll is how often a followed log is checked for new output (kubelet watches the file;
// a poll keeps this simple, and a tenth of a second is below what a person notices).
const followPoll = 100 * time.Millisecond

// writeLog writes a run's output as opts ask: the last tailLines lines, at most limitBytes
// bytes, and with follow, what the run writes later until it ends or ctx is done.
func writeLog(ctx context.Context, w http.ResponseWriter, run *logRun, opts logOptions) error {
	f, err := os.Open(run.path)
	if errors.Is(err, fs.ErrNotExist) {
		f = nil // no output yet
	} else if err != nil {
		return err
	}
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	start, end, complete := run.bounds()
	if opts.tailLines >= 0 && f != nil {
		if start, err = tailStart(f, start, end, opts.tailLines); err != nil {
			return err
		}
	}
	budget := opts.limitBytes
	if budget <= 0 {
		budget = -1
	}
	rc := http.NewResponseController(w)
	pos := start
	// copyTo writes the run's output from pos up to until; false when the byte limit is spent.
	copyTo := func(until int64) (bool, error) {
		if f == nil || until <= pos {
			return budget != 0, nil
		}
		n := until - pos
		if budget >= 0 {
			n = min(n, budget)
		}
		copied, err := io.Copy(w, io.NewSectionReader(f, pos, n))
		pos += copied
		if budget >= 0 {
			budget -= copied
		}
		if err != nil {
			return false, err
		}
		_ = rc.Flush()
		return budget != 0, nil
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush() // a follower sees the answer start before the first new line
	more, err := copyTo(end)
	if err != nil || !more || !opts.follow || complete {
		return err
	}
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-run.ended:
		case <-tick.C:
		}
		if f == nil {
			if f, err = os.Open(run.path); errors.Is(err, fs.ErrNotExist) {
				f = nil
				continue
			} else if err != nil {
				return err
			}
		}
		_, end, complete = run.bounds()
		if more, err = copyTo(end); err != nil || !more || complete {
			return err
		}
	}
}

// tailStart returns where the last n lines of [start, end) of f begin. A last line without
// a newline counts as a line, as kubelet counts it.
func tailStart(f io.ReaderAt, start, end, n int64) (int64, error) {
	if n == 0 {
		return end, nil
	}
	const chunk = 32 << 10
	buf := make([]byte, chunk)
	// The newline ending the last line does not start a line of its own.
	limit := end
	if end > start {
		var last [1]byte
		if _, err := f.ReadAt(last[:], end-1); err != nil {
			return 0, err
		}
		if last[0] == '\n' {
			limit--
		}
	}
	for pos := limit; pos > start; {
		size := min(int64(chunk), pos-start)
		pos -= size
		b := buf[:size]
		if _, err := f.ReadAt(b, pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != '\n' {
				continue
			}
			if n--; n == 0 {
				return pos + int64(i) + 1, nil
			}
		}
	}
	return start, nil
}
