package operatorconfig

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flink-operator/flink-operator/test/wait"

	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/validation"
)

// missingRecorder records what the watcher reports about the ConfigMap's presence.
type missingRecorder struct {
	mu       sync.Mutex
	missing  []bool
	warnings []string
}

func (m *missingRecorder) set(missing bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.missing = append(m.missing, missing)
}

func (m *missingRecorder) warn(msg string, _ ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.warnings = append(m.warnings, msg)
}

func (m *missingRecorder) last() (bool, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.missing) == 0 {
		return false, false
	}
	return m.missing[len(m.missing)-1], true
}

func policyConfigMap(level string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "flink-operator-config"},
		Data: map[string]string{"config.yaml": "kubernetes.operator.pod-security.level: " + level + "\n" +
			"kubernetes.operator.ingress.annotations.allowed: cert-manager.io/*\n"}}
}

// privileged is a FlinkDeployment whose pods the baseline level refuses.
func privileged() *flinkv1beta1.FlinkDeployment {
	dep := &flinkv1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "team-a"}}
	dep.Spec.Image, dep.Spec.FlinkVersion, dep.Spec.ServiceAccount = "flink:1.20", "v1_20", "flink"
	dep.Spec.JobManager = &flinkv1beta1.JobManagerSpec{Resource: &flinkv1beta1.Resource{Memory: "2048m", CPU: ptr.To(1.0)}}
	dep.Spec.TaskManager = &flinkv1beta1.TaskManagerSpec{Resource: &flinkv1beta1.Resource{Memory: "2048m", CPU: ptr.To(1.0)}}
	dep.Spec.PodTemplate = &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "flink-main-container"}}}}
	return dep
}

// TestDeletedConfigMapKeepsTheLastGoodConfiguration: deleting the operator ConfigMap after it
// was loaded keeps its configuration (the pod security level and the annotation allowlist
// stay enforced), reports it missing (metric) and warns; a ConfigMap created again applies.
// Without a ConfigMap at start the operator runs on the defaults, reported missing too.
func TestDeletedConfigMapKeepsTheLastGoodConfiguration(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := Settings{ReconcileInterval: time.Minute, ProgressCheckInterval: 10 * time.Second, RESTTimeout: 10 * time.Second, ReconcileParallelism: 25}
	kc := fake.NewClientset(policyConfigMap("baseline"))
	store := NewStore(base)
	rec := &missingRecorder{}
	w := &Watcher{Client: kc, Namespace: "ops", Name: "flink-operator-config", Base: base, Store: store,
		Missing: rec.set, Warn: rec.warn}
	var applied atomic.Int32
	w.Log = func(msg string, _ ...any) {
		if msg == "applied operator configuration" {
			applied.Add(1)
		}
	}
	require.NoError(t, w.Load(ctx))
	v := &validation.Validator{OperatorConfig: func() map[string]string { return store.Get().Defaults.Operator }}
	require.NotEmpty(t, v.ValidateDeployment(privileged(), nil), "baseline refuses host networking")
	missing, reported := rec.last()
	assert.True(t, reported && !missing, "present at start")
	// The informer lists, then watches; the fake clientset replays nothing to a watch started
	// after a change, so the deletion waits until the watch is open (on a loaded machine the
	// list and the watch are far apart).
	watching := make(chan struct{})
	var watchOnce sync.Once
	kc.PrependWatchReactor("configmaps", func(k8stesting.Action) (bool, watch.Interface, error) {
		watchOnce.Do(func() { close(watching) })
		return false, nil, nil
	})
	go w.Run(ctx)
	wait.For(t, 10*time.Second, "the watch has seen the ConfigMap", func() bool { return applied.Load() == 2 })
	select {
	case <-watching:
	case <-time.After(time.Minute):
		t.Fatal("the informer never opened its watch")
	}

	require.NoError(t, kc.CoreV1().ConfigMaps("ops").Delete(ctx, "flink-operator-config", metav1.DeleteOptions{}))
	level := func() string { return store.Get().Defaults.Operator["kubernetes.operator.pod-security.level"] }
	wait.For(t, 10*time.Second, "deletion seen", func() bool { m, _ := rec.last(); return m || level() != "baseline" })
	assert.Equal(t, "baseline", level(), "the last good configuration stays")
	assert.NotEmpty(t, v.ValidateDeployment(privileged(), nil), "the policy is still enforced")
	missing, _ = rec.last()
	assert.True(t, missing, "reported missing")
	assert.Contains(t, rec.warnings, "operator ConfigMap deleted; keeping the last configuration loaded from it until it is created again (a restart would fall back to the defaults)")

	_, err := kc.CoreV1().ConfigMaps("ops").Create(ctx, policyConfigMap("restricted"), metav1.CreateOptions{})
	require.NoError(t, err)
	wait.For(t, 10*time.Second, "a ConfigMap created again applies", func() bool {
		return level() == "restricted"
	})
	missing, _ = rec.last()
	assert.False(t, missing)

	// A start without the ConfigMap keeps the defaults (upstream's behaviour), reported missing.
	empty := &missingRecorder{}
	w2 := &Watcher{Client: fake.NewClientset(), Namespace: "ops", Name: "flink-operator-config", Base: base, Store: NewStore(base),
		Missing: empty.set, Warn: empty.warn}
	require.NoError(t, w2.Load(ctx))
	v2 := &validation.Validator{OperatorConfig: func() map[string]string { return w2.Store.Get().Defaults.Operator }}
	assert.Empty(t, v2.ValidateDeployment(privileged(), nil), "the default level allows what upstream allows")
	missing, reported = empty.last()
	assert.True(t, reported && missing, "missing at start")
}
