package kubectlflink

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/jobs"
)

// errSnapshotFailed marks a savepoint that ended without a path; the command exits non-zero.
var errSnapshotFailed = errors.New("savepoint failed")

func (p *plugin) savepointCommand() *cobra.Command {
	var (
		kind            string
		waitDone        bool
		timeout         time.Duration
		disposeOnDelete bool
	)
	cmd := &cobra.Command{
		Use:   "savepoint NAME",
		Short: "Take a savepoint of the job: a FlinkStateSnapshot (upstream's way since 1.10); --wait prints its path",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, t, err := p.connectTo(args[0], kind)
			if err != nil {
				return err
			}
			snap, err := requestSavepoint(cmd.Context(), c.Client, t, disposeOnDelete, p.now())
			if err != nil {
				return err
			}
			fmt.Fprintf(p.out(), "flinkstatesnapshot %s/%s created for %s\n", snap.Namespace, snap.Name, t)
			if !waitDone {
				_, err := fmt.Fprintf(p.out(), "follow it with: kubectl -n %s get flinkstatesnapshot %s -w\n", snap.Namespace, snap.Name)
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			done, err := awaitSnapshot(ctx, c.Client, client.ObjectKeyFromObject(snap), p.poll)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(p.out(), done.Status.Path)
			return err
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "kind of NAME: deployment (default) or sessionjob")
	cmd.Flags().BoolVar(&waitDone, "wait", false, "wait until the savepoint is taken and print its path")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "how long --wait waits")
	cmd.Flags().BoolVar(&disposeOnDelete, "dispose-on-delete", false, "dispose of the savepoint's data when the FlinkStateSnapshot is deleted")
	return cmd
}

// requestSavepoint creates a manual savepoint FlinkStateSnapshot of the target's job, as the
// operator names and labels the ones a savepointTriggerNonce asks for. It carries the job
// resource's labels: an operator sharded by a label selector then takes the snapshot in the same
// shard as its job.
func requestSavepoint(ctx context.Context, c client.Client, t Target, disposeOnDelete bool, now time.Time) (*flinkv1beta1.FlinkStateSnapshot, error) {
	if t.Kind != KindDeployment && t.Kind != KindSessionJob {
		return nil, fmt.Errorf("%s: savepoints are taken of FlinkDeployments and FlinkSessionJobs", t)
	}
	obj, err := getTyped(ctx, c, t)
	if err != nil {
		return nil, err
	}
	if d, ok := obj.(*flinkv1beta1.FlinkDeployment); ok && d.Spec.Job == nil {
		return nil, fmt.Errorf("%s is a session cluster: take savepoints of its FlinkSessionJobs (--kind sessionjob)", t)
	}
	labels := maps.Clone(obj.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, map[string]string{
		jobs.LabelSnapshotTrigger:  string(flinkv1beta1.SnapshotTriggerManual),
		jobs.LabelJobReferenceKind: string(t.Kind),
		jobs.LabelJobReferenceName: t.Name,
	})
	snap := &flinkv1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: t.Namespace,
			Name:      t.Name + "-savepoint-manual-" + strconv.FormatInt(now.UnixMilli(), 10),
			Labels:    labels,
		},
		Spec: flinkv1beta1.FlinkStateSnapshotSpec{
			JobReference: &flinkv1beta1.JobReference{Kind: flinkv1beta1.JobKind(t.Kind), Name: t.Name},
			Savepoint:    &flinkv1beta1.SavepointSpec{DisposeOnDelete: &disposeOnDelete},
		},
	}
	if err := c.Create(ctx, snap); err != nil {
		return nil, fmt.Errorf("create a FlinkStateSnapshot for %s: %w", t, err)
	}
	return snap, nil
}

// awaitSnapshot polls the snapshot until it is COMPLETED (returned), FAILED or ABANDONED (an
// error with Flink's or the operator's reason), or ctx ends.
func awaitSnapshot(ctx context.Context, c client.Client, key client.ObjectKey, every time.Duration) (*flinkv1beta1.FlinkStateSnapshot, error) {
	snap := &flinkv1beta1.FlinkStateSnapshot{}
	var failed error
	err := wait.PollUntilContextCancel(ctx, every, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, snap); err != nil {
			return false, fmt.Errorf("read flinkstatesnapshot %s: %w", key, err)
		}
		switch snap.Status.State {
		case flinkv1beta1.SnapshotCompleted:
			return true, nil
		case flinkv1beta1.SnapshotFailed, flinkv1beta1.SnapshotAbandoned:
			failed = fmt.Errorf("%w: flinkstatesnapshot %s is %s: %s", errSnapshotFailed, key, snap.Status.State,
				orDash(flinkv1beta1.ErrorMessage(snap.Status.Error)))
			return true, nil
		}
		return false, nil
	})
	switch {
	case failed != nil:
		return nil, failed
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("flinkstatesnapshot %s is still %s after the --timeout (failures so far: %d, last error: %s); "+
			"it goes on: look at it with kubectl flink status --kind snapshot %s", key, orDash(string(snap.Status.State)), snap.Status.Failures,
			orDash(flinkv1beta1.ErrorMessage(snap.Status.Error)), key.Name)
	case err != nil:
		return nil, err
	}
	return snap, nil
}
