package controllers

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/extension/listener"
	"github.com/flink-operator/flink-operator/pkg/options"
	"github.com/flink-operator/flink-operator/pkg/redact"
	"github.com/flink-operator/flink-operator/test/wait"
)

// statusListener is a Go listener that keeps the status changes it is told of.
type statusListener struct {
	mu      sync.Mutex
	changes []listener.StatusChange
}

func (s *statusListener) OnStatusChange(_ context.Context, c listener.StatusChange) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changes = append(s.changes, c)
}

func (s *statusListener) OnEvent(context.Context, listener.Event) {}

// TestStatusEventsMaskSecretsByPlace: the statuses given to listeners have their secrets masked
// where they are, so a tenant's secret equal to a field name or holding JSON syntax neither
// hides a field of the recorded spec nor breaks the status, whose CloudEvent is still sent.
func TestStatusEventsMaskSecretsByPlace(t *testing.T) {
	t.Parallel()
	for _, secret := range []string{"hostNetwork", "privileged", `":{"`} {
		t.Run(secret, func(t *testing.T) {
			sink := &cloudEventSink{}
			srv := httptest.NewServer(sink)
			t.Cleanup(srv.Close)
			conf := map[string]string{options.ExtensionListeners.Key: `[{"name": "audit", "url": "` + srv.URL + `"}]`,
				options.ExtensionAllowedHosts.Key: "127.0.0.1"}
			m, err := listener.NewMetrics(nil)
			require.NoError(t, err)
			golang := &statusListener{}
			d := &listener.Dispatcher{OperatorConfig: func() map[string]string { return conf }, Metrics: m, Log: logr.Discard(),
				Embedded: []listener.Listener{golang}}
			t.Cleanup(d.Stop)

			flinkConf, err := json.Marshal(map[string]string{"x.password": secret, "taskmanager.numberOfTaskSlots": "2"})
			require.NoError(t, err)
			privileged := true
			dep := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "orders", UID: "u-1", Generation: 2},
				Spec: flinkv1beta1.FlinkDeploymentSpec{FlinkVersion: flinkv1beta1.FlinkVersion1_20,
					FlinkConfiguration: flinkv1beta1.FlinkConfiguration{Raw: flinkConf},
					PodTemplate: &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{
						Name: "flink-main-container", SecurityContext: &corev1.SecurityContext{Privileged: &privileged}}}}}}}
			recorded, err := flinkv1beta1.EncodeReconciledSpec(dep.Spec, false)
			require.NoError(t, err)
			old := dep.Status.DeepCopy()
			dep.Status.LifecycleState = flinkv1beta1.LifecycleStable
			dep.Status.ReconciliationStatus.LastReconciledSpec = recorded
			dep.Status.ReconciliationStatus.LastStableSpec = recorded

			reconciler.StatusWritten(context.Background(), d, dep, old, &dep.Status, nil)

			golang.mu.Lock()
			require.Len(t, golang.changes, 1)
			change := golang.changes[0]
			golang.mu.Unlock()
			_, encoded := change.Statuses()
			var st flinkv1beta1.FlinkDeploymentStatus
			require.NoError(t, json.Unmarshal(encoded, &st), "the status given to Go listeners does not parse: %s", encoded)
			assert.Equal(t, flinkv1beta1.LifecycleStable, st.LifecycleState)
			for _, rec := range []string{st.ReconciliationStatus.LastReconciledSpec, st.ReconciliationStatus.LastStableSpec} {
				var spec struct {
					Spec flinkv1beta1.FlinkDeploymentSpec `json:"spec"`
				}
				require.NoError(t, json.Unmarshal([]byte(rec), &spec), "the recorded spec does not parse")
				require.NotNil(t, spec.Spec.PodTemplate)
				assert.True(t, spec.Spec.PodTemplate.Spec.HostNetwork, "hostNetwork hidden from listeners")
				sc := spec.Spec.PodTemplate.Spec.Containers[0].SecurityContext
				assert.True(t, sc != nil && sc.Privileged != nil && *sc.Privileged, "privileged hidden from listeners")
				got, err := spec.Spec.FlinkConfiguration.Flatten()
				require.NoError(t, err)
				assert.Equal(t, map[string]string{"x.password": redact.Mask, "taskmanager.numberOfTaskSlots": "2"}, got)
			}

			wait.For(t, 10*time.Second, "the status CloudEvent", func() bool {
				_, ok := sink.find(listener.TypeStatusChanged, "")
				return ok
			})
			ev, _ := sink.find(listener.TypeStatusChanged, "")
			var data listener.StatusData
			require.NoError(t, ev.DataAs(&data))
			var sent flinkv1beta1.FlinkDeploymentStatus
			require.NoError(t, json.Unmarshal(data.Status, &sent))
			assert.Equal(t, flinkv1beta1.LifecycleStable, sent.LifecycleState)
		})
	}
}
