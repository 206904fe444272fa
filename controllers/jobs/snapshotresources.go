package jobs

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// SnapshotResourcesEnabled: snapshots are FlinkStateSnapshot resources unless the option
// turns them off (upstream's legacy mode keeps them in status fields).
func SnapshotResourcesEnabled(conf flinkconf.Config) bool {
	return options.SnapshotResources.Get(conf)
}

// JobSnapshots is what a job's snapshots are taken for: the resource, its job spec before
// and after this reconcile, and how to record what was done.
type JobSnapshots struct {
	Owner    client.Object
	Kind     flinkv1beta1.JobKind
	Deployed *flinkv1beta1.JobSpec
	Desired  *flinkv1beta1.JobSpec
	Status   *flinkv1beta1.JobStatus
	Conf     flinkconf.Config
	// OperatorConf is the operator's own configuration, where the system caps of history
	// cleanup (kubernetes.operator.savepoint.history.max.*.threshold) are read, so a resource's
	// flinkConfiguration cannot lift them. Nil reads them from conf.
	OperatorConf flinkconf.Config
	// MinPeriodic is the shortest interval of periodic snapshots (MinPeriodicInterval).
	MinPeriodic time.Duration
	// ShardLabels are the owner's labels the operator instance's selector looks at
	// (shard.Labels): a snapshot carrying them lands in the same shard as its owner, so the
	// instance that requested it also takes and trims it.
	ShardLabels map[string]string
	// RecordNonces writes desired's trigger nonces into the last reconciled spec.
	RecordNonces func() error
	// Persist writes the status.
	Persist func() error
}

// RequestSnapshots creates the FlinkStateSnapshot resources the spec's nonces and the
// periodic options ask for, and trims the snapshot history (snapshothistory.go). The snapshot
// controller takes them from there. A nonce is recorded once its snapshot resource exists (a crash in between
// asks again: an extra savepoint rather than a lost one).
func RequestSnapshots(ctx context.Context, c client.Client, rec record.EventRecorder, j JobSnapshots, now time.Time) error {
	if j.Status.SavepointInfo == nil {
		j.Status.SavepointInfo = &flinkv1beta1.SavepointInfo{}
	}
	if j.Status.CheckpointInfo == nil {
		j.Status.CheckpointInfo = &flinkv1beta1.CheckpointInfo{}
	}
	manualSavepoint := nonceChanged(j.Deployed.SavepointTriggerNonce, j.Desired.SavepointTriggerNonce)
	manualCheckpoint := nonceChanged(j.Deployed.CheckpointTriggerNonce, j.Desired.CheckpointTriggerNonce)
	// A manual request is created before its nonce is recorded (so it is never lost), under a
	// name derived from the request itself, so a reconcile that still sees the nonce unrecorded
	// (an operator killed in between, a cached object older than the record) finds it there
	// instead of requesting a second snapshot.
	if manualSavepoint {
		if err := createSnapshot(ctx, c, rec, j, false, flinkv1beta1.SnapshotTriggerManual, manualRequestID(j.Owner, j.Desired.SavepointTriggerNonce)); err != nil {
			return err
		}
	}
	if manualCheckpoint {
		if err := createSnapshot(ctx, c, rec, j, true, flinkv1beta1.SnapshotTriggerManual, manualRequestID(j.Owner, j.Desired.CheckpointTriggerNonce)); err != nil {
			return err
		}
	}
	if manualSavepoint || manualCheckpoint {
		if err := j.RecordNonces(); err != nil {
			return err
		}
		if err := j.Persist(); err != nil {
			return err
		}
	}
	if periodicDue(j.Conf, options.PeriodicSavepoint.Key, j.Status.SavepointInfo.LastPeriodicSavepointTimestamp, j.Status.StartTime, j.MinPeriodic) {
		warnPeriodicBelowMinimum(rec, j.Owner, j.Conf, options.PeriodicSavepoint.Key, j.MinPeriodic)
		j.Status.SavepointInfo.LastPeriodicSavepointTimestamp = now.UnixMilli()
		if err := j.Persist(); err != nil {
			return err
		}
		if err := createSnapshot(ctx, c, rec, j, false, flinkv1beta1.SnapshotTriggerPeriodic, strconv.FormatInt(now.UnixMilli(), 10)); err != nil {
			return err
		}
	}
	if periodicDue(j.Conf, options.PeriodicCheckpoint.Key, j.Status.CheckpointInfo.LastPeriodicCheckpointTimestamp, j.Status.StartTime, j.MinPeriodic) {
		warnPeriodicBelowMinimum(rec, j.Owner, j.Conf, options.PeriodicCheckpoint.Key, j.MinPeriodic)
		j.Status.CheckpointInfo.LastPeriodicCheckpointTimestamp = now.UnixMilli()
		if err := j.Persist(); err != nil {
			return err
		}
		if err := createSnapshot(ctx, c, rec, j, true, flinkv1beta1.SnapshotTriggerPeriodic, strconv.FormatInt(now.UnixMilli(), 10)); err != nil {
			return err
		}
	}
	return TrimSnapshotHistory(ctx, c, j.Owner.GetNamespace(), j.Kind, j.Owner.GetName(), j.Conf, j.OperatorConf, now)
}

