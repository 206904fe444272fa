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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/validation"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// TestSecretsNeverReachLogsEventsOrStatus: a FlinkDeployment whose secret value is quoted by
// a validation error (the same value sits under a secret key and under a key the validator
// rejects), and whose pod template carries an env value: the operator's log lines, events and
// status never contain either.
func TestSecretsNeverReachLogsEventsOrStatus(t *testing.T) {
	const secret, envSecret = "hunter2-XYZ", "pw-in-env-123"
	env := kubeenv.Start(t)
	flink := fakeflink.New(t)
	c := env.Client
	ctx := context.Background()
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "secrets"}}))

	var mu sync.Mutex
	var logs []string
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, prefix+" "+args)
	}, funcr.Options{Verbosity: 10})
	skip := true
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Logger: logger,
		Metrics: metricsserver.Options{BindAddress: "0"}, Controller: config.Controller{SkipNameValidation: &skip}})
	require.NoError(t, err)
	rec := record.NewFakeRecorder(1000)
	events := &recordedEvents{}
	events.record(rec)
	require.NoError(t, (&FlinkDeploymentReconciler{Client: mgr.GetClient(), Scheme: env.Scheme, Recorder: rec,
		Flink: &FlinkClients{URLTemplate: flink.URL, Timeout: time.Second}, Validator: &validation.Validator{},
		Intervals: fastIntervals()}).SetupWithManager(mgr))
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	defer func() { cancel(); <-done }()

	dep := newDeployment(t, "secrets", "leaky")
	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{
		"state.checkpoints.dir": "file:///cp", "state.savepoints.dir": "file:///sp",
		"s3.secret-key": secret, "job.autoscaler.target.utilization": secret,
	})
	dep.Spec.PodTemplate = &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "flink-main-container",
		Env: []corev1.EnvVar{{Name: "DB_PASSWORD", Value: envSecret}}}}}}
	require.NoError(t, c.Create(ctx, dep))

	d := waitFor(t, c, "secrets", "leaky", "validation error", func(d *flinkv1beta1.FlinkDeployment) bool {
		return strings.Contains(d.Status.Error, "job.autoscaler.target.utilization")
	})
	require.Contains(t, d.Status.Error, "******", "the rejected value is shown masked")
	require.Eventually(t, func() bool { return events.has("job.autoscaler.target.utilization") }, 5*time.Second, 50*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // a few more reconciles and log lines

	events.mu.Lock()
	allEvents := strings.Join(events.events, "\n")
	events.mu.Unlock()
	mu.Lock()
	allLogs := strings.Join(logs, "\n")
	mu.Unlock()
	require.NotEmpty(t, allLogs)
	for _, s := range []string{secret, envSecret} {
		require.NotContains(t, d.Status.Error, s)
		require.NotContains(t, allEvents, s)
		require.NotContains(t, allLogs, s)
	}
}
