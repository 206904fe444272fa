package bench

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
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
	b.WriteString("| | operator | limit: Deployments only | ratio | full limit: the operator's writes | ratio |\n|---|---|---|---|---|---|\n")
	timing := func(name string, op, limit, full time.Duration) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", name, secs(op), secs(limit), ratio(op, limit), secs(full), ratio(op, full))
	}
	timing("all JobManager Deployments exist", r.Operator.AllExist, r.Limit.AllExist, r.FullLimit.AllExist)
	timing("p50 create → JobManager Deployment", r.Operator.P50, r.Limit.P50, r.FullLimit.P50)
	timing("p99 create → JobManager Deployment", r.Operator.P99, r.Limit.P99, r.FullLimit.P99)
	row := func(name, value string) { fmt.Fprintf(&b, "| %s | %s | | | | |\n", name, value) }
	row("JobManager Deployments created", fmt.Sprintf("%d of %d", r.Deployments, r.N))
	row("operator's requests stopped (5 s quiet) after the last one appeared", secs(r.SettledWithin))
	row("RSS peak / end of steady window (anonymous part)", fmt.Sprintf("%.0f / %.0f MiB (%.0f MiB)", r.RSSPeakMiB, r.RSSSteadyMiB, r.RSSSteadyAnonMiB))
	if u := r.Unrelated; u != nil {
		row(fmt.Sprintf("RSS after a restart, without / with %d unrelated Pods and ConfigMaps (anonymous part)", u.Objects),
			fmt.Sprintf("%.0f / %.0f MiB (%.0f / %.0f MiB), %+.1f%%", u.WithoutMiB, u.WithMiB, u.WithoutAnonMiB, u.WithAnonMiB, 100*(u.WithMiB-u.WithoutMiB)/u.WithoutMiB))
	}
	if p := r.Responsiveness; p.DeployedWhenChanged > 0 {
		acted := "not within a minute"
		if p.ActedOn > 0 {
			acted = secs(p.ActedOn)
		}
		row(fmt.Sprintf("spec change to one resource, %d of %d deployed: acted on after", p.DeployedWhenChanged, r.N), acted)
	}
	row("CPU, create phase (until settled) / steady window", fmt.Sprintf("%.1f s / %.1f s", r.CPUCreateSeconds, r.CPUSteadySeconds))
	row("kube-apiserver + etcd CPU: operator run / limit / full limit", fmt.Sprintf("%.1f s / %.1f s / %.1f s", r.ControlPlaneCPUCreateSeconds, r.ControlPlaneCPULimitSeconds, r.ControlPlaneCPUFullLimitSeconds))
	row("goroutines, end of create / end of steady", fmt.Sprintf("%d / %d", r.GoroutinesCreate, r.GoroutinesSteady))
	row("API writes / reads, create phase", fmt.Sprintf("%d / %d", r.Create.Writes, r.Create.Reads))
	row("API writes / reads per new resource", fmt.Sprintf("%.2f / %.2f", r.WritesPerNew, r.ReadsPerNew))
	row("failed API requests, create phase (the operator's / by the API server)", fmt.Sprintf("%d / %s", r.Create.Failed, formatFailed(r.FailedByRequest)))
	row(fmt.Sprintf("API writes / reads in a %s steady window", r.SteadyWindow), fmt.Sprintf("%d / %d", r.Steady.Writes, r.Steady.Reads))
	if r.Running != nil {
		r.Running.rows(row, r.N, r.SteadyWindow)
	}
	return b.String()
}

// rows adds the running mode's figures to the table.
func (rr *RunningResult) rows(row func(name, value string), n int, window time.Duration) {
	interval := "the default --reconcile-interval (60 s)"
	if rr.ObserveInterval > 0 {
		interval = "--reconcile-interval " + rr.ObserveInterval.String()
	}
	row("running mode: all jobs RUNNING, resources STABLE (from the first create)", secs(rr.AllRunning))
	row(fmt.Sprintf("Flink REST calls per job per observe interval (%s; %s steady window)", interval, window),
		fmt.Sprintf("%.2f (%d calls for %d jobs)", rr.SteadyCallsPerJobPerInterval, callCounts(rr.SteadyCalls).total(), n))
	for _, route := range sortedKeys(rr.SteadyCallsByRoute) {
		row("  of which "+route, fmt.Sprintf("%.2f", rr.SteadyCallsByRoute[route]))
	}
	row(fmt.Sprintf("operator CPU in the steady window, %d running jobs", n), fmt.Sprintf("%.1f%% of one core", rr.SteadyCPUPercent))
	row("savepoint upgrades at once: completed", fmt.Sprintf("%d of %d", rr.Upgraded, rr.Upgrades))
	row("all upgrades completed (from the first spec change)", secs(rr.UpgradeAll))
	row("p50 / p99 spec change → upgraded", fmt.Sprintf("%s / %s", secs(rr.UpgradeP50), secs(rr.UpgradeP99)))
	row("API writes / reads per upgrade", fmt.Sprintf("%.2f / %.2f (%d / %d in all)", rr.WritesPerUpgrade, rr.ReadsPerUpgrade,
		rr.UpgradeRequests.Writes, rr.UpgradeRequests.Reads))
	row("Flink REST calls per upgrade", fmt.Sprintf("%.2f (%s)", rr.CallsPerUpgrade, describeCalls(rr.UpgradeCalls)))
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// describeCalls lists calls by route: "GET /config 300, ...".
func describeCalls(calls map[string]int) string {
	parts := make([]string, 0, len(calls))
	for _, route := range sortedKeys(calls) {
		parts = append(parts, fmt.Sprintf("%s %d", route, calls[route]))
	}
	return strings.Join(parts, ", ")
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

// formatFailed lists failed requests by verb, resource and code, most frequent first; "none"
// when there were none.
func formatFailed(failed map[string]int) string {
	if len(failed) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(failed))
	for k := range failed {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if failed[keys[i]] != failed[keys[j]] {
			return failed[keys[i]] > failed[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, failed[k])
	}
	return strings.Join(parts, ", ")
}
