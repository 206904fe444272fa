package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	opmetrics "github.com/flink-operator/flink-operator/pkg/metrics"
	"github.com/flink-operator/flink-operator/test/kubeenv"
	"github.com/flink-operator/flink-operator/test/monitoring"
	"github.com/flink-operator/flink-operator/test/wait"
)

// prometheusMetrics are series Prometheus writes itself for every target.
var prometheusMetrics = map[string]bool{"up": true}

// TestShippedMonitoringUsesExposedMetrics holds the shipped alerts, recording rules and
// dashboard to the metrics the operator really exposes: a manager built as main builds it
// runs against an API server, reconciles, leads, and serves an admission request; the names
// are those its registry then gathers, plus those its own collectors describe (per-resource
// series exist only for resources in particular states). A misspelt or renamed metric in
// config/prometheus or config/grafana fails here instead of silently never firing.
func TestShippedMonitoringUsesExposedMetrics(t *testing.T) {
	exposed := liveMetricNames(t)
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)

	check := func(where, expr string) {
		names, err := monitoring.MetricNames(expr)
		require.NoError(t, err, where)
		require.NotEmpty(t, names, "%s: %s selects no metric", where, expr)
		for _, n := range names {
			assert.True(t, exposed[n] || prometheusMetrics[n], "%s uses %s, which the operator does not expose", where, n)
		}
	}
	groups, err := monitoring.LoadRules(root)
	require.NoError(t, err)
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			check("rule "+r.Alert+r.Record, r.Expr)
		}
	}
	queries, err := monitoring.DashboardQueries(root)
	require.NoError(t, err)
	require.NotEmpty(t, queries)
	for _, q := range queries {
		check(q.Where, q.Expr)
	}
}

// liveMetricNames returns the metric names (as series names: histograms' _bucket, _sum and
// _count) of a running manager's registry and of the operator's collectors.
func liveMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	env := testEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.NewNamespace(t, "monitoring")
	o := options{
		metricsAddr: "0", probeAddr: freeAddr(t), enableLeaderElection: true,
		leaderElectionID: "flink-operator-monitoring-test", leaderElectionNS: ns, watchNamespaces: ns,
		restURLTemplate: clients.DefaultRESTURLTemplate, reconcileInterval: time.Minute, progressInterval: 10 * time.Second,
	}
	mgr, err := newManager(env.Config, o)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	select {
	case <-mgr.Elected():
	case <-time.After(30 * time.Second):
		t.Fatal("the manager never led")
	}
	// A resource to reconcile (it fails validation, so nothing is deployed).
	dep := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders"},
		Spec: flinkv1beta1.FlinkDeploymentSpec{Image: "flink:1.20", FlinkVersion: flinkv1beta1.FlinkVersion1_20,
			Job: &flinkv1beta1.JobSpec{JarURI: "local:///x.jar"}}}
	require.NoError(t, env.Client.Create(ctx, dep))
	// One admission request through controller-runtime's webhook server, which instruments
	// every webhook the operator registers the same way.
	srv := webhook.NewServer(webhook.Options{})
	srv.Register("/validate-probe", &webhook.Admission{Handler: admission.HandlerFunc(
		func(context.Context, admission.Request) admission.Response { return admission.Allowed("") })})
	review, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID("probe")}})
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodPost, "/validate-probe", bytes.NewReader(review))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	srv.WebhookMux().ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)

	names := map[string]bool{}
	var families []*dto.MetricFamily
	wait.Until(t, context.Background(), 30*time.Second, "the FlinkDeployment in the resource series, and one reconcile done", func() (bool, error) {
		if families, err = ctrlmetrics.Registry.Gather(); err != nil {
			return false, err
		}
		// The resource series come from the cache, which can hold the resource before its
		// first reconcile ends; the reconcile histograms appear only once one has.
		seen := map[string]bool{}
		for _, f := range families {
			seen[f.GetName()] = true
		}
		return seen["flink_operator_resource_lifecycle"] && seen["controller_runtime_reconcile_time_seconds"], nil
	})
	for _, f := range families {
		addSeriesNames(names, f.GetName(), f.GetType())
	}
	// What the operator's own collectors report once there is data: the per-resource series
	// (described: they need resources in particular states), a transition and a REST call.
	op := opmetrics.NewOperator(nil, nil)
	descs := make(chan *prometheus.Desc, 100)
	op.Resources.Describe(descs)
	close(descs)
	for d := range descs {
		m := descName.FindStringSubmatch(d.String())
		require.NotNil(t, m, d.String())
		names[m[1]] = true
	}
	op.Lifecycle.Observe("uid", ns, opmetrics.KindDeployment, flinkv1beta1.LifecycleCreated)
	op.Lifecycle.Observe("uid", ns, opmetrics.KindDeployment, flinkv1beta1.LifecycleDeployed)
	op.REST.Observe(flink.Call{Endpoint: "GET /jobs/overview", StatusCode: http.StatusOK})
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, opmetrics.Register(reg, op.REST.Collectors()...))
	require.NoError(t, opmetrics.Register(reg, op.Lifecycle.Collector()))
	families, err = reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		addSeriesNames(names, f.GetName(), f.GetType())
	}
	for _, must := range []string{"controller_runtime_reconcile_errors_total", "controller_runtime_webhook_requests_total",
		"leader_election_master_status", "flink_operator_resource_lifecycle", "flink_operator_last_savepoint_timestamp_seconds",
		"flink_operator_lifecycle_transition_seconds_bucket", "flink_operator_flink_rest_requests_total"} {
		require.True(t, names[must], "the live registry has no %s: the test no longer sees what the operator exposes", must)
	}
	list := make([]string, 0, len(names))
	for n := range names {
		list = append(list, n)
	}
	sort.Strings(list)
	t.Logf("%d exposed series names", len(list))
	return names
}

// descName reads a Desc's name from its String(), the only way client_golang shows it.
var descName = regexp.MustCompile(`fqName: "([^"]+)"`)

func addSeriesNames(names map[string]bool, name string, typ dto.MetricType) {
	names[name] = true
	switch typ {
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
	case dto.MetricType_SUMMARY:
		names[name+"_sum"], names[name+"_count"] = true, true
	}
}
