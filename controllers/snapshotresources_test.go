package controllers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestNonceCreatesSnapshotResource: a changed savepointTriggerNonce becomes one
// FlinkStateSnapshot (labelled, no owner), and the nonce is recorded so it is not repeated.
func TestNonceCreatesSnapshotResource(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ctx := context.Background()
	ns, _, k, events := newScenario(t, "nonce")
	const name = "orders"
	stableDeployment(t, c, k, fixtures.NewDeployment(t, ns, name))
	snap := requestSavepoint(t, c, ns, name, 7)
	assert.Regexp(t, `^orders-savepoint-manual-\d+$`, snap.Name)
	assert.Equal(t, "MANUAL", snap.Labels[jobs.LabelSnapshotTrigger])
	assert.Equal(t, "orders", snap.Spec.JobReference.Name)
	assert.Empty(t, snap.OwnerReferences, "snapshots outlive the deployment")
	assert.False(t, *snap.Spec.Savepoint.DisposeOnDelete, "kubernetes.operator.savepoint.dispose-on-delete defaults to false")
	waitFor(t, c, ns, name, "nonce recorded", func(d *flinkv1beta1.FlinkDeployment) bool {
		return strings.Contains(d.Status.ReconciliationStatus.LastReconciledSpec, `"savepointTriggerNonce":7`)
	})
	wait.Never(t, 500*time.Millisecond, "one nonce, one snapshot", func() bool {
		var again flinkv1beta1.FlinkStateSnapshotList
		return c.List(ctx, &again, client.InNamespace(ns)) != nil || len(again.Items) != 1
	})
	events.seen(t, "MANUAL snapshot requested")
}

// TestTrimSavepointHistory: history cleanup against a real API server, two days after every
// snapshot was taken. Only what the operator took on its own (PERIODIC, UPGRADE) goes; manual
// and hand-made snapshots stay whatever their age; the newest completed savepoint and the
// num-retained newest checkpoints stay; other jobs' snapshots are not touched.
func TestTrimSavepointHistory(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ctx := context.Background()
	ns := testEnv(t).NewNamespace(t, "history")
	type stored struct {
		name       string
		job        string
		trigger    flinkv1beta1.SnapshotTriggerType // "" leaves the label off
		checkpoint bool
		state      flinkv1beta1.SnapshotState
	}
	// Created oldest first. The user's snapshots come first and are older than the operator's
	// newest ones, so none of them may be kept as "the newest completed savepoint" or
	// checkpoint: they must be kept for being the user's. creationTimestamp has second
	// precision, so "older" is the operator's order (takenBefore): the timestamp, then, within
	// a second, the trigger time that ends operator-style names (none for the first two). That
	// order holds wherever the second boundaries fall, so the test waits for no clock; it is
	// checked below before the trim, so the test cannot pass for the wrong reason.
	users := []stored{
		{"before-migration", "orders", flinkv1beta1.SnapshotTriggerManual, false, flinkv1beta1.SnapshotCompleted},
		{"hand-made-unlabelled", "orders", "", false, flinkv1beta1.SnapshotCompleted},
		{"orders-checkpoint-manual-1500", "orders", flinkv1beta1.SnapshotTriggerManual, true, flinkv1beta1.SnapshotCompleted},
	}
	operators := []stored{
		{"orders-savepoint-periodic-1000", "orders", flinkv1beta1.SnapshotTriggerPeriodic, false, flinkv1beta1.SnapshotCompleted},
		{"orders-checkpoint-periodic-1000", "orders", flinkv1beta1.SnapshotTriggerPeriodic, true, flinkv1beta1.SnapshotCompleted},
		{"orders-savepoint-upgrade-2000", "orders", flinkv1beta1.SnapshotTriggerUpgrade, false, flinkv1beta1.SnapshotCompleted},
		{"orders-checkpoint-periodic-2000", "orders", flinkv1beta1.SnapshotTriggerPeriodic, true, flinkv1beta1.SnapshotCompleted},
		{"orders-savepoint-periodic-3000", "orders", flinkv1beta1.SnapshotTriggerPeriodic, false, flinkv1beta1.SnapshotCompleted},
		{"orders-checkpoint-periodic-3000", "orders", flinkv1beta1.SnapshotTriggerPeriodic, true, flinkv1beta1.SnapshotCompleted},
		{"orders-savepoint-periodic-4000", "orders", flinkv1beta1.SnapshotTriggerPeriodic, false, flinkv1beta1.SnapshotFailed},
		{"orders-savepoint-periodic-5000", "orders", flinkv1beta1.SnapshotTriggerPeriodic, false, flinkv1beta1.SnapshotInProgress},
		{"payments-savepoint-periodic-1000", "payments", flinkv1beta1.SnapshotTriggerPeriodic, false, flinkv1beta1.SnapshotCompleted},
	}
	create := func(want stored) flinkv1beta1.FlinkStateSnapshot {
		labels := map[string]string{jobs.LabelJobReferenceKind: "FlinkDeployment", jobs.LabelJobReferenceName: want.job, jobs.LabelSnapshotType: "SAVEPOINT"}
		spec := flinkv1beta1.FlinkStateSnapshotSpec{JobReference: &flinkv1beta1.JobReference{Kind: "FlinkDeployment", Name: want.job}}
		if want.checkpoint {
			labels[jobs.LabelSnapshotType] = "CHECKPOINT"
			spec.Checkpoint = &flinkv1beta1.CheckpointSpec{}
		} else {
			spec.Savepoint = &flinkv1beta1.SavepointSpec{}
		}
		if want.trigger != "" {
			labels[jobs.LabelSnapshotTrigger] = string(want.trigger)
		}
		s := &flinkv1beta1.FlinkStateSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: want.name, Labels: labels}, Spec: spec}
		require.NoError(t, c.Create(ctx, s))
		s.Status.State = want.state
		require.NoError(t, c.Status().Update(ctx, s))
		return *s
	}
	var usersMade []flinkv1beta1.FlinkStateSnapshot
	for _, want := range users {
		usersMade = append(usersMade, create(want))
	}
	created := map[string]flinkv1beta1.FlinkStateSnapshot{}
	var newest time.Time
	for _, want := range operators {
		s := create(want)
		created[s.Name] = s
		if s.CreationTimestamp.After(newest) {
			newest = s.CreationTimestamp.Time
		}
	}
	for _, u := range usersMade {
		for _, op := range []string{"orders-savepoint-periodic-3000", "orders-checkpoint-periodic-3000"} {
			require.True(t, jobs.TakenBefore(u, created[op]), "%s is older than %s", u.Name, op)
		}
	}

	// Two days after the newest snapshot: a time given to the trim, not read from a clock.
	twoDaysLater := newest.Add(48 * time.Hour)
	require.NoError(t, jobs.TrimSnapshotHistory(ctx, c, ns, "FlinkDeployment", "orders", flinkconf.Config{}, nil, twoDaysLater))

	var list flinkv1beta1.FlinkStateSnapshotList
	require.NoError(t, c.List(ctx, &list, client.InNamespace(ns)))
	var names []string
	for _, s := range list.Items {
		if s.DeletionTimestamp.IsZero() {
			names = append(names, s.Name)
		}
	}
	assert.ElementsMatch(t, []string{
		"before-migration",                 // MANUAL: the user's, never trimmed
		"hand-made-unlabelled",             // no trigger type: never trimmed
		"orders-checkpoint-manual-1500",    // MANUAL checkpoint
		"orders-savepoint-periodic-3000",   // newest completed savepoint, kept whatever its age
		"orders-savepoint-periodic-5000",   // in progress: never deleted
		"orders-checkpoint-periodic-3000",  // state.checkpoints.num-retained defaults to 1
		"payments-savepoint-periodic-1000", // another job's history
	}, names)
}

