package jobs

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// ReasonJobException is the Warning event of a job failure Flink recorded.
const ReasonJobException = "JobException"

// ExceptionReporter turns a job's failures into Warning events, each once: it remembers, per
// job, the newest failure already reported. The memory is the operator's; after a restart a
// failure may be reported again, which the API server's event aggregation folds into a count.
type ExceptionReporter struct {
	mu       sync.Mutex
	reported map[types.UID]reportedUpTo
}

type reportedUpTo struct {
	jobID     string
	timestamp int64
}

func NewExceptionReporter() *ExceptionReporter {
	return &ExceptionReporter{reported: map[types.UID]reportedUpTo{}}
}

// Report emits events for failures newer than the last reported one, oldest first.
func (e *ExceptionReporter) Report(ctx context.Context, rec record.EventRecorder, obj runtime.Object, uid types.UID,
	cl *flink.Client, jobID string, conf flinkconf.Config) {
	if e == nil || jobID == "" {
		return
	}
	limit := options.ExceptionEventsLimit.Get(conf)
	if limit <= 0 {
		limit = options.ExceptionEventsLimit.Get(nil)
	}
	exceptions, err := cl.JobExceptions(ctx, jobID, limit)
	if err != nil {
		return
	}
	e.mu.Lock()
	last := e.reported[uid]
	e.mu.Unlock()
	if last.jobID != jobID {
		last = reportedUpTo{jobID: jobID}
	}
	newest := last.timestamp
	var fresh []flink.JobException
	for _, ex := range exceptions.Entries {
		if ex.Timestamp > last.timestamp {
			fresh = append(fresh, ex)
		}
		newest = max(newest, ex.Timestamp)
	}
	for i := len(fresh) - 1; i >= 0; i-- {
		rec.Event(obj, corev1.EventTypeWarning, ReasonJobException, describeException(fresh[i]))
	}
	e.mu.Lock()
	e.reported[uid] = reportedUpTo{jobID: jobID, timestamp: newest}
	e.mu.Unlock()
}

func (e *ExceptionReporter) Forget(uid types.UID) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.reported, uid)
}

// describeException: the exception and its message (the stack trace's first line), where it
// happened, capped to an event's reasonable size.
func describeException(ex flink.JobException) string {
	first, _, _ := strings.Cut(strings.TrimSpace(ex.Stacktrace), "\n")
	if first == "" {
		first = ex.ExceptionName
	}
	msg := first
	if ex.TaskName != "" {
		msg = fmt.Sprintf("%s (task %s)", first, ex.TaskName)
	}
	const maxLen = 1000
	if len(msg) > maxLen {
		msg = msg[:maxLen] + "..."
	}
	return msg
}
