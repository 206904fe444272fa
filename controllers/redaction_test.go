package controllers

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinkdeployment"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/validation"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestSecretsNeverReachLogsEventsOrStatus: a FlinkDeployment whose secret value is quoted by
// a validation error (the same value sits under a secret key and under a key the validator
// rejects), and whose pod template carries an env value: the operator's log lines, events and
// status never contain either.
func TestSecretsNeverReachLogsEventsOrStatus(t *testing.T) {
	t.Parallel()
	const secret, envSecret = "hunter2-XYZ", "pw-in-env-123"
	flink := fakeflink.New(t)
	c := testEnv(t).Client
	ns := testEnv(t).NewNamespace(t, "secrets")

	var mu sync.Mutex
	var logs []string
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, prefix+" "+args)
	}, funcr.Options{Verbosity: 10})
	events, _ := startManager(t, managerOptions{namespaces: []string{ns}, logger: logger,
		setup: func(mgr ctrl.Manager, rec record.EventRecorder) error {
			return (&flinkdeployment.FlinkDeploymentReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: rec,
				Flink: &clients.Factory{URLTemplate: flink.URL, Timeout: time.Second}, Validator: &validation.Validator{},
				Intervals: fixtures.FastIntervals()}).SetupWithManager(mgr)
		}})

	dep := fixtures.NewDeployment(t, ns, "leaky")
	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{
		"state.checkpoints.dir": "file:///cp", "state.savepoints.dir": "file:///sp",
		"s3.secret-key": secret, "job.autoscaler.target.utilization": secret,
	})
	dep.Spec.PodTemplate = &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "flink-main-container",
		Env: []corev1.EnvVar{{Name: "DB_PASSWORD", Value: envSecret}}}}}}
	require.NoError(t, c.Create(context.Background(), dep))

	d := waitFor(t, c, ns, "leaky", "validation error", func(d *flinkv1beta1.FlinkDeployment) bool {
		return strings.Contains(d.Status.Error, "job.autoscaler.target.utilization")
	})
	require.Contains(t, d.Status.Error, "******", "the rejected value is shown masked")
	wait.For(t, 5*time.Second, "events.has(\"job.autoscaler.target.utilization\")", func() bool { return events.has("job.autoscaler.target.utilization") })
	collected := func() (allEvents, allLogs string) {
		events.mu.Lock()
		allEvents = strings.Join(events.events, "\n")
		events.mu.Unlock()
		mu.Lock()
		allLogs = strings.Join(logs, "\n")
		mu.Unlock()
		return allEvents, allLogs
	}
	// A few more reconciles and log lines: no secret in any of them, at any point.
	wait.Never(t, 300*time.Millisecond, "a secret reached the events or logs", func() bool {
		allEvents, allLogs := collected()
		for _, s := range []string{secret, envSecret} {
			if strings.Contains(allEvents, s) || strings.Contains(allLogs, s) {
				return true
			}
		}
		return false
	})

	allEvents, allLogs := collected()
	require.NotEmpty(t, allLogs)
	for _, s := range []string{secret, envSecret} {
		require.NotContains(t, d.Status.Error, s)
		require.NotContains(t, allEvents, s)
		require.NotContains(t, allLogs, s)
	}
}