// TestManualSnapshotRequestedOnce (found by TestChaos): a reconcile that sees the nonce still
// unrecorded after the snapshot was created (an operator killed between the two writes, or a
// reconcile on a cached object older than the nonce's write) does not request a second
// savepoint: the snapshot of one nonce change has one name, whenever it is asked for.
func TestManualSnapshotRequestedOnce(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ctx := context.Background()
	ns := testEnv(t).NewNamespace(t, "nonce-once")
	owner := fixtures.NewDeployment(t, ns, "orders")
	require.NoError(t, c.Create(ctx, owner))
	nonce := int64(3)
	crashed := errors.New("operator killed before the nonce was recorded")
	j := jobs.JobSnapshots{Owner: owner, Kind: flinkv1beta1.JobKindFlinkDeployment, Deployed: &flinkv1beta1.JobSpec{},
		Desired: &flinkv1beta1.JobSpec{SavepointTriggerNonce: &nonce}, Status: &flinkv1beta1.JobStatus{}, Conf: flinkconf.Config{},
		RecordNonces: func() error { return nil }, Persist: func() error { return crashed }}
	start := time.Now()
	for i := range 3 { // the same stale view, asked again later
		require.ErrorIs(t, jobs.RequestSnapshots(ctx, c, record.NewFakeRecorder(10), j, start.Add(time.Duration(i)*time.Second)), crashed)
	}
	var list flinkv1beta1.FlinkStateSnapshotList
	require.NoError(t, c.List(ctx, &list, client.InNamespace(ns)))
	assert.Len(t, list.Items, 1, "one nonce change, one savepoint")
}

// requestSavepoint sets the savepoint trigger nonce of FlinkDeployment name and returns the one
// FlinkStateSnapshot the operator creates for it.
func requestSavepoint(t *testing.T, c client.Client, ns, name string, nonce int64) flinkv1beta1.FlinkStateSnapshot {
	t.Helper()
	d := get(t, c, ns, name)
	d.Spec.Job.SavepointTriggerNonce = &nonce
	require.NoError(t, c.Update(context.Background(), d))
	var list flinkv1beta1.FlinkStateSnapshotList
	wait.Until(t, context.Background(), 10*time.Second, "one snapshot resource", func() (bool, error) {
		err := c.List(context.Background(), &list, client.InNamespace(ns))
		return err == nil && len(list.Items) == 1, err
	})
	return list.Items[0]
}
