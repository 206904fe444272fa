package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Table renders the result as a Markdown table: each timing of the operator beside the limit
// (the plain client through the API server alone) and their ratio.
func (r *Result) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "N=%d FlinkDeployments, %d client goroutines, %s", r.N, r.Concurrency, r.Date.Format(time.RFC3339))
	if len(r.OperatorArgs) > 0 {
		fmt.Fprintf(&b, ", operator flags %s", strings.Join(r.OperatorArgs, " "))
	}
	b.WriteString("\n\n")
	b.WriteString("| | operator | limit (API server alone) | ratio |\n|---|---|---|---|\n")
	timing := func(name string, op, limit time.Duration) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, secs(op), secs(limit), ratio(op, limit))
	}
	timing("all JobManager Deployments exist", r.Operator.AllExist, r.Limit.AllExist)
	timing("p50 create → JobManager Deployment", r.Operator.P50, r.Limit.P50)
	timing("p99 create → JobManager Deployment", r.Operator.P99, r.Limit.P99)
	row := func(name, value string) { fmt.Fprintf(&b, "| %s | %s | | |\n", name, value) }
	row("JobManager Deployments created", fmt.Sprintf("%d of %d", r.Deployments, r.N))
	row("operator's requests stopped (5 s quiet) after the last one appeared", secs(r.SettledWithin))
	row("RSS peak / end of steady window", fmt.Sprintf("%.0f / %.0f MiB", r.RSSPeakMiB, r.RSSSteadyMiB))
	row("CPU, create phase (until settled) / steady window", fmt.Sprintf("%.1f s / %.1f s", r.CPUCreateSeconds, r.CPUSteadySeconds))
	row("kube-apiserver + etcd CPU, create phase / limit run", fmt.Sprintf("%.1f s / %.1f s", r.ControlPlaneCPUCreateSeconds, r.ControlPlaneCPULimitSeconds))
	row("goroutines, end of create / end of steady", fmt.Sprintf("%d / %d", r.GoroutinesCreate, r.GoroutinesSteady))
	row("API writes / reads, create phase", fmt.Sprintf("%d / %d", r.Create.Writes, r.Create.Reads))
	row("API writes / reads per new resource", fmt.Sprintf("%.2f / %.2f", r.WritesPerNew, r.ReadsPerNew))
	row(fmt.Sprintf("API writes / reads in a %s steady window", r.SteadyWindow), fmt.Sprintf("%d / %d", r.Steady.Writes, r.Steady.Reads))
	return b.String()
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func ratio(op, limit time.Duration) string {
	if limit <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", float64(op)/float64(limit))
}

// WriteJSON writes the result to path, creating its directory.
func (r *Result) WriteJSON(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
