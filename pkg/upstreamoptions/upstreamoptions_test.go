package upstreamoptions

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-operator/flink-operator/pkg/options"
)

// upstreamKeys are the keys of upstream's configuration reference (testdata).
func upstreamKeys(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("testdata/upstream-keys.txt")
	require.NoError(t, err)
	defer f.Close()
	var keys []string
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		if line := strings.TrimSpace(scanner.Text()); line != "" && !strings.HasPrefix(line, "#") {
			keys = append(keys, line)
		}
	}
	require.NoError(t, scanner.Err())
	require.Greater(t, len(keys), 150)
	return keys
}

// Every upstream option has exactly one entry, every entry is an upstream option, and what the
// table calls honoured is what pkg/options reads (or the entry says where it is read).
func TestTableCoversUpstream(t *testing.T) {
	keys := upstreamKeys(t)
	used := map[string]bool{}
	for _, key := range keys {
		var matching []string
		for _, e := range table {
			if e.Matches(key) || e.Key == key {
				matching = append(matching, e.Key)
				used[e.Key] = true
			}
		}
		assert.Len(t, matching, 1, "upstream option %s: one entry says what happens to it", key)
	}
	for _, e := range table {
		assert.True(t, used[e.Key], "%s is not an upstream option", e.Key)
		assert.Contains(t, []Support{Honoured, Warned, NotApplicable}, e.Support, e.Key)
		if e.Support != Honoured {
			assert.NotEmpty(t, e.Why, "%s: say why it is %s", e.Key, e.Support)
		}
		_, registered := options.Lookup(e.Key)
		if e.Support == Honoured && e.Why == "" {
			assert.True(t, registered, "%s is called honoured: pkg/options must register it (or the entry says where it is read)", e.Key)
		}
		if registered {
			assert.Equal(t, Honoured, e.Support, "%s is registered in pkg/options, so it is honoured", e.Key)
		}
	}
}

func TestUnhonouredOptionsAreWarned(t *testing.T) {
	for _, c := range []struct {
		name string
		conf map[string]string
		want []string
	}{
		{name: "honoured options and Flink's own: no warning", conf: map[string]string{
			"kubernetes.operator.savepoint.format.type": "NATIVE", "kubernetes.operator.job.restart.failed": "true",
			"taskmanager.numberOfTaskSlots": "2", "job.autoscaler.enabled": "true", "kubernetes.operator.pod-security.level": "baseline"}},
		{name: "an option with no effect here", conf: map[string]string{"kubernetes.operator.observer.rest-ready.delay": "30 s"},
			want: []string{"spec.flinkConfiguration.kubernetes.operator.observer.rest-ready.delay (an Apache operator option) is not honoured by this operator and is ignored: upstream marks the JobManager DEPLOYED_NOT_READY once its port accepts connections and READY this long after, unchecked, as a guess at when the REST API is up; here READY is decided by the REST API answering (GET /config), so there is no guess to tune"}},
		{name: "set to what happens anyway: no warning", conf: map[string]string{
			"kubernetes.operator.checkpoint.type": "full", "kubernetes.operator.session.deletion.block-on-session-jobs": "true"}},
		{name: "honoured pod options, either way: no warning", conf: map[string]string{
			"kubernetes.operator.pod-template.merge-arrays-by-name": "false", "kubernetes.operator.jm-deployment.startup.probe.enabled": "false"}},
		{name: "set to what does not happen", conf: map[string]string{"kubernetes.operator.session.deletion.block-on-session-jobs": "false",
			"kubernetes.operator.checkpoint.type": "INCREMENTAL"},
			want: []string{
				"spec.flinkConfiguration.kubernetes.operator.checkpoint.type (an Apache operator option) is not honoured by this operator and is ignored: the checkpoints the operator triggers are always FULL (upstream's default)",
				"spec.flinkConfiguration.kubernetes.operator.session.deletion.block-on-session-jobs (an Apache operator option) is not honoured by this operator and is ignored: a session cluster is never deleted while FlinkSessionJobs reference it (Warning CleanupFailed names them); past kubernetes.operator.resource.cleanup.timeout it deletes them itself (Warning SessionJobsDeleted) and goes once they are gone",
			}},
		{name: "set another way, and a family of options", conf: map[string]string{"kubernetes.operator.health.probe.port": "8085",
			"kubernetes.operator.plugins.listeners.audit.class": "org.example.Audit"},
			want: []string{
				"spec.flinkConfiguration.kubernetes.operator.health.probe.port (an Apache operator option) does not apply to this operator and is ignored: set with the operator's command-line flag --health-probe-bind-address (default :8081, upstream's 8085)",
				"spec.flinkConfiguration.kubernetes.operator.plugins.listeners.audit.class (an Apache operator option) does not apply to this operator and is ignored: Java plugins cannot be loaded by a Go operator",
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, Warnings(c.conf))
		})
	}
}

// The upstream options reference (docs/reference/upstream-options.md, written by make docs
// with hack/docgen) holds this package's table: a reclassified option shows up there, or this
// test fails.
func TestUpstreamOptionsReferenceIsTheTable(t *testing.T) {
	raw, err := os.ReadFile("../../docs/reference/upstream-options.md")
	require.NoError(t, err)
	require.True(t, strings.Contains(string(raw), MarkdownTable()),
		"docs/reference/upstream-options.md is stale: run make docs")
}
