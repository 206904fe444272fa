package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// TestNonceCreatesSnapshotResource: a changed savepointTriggerNonce becomes one
// FlinkStateSnapshot (labelled, no owner), and the nonce is recorded so it is not repeated.
func TestNonceCreatesSnapshotResource(t *testing.T) {
	env := kubeenv.Start(t)
	flink := fakeflink.New(t)
	c := env.Client
	ctx := context.Background()
	const ns, name = "nonce", "orders"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	k := &cluster{t: t, c: c, flink: flink}
	events := startOperator(t, env, flink)
	require.NoError(t, c.Create(ctx, newDeployment(t, ns, name)))
	d := waitFor(t, c, ns, name, "deployed", func(d *flinkv1beta1.FlinkDeployment) bool { return d.Status.JobStatus.JobID != "" })
	k.run(ns, name, d.Status.JobStatus.JobID)
	waitFor(t, c, ns, name, "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))

	d = get(t, c, ns, name)
	nonce := int64(7)
	d.Spec.Job.SavepointTriggerNonce = &nonce
	require.NoError(t, c.Update(ctx, d))
	var list flinkv1beta1.FlinkStateSnapshotList
	require.Eventually(t, func() bool {
		require.NoError(t, c.List(ctx, &list, client.InNamespace(ns)))
		return len(list.Items) == 1
	}, 10*time.Second, 50*time.Millisecond)
	snap := list.Items[0]
	assert.Regexp(t, `^orders-savepoint-manual-\d+$`, snap.Name)
	assert.Equal(t, "MANUAL", snap.Labels[LabelSnapshotTrigger])
	assert.Equal(t, "orders", snap.Spec.JobReference.Name)
	assert.Empty(t, snap.OwnerReferences, "snapshots outlive the deployment")
	assert.False(t, *snap.Spec.Savepoint.DisposeOnDelete, "kubernetes.operator.savepoint.dispose-on-delete defaults to false")
	waitFor(t, c, ns, name, "nonce recorded", func(d *flinkv1beta1.FlinkDeployment) bool {
		return strings.Contains(d.Status.ReconciliationStatus.LastReconciledSpec, `"savepointTriggerNonce":7`)
	})
	time.Sleep(500 * time.Millisecond)
	require.NoError(t, c.List(ctx, &list, client.InNamespace(ns)))
	assert.Len(t, list.Items, 1, "one nonce, one snapshot")
	assert.True(t, events.has("MANUAL snapshot requested"))
}

// TestTrimSavepointHistory: beyond max.count the oldest finished snapshots go, but the newest
// completed one always stays.
func TestTrimSavepointHistory(t *testing.T) {
	env := kubeenv.Start(t)
	c := env.Client
	ctx := context.Background()
	const ns = "history"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	states := []flinkv1beta1.SnapshotState{flinkv1beta1.SnapshotCompleted, flinkv1beta1.SnapshotCompleted,
		flinkv1beta1.SnapshotCompleted, flinkv1beta1.SnapshotFailed, flinkv1beta1.SnapshotFailed}
	for i, state := range states { // oldest first
		s := &flinkv1beta1.FlinkStateSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("sp-%d", i),
			Labels: map[string]string{LabelJobReferenceKind: "FlinkDeployment", LabelJobReferenceName: "orders", LabelSnapshotType: "SAVEPOINT"}},
			Spec: flinkv1beta1.FlinkStateSnapshotSpec{Savepoint: &flinkv1beta1.SavepointSpec{}}}
		require.NoError(t, c.Create(ctx, s))
		s.Status.State = state
		require.NoError(t, c.Status().Update(ctx, s))
		time.Sleep(1100 * time.Millisecond) // creationTimestamp has second precision
	}
	conf := native.Config{optSavepointHistoryMax: "2"}
	require.NoError(t, trimSavepointHistory(ctx, c, ns, "FlinkDeployment", "orders", conf, time.Now()))
	var list flinkv1beta1.FlinkStateSnapshotList
	require.NoError(t, c.List(ctx, &list, client.InNamespace(ns)))
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	assert.ElementsMatch(t, []string{"sp-2", "sp-3", "sp-4"}, names, "the two newest, plus the newest completed (sp-2)")
}

func TestPeriodicDue(t *testing.T) {
	hourAgo := time.Now().Add(-time.Hour).UnixMilli()
	minuteAgo := time.Now().Add(-time.Minute).UnixMilli()
	tests := []struct {
		name  string
		value string
		last  int64
		want  bool
	}{
		{"unset", "", hourAgo, false},
		{"duration passed", "30 min", hourAgo, true},
		{"duration not yet", "30 min", minuteAgo, false},
		{"zero disables", "0", hourAgo, false},
		{"cron due", "0 * * * * ?", hourAgo, true},             // every minute
		{"cron not yet", "0 0 0 1 1 ? 2199", minuteAgo, false}, // far future
		{"invalid", "sometimes", hourAgo, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := native.Config{optPeriodicSavepoint: tt.value}
			assert.Equal(t, tt.want, periodicDue(conf, optPeriodicSavepoint, tt.last, ""))
		})
	}
}
