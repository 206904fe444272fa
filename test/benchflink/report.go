package benchflink

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Seconds is a duration written to JSON as seconds with millisecond precision, the precision
// of Flink's timestamps.
type Seconds time.Duration

// MarshalJSON writes the duration in seconds.
func (s Seconds) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatFloat(time.Duration(s).Seconds(), 'f', 3, 64)), nil
}

func (s Seconds) String() string { return fmt.Sprintf("%.2f", time.Duration(s).Seconds()) }

// Sample is one flow of one job in one run.
type Sample struct {
	Run int    `json:"run"`
	Job string `json:"job"`
	// Total is the flow as a user sees it, from the request that starts it to its end (each
	// flow says which ends in flows.go).
	Total Seconds `json:"total_s"`
	// Flink is the part Flink itself spent: FlinkStop + FlinkStart.
	Flink Seconds `json:"flink_s"`
	// Overhead is Total − Flink: the operator and Kubernetes (API server, controller manager,
	// scheduler, the node agent standing in for a kubelet).
	Overhead Seconds `json:"overhead_s"`
	// FlinkStop is Flink's stop of the old job (stopped.flink); 0 when it stopped none.
	FlinkStop Seconds `json:"flink_stop_s"`
	// StopSource is where FlinkStop was read: "archive" (the old job's archived checkpoint
	// statistics), "log" (its JobManager's log, when Flink failed to archive), "" (no stop).
	StopSource string `json:"stop_source,omitempty"`
	// FlinkStart is from the JobManager process's start to the job's RUNNING timestamp; 0 when
	// the flow starts no job.
	FlinkStart Seconds `json:"flink_start_s"`
	// JobStart is the job's INITIALIZING to RUNNING timestamps, the part of FlinkStart after the
	// JobManager came up and submitted the job; for reference, not subtracted again.
	JobStart Seconds `json:"job_start_s,omitempty"`
	JobID    string  `json:"job_id,omitempty"`
	// Savepoint is the path of the savepoint Flink took to stop the old job.
	Savepoint string `json:"savepoint,omitempty"`
	// Restored is the checkpoint or savepoint path the new job restored from, as Flink
	// reports it (GET /jobs/<id>/checkpoints, latest.restored.external_path).
	Restored          string `json:"restored,omitempty"`
	RestoredSavepoint bool   `json:"restored_savepoint,omitempty"`
	// Spans are the flow's steps as the timeline saw the cluster's objects go through them.
	Spans []Span `json:"spans,omitempty"`
	// start is when the flow's request was sent (t0), where its spans begin.
	start time.Time
}

// newSample fills in a sample's sums; flinkStop and flinkStart are its two parts of Flink's own.
func newSample(total, flinkStop, flinkStart time.Duration) Sample {
	own := flinkStop + flinkStart
	return Sample{Total: Seconds(total), Flink: Seconds(own), Overhead: Seconds(total - own),
		FlinkStop: Seconds(flinkStop), FlinkStart: Seconds(flinkStart)}
}

// Flow is one flow's samples over all jobs and runs, with their medians. Each median is of its
// own column: the median overhead is not the difference of the other two medians.
type Flow struct {
	Name           string  `json:"name"`
	MedianTotal    Seconds `json:"median_total_s"`
	MedianFlink    Seconds `json:"median_flink_s"`
	MedianOverhead Seconds `json:"median_overhead_s"`
	// MedianSpans are the median of each step over the samples that went through it, in the
	// order of the steps.
	MedianSpans []Span   `json:"median_spans"`
	Samples     []Sample `json:"samples"`
}

// Result is the benchmark's outcome.
type Result struct {
	Jobs         int    `json:"jobs"`
	Runs         int    `json:"runs"`
	FlinkVersion string `json:"flink_version"`
	// Operator says how the operator ran.
	Operator string    `json:"operator"`
	Started  time.Time `json:"started"`
	Flows    []Flow    `json:"flows"`
}

// add records a sample of the named flow, keeping flows in the order they first ran.
func (r *Result) add(name string, s Sample) {
	for i := range r.Flows {
		if r.Flows[i].Name == name {
			r.Flows[i].Samples = append(r.Flows[i].Samples, s)
			return
		}
	}
	r.Flows = append(r.Flows, Flow{Name: name, Samples: []Sample{s}})
}

// summarize computes every flow's medians.
func (r *Result) summarize() {
	for i := range r.Flows {
		f := &r.Flows[i]
		f.MedianTotal = median(f.Samples, func(s Sample) Seconds { return s.Total })
		f.MedianFlink = median(f.Samples, func(s Sample) Seconds { return s.Flink })
		f.MedianOverhead = median(f.Samples, func(s Sample) Seconds { return s.Overhead })
		f.MedianSpans = medianSpans(f.Samples)
	}
}

// medianSpans is the median of each step over the samples that have it, steps in the order
// they first appear.
func medianSpans(samples []Sample) []Span {
	var names []string
	values := map[string][]Sample{}
	for _, s := range samples {
		for _, sp := range s.Spans {
			if _, ok := values[sp.Name]; !ok {
				names = append(names, sp.Name)
			}
			values[sp.Name] = append(values[sp.Name], Sample{Total: sp.Duration})
		}
	}
	out := make([]Span, len(names))
	for i, n := range names {
		out[i] = Span{Name: n, Duration: median(values[n], func(s Sample) Seconds { return s.Total })}
	}
	return out
}

// median of one column of the samples; of an even count, the mean of the middle two.
func median(samples []Sample, col func(Sample) Seconds) Seconds {
	if len(samples) == 0 {
		return 0
	}
	v := make([]Seconds, len(samples))
	for i, s := range samples {
		v[i] = col(s)
	}
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

// Table is the result as Markdown: one row per flow, medians then every sample in run order.
func (r *Result) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Flink %s, %d jobs side by side, %d runs, operator %s; seconds, median [samples]\n\n",
		r.FlinkVersion, r.Jobs, r.Runs, r.Operator)
	b.WriteString("| Flow | Total | Flink's own | Overhead (operator + Kubernetes) |\n|---|---|---|---|\n")
	for _, f := range r.Flows {
		cell := func(m Seconds, col func(Sample) Seconds) string {
			all := make([]string, len(f.Samples))
			for i, s := range f.Samples {
				all[i] = col(s).String()
			}
			return fmt.Sprintf("**%s** [%s]", m, strings.Join(all, " "))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", f.Name,
			cell(f.MedianTotal, func(s Sample) Seconds { return s.Total }),
			cell(f.MedianFlink, func(s Sample) Seconds { return s.Flink }),
			cell(f.MedianOverhead, func(s Sample) Seconds { return s.Overhead }))
	}
	b.WriteString("\nWhere the time goes, step by step as the cluster's objects went through them (median seconds):\n\n")
	b.WriteString("| Flow | Step | Median |\n|---|---|---|\n")
	for _, f := range r.Flows {
		for _, sp := range f.MedianSpans {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", f.Name, sp.Name, sp.Duration)
		}
	}
	return b.String()
}

// WriteJSON writes the result to path, creating its directory.
func (r *Result) WriteJSON(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("result directory: %w", err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