// RecordUpgradeSnapshot records an upgrade savepoint (already taken) as a snapshot resource.
// Its name derives from the trigger time, so recording it again after a retry is a no-op.
func RecordUpgradeSnapshot(ctx context.Context, c client.Client, rec record.EventRecorder, j JobSnapshots, path string, triggeredAt time.Time) error {
	if !SnapshotResourcesEnabled(j.Conf) {
		return nil
	}
	snap := newSnapshot(j, false, flinkv1beta1.SnapshotTriggerUpgrade, strconv.FormatInt(triggeredAt.UnixMilli(), 10))
	exists := true
	snap.Spec.Savepoint.Path, snap.Spec.Savepoint.AlreadyExists = path, &exists
	if err := c.Create(ctx, snap); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create upgrade snapshot: %w", err)
	}
	return nil
}

// manualRequestID identifies one manual request: the owner's generation (a nonce set again
// later is a new request) with the nonce, hashed to a number so that the name keeps upstream's
// <name>-<kind>-<trigger>-<number> shape.
func manualRequestID(owner client.Object, nonce *int64) string {
	var n int64
	if nonce != nil {
		n = *nonce
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d", owner.GetGeneration(), n)
	return strconv.FormatUint(h.Sum64(), 10)
}

// newSnapshot is a snapshot resource of the job; id makes its name unique (the trigger time, or
// a manual request's id).
func newSnapshot(j JobSnapshots, checkpoint bool, trigger flinkv1beta1.SnapshotTriggerType, id string) *flinkv1beta1.FlinkStateSnapshot {
	kind := "savepoint"
	if checkpoint {
		kind = "checkpoint"
	}
	// Upstream's naming; no owner reference, so snapshots outlive the job's resource.
	name := fmt.Sprintf("%s-%s-%s-%s", j.Owner.GetName(), kind, strings.ToLower(string(trigger)), id)
	labels := map[string]string{}
	maps.Copy(labels, j.ShardLabels)
	// The snapshot labels upstream maintains win over a selector naming them.
	maps.Copy(labels, map[string]string{
		LabelSnapshotTrigger: string(trigger), LabelJobReferenceKind: string(j.Kind), LabelJobReferenceName: j.Owner.GetName(),
	})
	snap := &flinkv1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: j.Owner.GetNamespace(), Name: name, Labels: labels},
		Spec:       flinkv1beta1.FlinkStateSnapshotSpec{JobReference: &flinkv1beta1.JobReference{Kind: j.Kind, Name: j.Owner.GetName()}},
	}
	if checkpoint {
		snap.Spec.Checkpoint = &flinkv1beta1.CheckpointSpec{}
	} else {
		dispose := options.DisposeOnDelete.Get(j.Conf)
		// kubernetes.operator.savepoint.format.type, as upstream's triggerSnapshotIfNeeded passes
		// it to createSavepointResource (the snapshot controller takes the savepoint in it).
		snap.Spec.Savepoint = &flinkv1beta1.SavepointSpec{FormatType: flinkv1beta1.SavepointFormatType(SavepointFormat(j.Conf)), DisposeOnDelete: &dispose}
	}
	return snap
}

func createSnapshot(ctx context.Context, c client.Client, rec record.EventRecorder, j JobSnapshots, checkpoint bool, trigger flinkv1beta1.SnapshotTriggerType, id string) error {
	snap := newSnapshot(j, checkpoint, trigger, id)
	if err := c.Create(ctx, snap); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create FlinkStateSnapshot %s: %w", snap.Name, err)
	}
	what := ReasonSavepoint
	if checkpoint {
		what = ReasonCheckpoint
	}
	rec.Eventf(j.Owner, corev1.EventTypeNormal, what, "%s snapshot requested: FlinkStateSnapshot %s", trigger, snap.Name)
	return nil
}

// triggerTime is when a recorded trigger was written (now when unknown).
func triggerTime(ms *int64) time.Time {
	if ms == nil || *ms == 0 {
		return time.Now()
	}
	return time.UnixMilli(*ms)
}

// The labels of FlinkStateSnapshot resources.
const (
	LabelSnapshotType     = "snapshot.type"
	LabelSnapshotState    = "snapshot.state"
	LabelSnapshotTrigger  = "snapshot.trigger-type"
	LabelJobReferenceKind = "job-reference.kind"
	LabelJobReferenceName = "job-reference.name"
)

func SnapshotKind(s *flinkv1beta1.FlinkStateSnapshot) string {
	if s.Spec.Checkpoint != nil {
		return "CHECKPOINT"
	}
	return "SAVEPOINT"
}
