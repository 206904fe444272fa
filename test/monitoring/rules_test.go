package monitoring

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// TestPrometheusRules runs promtool on the shipped PrometheusRule: `check rules` (syntax,
// duplicate names, label templates) and `test rules` (config/prometheus/tests: every alert fires
// on its input, names the resource, and stays silent where it should).
func TestPrometheusRules(t *testing.T) {
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute) // a first build of promtool
	defer cancel()
	dir := t.TempDir()
	promtool, err := Promtool(ctx, root, dir)
	require.NoError(t, err)

	groups, err := LoadRules(root)
	require.NoError(t, err)
	require.NoError(t, groups.WritePrometheusFile(filepath.Join(dir, "rules.yaml")))
	tests, err := filepath.Glob(filepath.Join(root, RuleTestsDir, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, tests)
	var names []string
	for _, src := range tests {
		raw, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(src)), raw, 0o600))
		names = append(names, filepath.Base(src))
	}

	run := func(args ...string) {
		cmd := exec.CommandContext(ctx, promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
	}
	run("check", "rules", "rules.yaml")
	run(append([]string{"test", "rules"}, names...)...)
}

// TestEveryAlertIsTestedAndDocumented: each alert has a severity, a summary and description, a
// runbook section in docs/operations/alerts.md that its runbook_url points to, and a promtool
// test in which it fires.
func TestEveryAlertIsTestedAndDocumented(t *testing.T) {
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	groups, err := LoadRules(root)
	require.NoError(t, err)
	runbook, err := os.ReadFile(filepath.Join(root, "docs", "operations", "alerts.md"))
	require.NoError(t, err)
	var tests strings.Builder
	files, err := filepath.Glob(filepath.Join(root, RuleTestsDir, "*.yaml"))
	require.NoError(t, err)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		tests.Write(raw)
	}
	alerts := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			t.Run(r.Alert, func(t *testing.T) {
				assert.Contains(t, []string{"critical", "warning", "info"}, r.Labels["severity"])
				assert.NotEmpty(t, r.Annotations["summary"])
				assert.NotEmpty(t, r.Annotations["description"])
				assert.Equal(t, "https://github.com/flink-operator/flink-operator/blob/main/docs/operations/alerts.md#"+strings.ToLower(r.Alert), r.Annotations["runbook_url"])
				assert.True(t, regexp.MustCompile(`(?m)^#+ `+r.Alert+`$`).Match(runbook), "docs/operations/alerts.md has no runbook section (a heading %q)", r.Alert)
				fires := regexp.MustCompile(`alertname: ` + r.Alert + `\n\s+exp_alerts:\n\s+- exp_labels`)
				assert.True(t, fires.MatchString(tests.String()), "no promtool test in %s in which %s fires", RuleTestsDir, r.Alert)
			})
		}
	}
	assert.NotZero(t, alerts)
}

// TestRecordedNamesAreUpstreams: every recording rule provides a name the Apache operator
// really exposed (testdata: a scrape of its 1.15 release), so dashboards written for it find it.
func TestRecordedNamesAreUpstreams(t *testing.T) {
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	groups, err := LoadRules(root)
	require.NoError(t, err)
	raw, err := os.ReadFile("testdata/upstream-metric-names.txt")
	require.NoError(t, err)
	upstream := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			upstream[line] = true
		}
	}
	recorded := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded++
				assert.True(t, upstream[r.Record], "%s is not a name the Apache operator exposes", r.Record)
			}
		}
	}
	assert.NotZero(t, recorded)
}
