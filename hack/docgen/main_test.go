package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCommittedReferenceIsCurrent: docs/reference holds what the generator writes today; an
// option or metric added, renamed or described anew fails here until `make docs` is run.
func TestCommittedReferenceIsCurrent(t *testing.T) {
	pages, err := Pages()
	require.NoError(t, err)
	for name, want := range pages {
		got, err := os.ReadFile(filepath.Join("..", "..", "docs", "reference", name))
		require.NoError(t, err)
		assert.Equal(t, want, string(got), "docs/reference/%s is stale: run make docs", name)
	}
}

// TestMetricsAreDescribedWithTypeAndLabels: every family has a name, help and type, and the
// collectors of every kind (vectors, plain metrics, collectors computed at scrape time) are read.
func TestMetricsAreDescribedWithTypeAndLabels(t *testing.T) {
	ms, err := Metrics()
	require.NoError(t, err)
	byName := map[string]Metric{}
	for _, m := range ms {
		assert.NotEmpty(t, m.Help, m.Name)
		byName[m.Name] = m
	}
	for name, typ := range map[string]string{
		"flink_operator_flink_rest_requests_total":        "counter",
		"flink_operator_lifecycle_transition_seconds":     "histogram",
		"flink_operator_config_missing":                   "gauge",
		"flink_operator_resources":                        "gauge",
		"flink_operator_autoscaler_vertex_metric":         "gauge",
		"flink_operator_listener_deliveries_total":        "counter",
		"flink_operator_last_savepoint_timestamp_seconds": "gauge",
	} {
		require.Contains(t, byName, name)
		assert.Equal(t, typ, byName[name].Type, name)
	}
	assert.Equal(t, []string{"namespace", "kind", "name", "vertex", "metric"}, byName["flink_operator_autoscaler_vertex_metric"].Labels)
	assert.Empty(t, byName["flink_operator_config_missing"].Labels)
}

func TestParseDescReadsQuotedHelp(t *testing.T) {
	m, err := parseDesc(`Desc{fqName: "a_b", help: "says \"x\", {y}", unit: "", constLabels: {}, variableLabels: {ns,c(kind)}}`)
	require.NoError(t, err)
	assert.Equal(t, Metric{Name: "a_b", Help: `says "x", {y}`, Labels: []string{"ns", "kind"}}, m)
}

// TestMetricTypeOfSingleMetrics: a metric that is not a vector is typed by what it writes.
func TestMetricTypeOfSingleMetrics(t *testing.T) {
	assert.Equal(t, "counter", metricType(prometheus.NewCounter(prometheus.CounterOpts{Name: "c"})))
	assert.Equal(t, "gauge", metricType(prometheus.NewGauge(prometheus.GaugeOpts{Name: "g"})))
	assert.Equal(t, "histogram", metricType(prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h"})))
	assert.Equal(t, "summary", metricType(prometheus.NewSummary(prometheus.SummaryOpts{Name: "s"})))
}
