package controllers

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinkdeployment"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/extension/listener"
	"github.com/flink-operator/flink-operator/pkg/extension/validator"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/options"
	"github.com/flink-operator/flink-operator/pkg/validation"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// quotaValidator is a validator endpoint that refuses a parallelism above 4.
func quotaValidator(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req validator.ValidationRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var obj flinkv1beta1.FlinkDeployment
		require.NoError(t, json.Unmarshal(req.Object, &obj))
		ans := validator.ValidationResponse{APIVersion: validator.APIVersion, Kind: validator.KindResponse, UID: req.UID, Allowed: true}
		if obj.Spec.Job != nil && obj.Spec.Job.Parallelism > 4 {
			ans.Allowed = false
			ans.Errors = []validator.FieldError{{Field: "spec.job.parallelism", Message: "at most 4 in this namespace"}}
		}
		_ = json.NewEncoder(w).Encode(ans)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// stuckEndpoint never answers before its caller gives up.
func stuckEndpoint(t *testing.T) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	return srv
}

// cloudEventSink records the CloudEvents a listener endpoint receives.
type cloudEventSink struct {
	mu     sync.Mutex
	events []cloudevents.Event
}

func (s *cloudEventSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ev, err := cehttp.NewEventFromHTTPRequest(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.events = append(s.events, *ev)
	s.mu.Unlock()
}

// find is the first event of type typ whose data contains substr.
func (s *cloudEventSink) find(typ, substr string) (cloudevents.Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range s.events {
		if ev.Type() == typ && strings.Contains(string(ev.Data()), substr) {
			return ev, true
		}
	}
	return cloudevents.Event{}, false
}

// extensionOperator runs the FlinkDeployment reconciler with the custom validators and
// listeners of the operator configuration conf (webhooks off: the reconciler's own check).
func extensionOperator(t *testing.T, flink *fakeflink.Server, ns string, conf map[string]string) *recordedEvents {
	t.Helper()
	current := func() map[string]string { return conf }
	m, err := listener.NewMetrics(nil)
	require.NoError(t, err)
	listeners := &listener.Dispatcher{OperatorConfig: current, Metrics: m, Log: logr.Discard()}
	t.Cleanup(listeners.Stop)
	events, _ := startManager(t, managerOptions{namespaces: []string{ns}, setup: func(mgr ctrl.Manager, rec record.EventRecorder) error {
		return (&flinkdeployment.FlinkDeploymentReconciler{
			Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: rec,
			Flink:     &clients.Factory{URLTemplate: flink.URL, Timeout: 2 * time.Second},
			Validator: &validation.Validator{}, Intervals: fixtures.FastIntervals(),
			ReconcilerOptions: reconciler.ReconcilerOptions{CustomValidator: &validator.Chain{OperatorConfig: current}, Listener: listeners},
		}).SetupWithManager(mgr)
	}})
	return events
}

func TestCustomValidatorRefusesInReconciler(t *testing.T) {
	t.Parallel()
	ctx, c := context.Background(), testEnv(t).Client
	ns := testEnv(t).NewNamespace(t, "ext-validator")
	flink := fakeflink.New(t)
	k := &cluster{t: t, c: c, flink: flink}
	sink := &cloudEventSink{}
	recording := httptest.NewServer(sink)
	t.Cleanup(recording.Close)
	events := extensionOperator(t, flink, ns, map[string]string{
		options.ExtensionAllowedHosts.Key: "127.0.0.1",
		options.ExtensionValidators.Key:   `[{"name": "quota", "url": "` + quotaValidator(t).URL + `"}]`,
		// The stuck listener's deliveries time out and are retried while the reconciles go on.
		options.ExtensionListeners.Key: `[{"name": "stuck", "url": "` + stuckEndpoint(t).URL + `", "timeout": "30 s"},
			{"name": "audit", "url": "` + recording.URL + `"}]`,
	})

	dep := fixtures.NewDeployment(t, ns, "orders")
	dep.Spec.Job.Parallelism = 8
	require.NoError(t, c.Create(ctx, dep))
	const refusal = "spec.job.parallelism: Forbidden: custom validator quota: at most 4 in this namespace"
	waitFor(t, c, ns, "orders", "the custom validator's refusal", func(d *flinkv1beta1.FlinkDeployment) bool {
		return strings.Contains(d.Status.Error, refusal)
	})
	events.seen(t, "ValidationError")
	assert.Nil(t, k.jobManager(ns, "orders"), "a refused spec was deployed")

	wait.For(t, 30*time.Second, "the audit listener heard of the refusal", func() bool {
		_, status := sink.find(listener.TypeStatusChanged, "at most 4 in this namespace")
		_, event := sink.find(listener.TypeEvent, `"reason":"ValidationError"`)
		return status && event
	})
	ev, _ := sink.find(listener.TypeStatusChanged, "at most 4 in this namespace")
	assert.Equal(t, "/apis/flink.apache.org/v1beta1/namespaces/"+ns+"/flinkdeployments", ev.Source())
	assert.Equal(t, "orders", ev.Subject())

	d := get(t, c, ns, "orders")
	d.Spec.Job.Parallelism = 2
	require.NoError(t, c.Update(ctx, d))
	waitFor(t, c, ns, "orders", "the error cleared once the validator allows the spec", func(d *flinkv1beta1.FlinkDeployment) bool {
		return d.Status.Error == ""
	})
	wait.For(t, 30*time.Second, "k.jobManager(ns, \"orders\") != nil", func() bool { return k.jobManager(ns, "orders") != nil })
}

func TestCustomValidatorTimeoutFailsClosedInReconciler(t *testing.T) {
	t.Parallel()
	ctx, c := context.Background(), testEnv(t).Client
	ns := testEnv(t).NewNamespace(t, "ext-timeout")
	flink := fakeflink.New(t)
	k := &cluster{t: t, c: c, flink: flink}
	events := extensionOperator(t, flink, ns, map[string]string{
		options.ExtensionAllowedHosts.Key: "127.0.0.1",
		options.ExtensionValidators.Key:   `[{"name": "slow", "url": "` + stuckEndpoint(t).URL + `", "timeout": "200 ms"}]`,
	})
	require.NoError(t, c.Create(ctx, fixtures.NewDeployment(t, ns, "orders")))
	waitFor(t, c, ns, "orders", "the failure policy's refusal", func(d *flinkv1beta1.FlinkDeployment) bool {
		return strings.Contains(d.Status.Error, "custom validator slow did not answer (failurePolicy Fail)")
	})
	events.seen(t, "ValidationError")
	assert.Nil(t, k.jobManager(ns, "orders"), "deployed although the validator did not answer")
}
