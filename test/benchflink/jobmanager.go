package benchflink

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/native"
)

// jobManager is one JobManager pod of a cluster, as the benchmark found it running.
type jobManager struct {
	namespace, name string
	pod             types.UID
	// started is when its Flink process started (processStart): where Flink's own part of a
	// start begins. Everything before it (the API server, the operator, the controller
	// manager's Deployment and ReplicaSet, the scheduler, the node agent) is not Flink's.
	started time.Time
	rest    *flink.Client
}

// newJobManager waits until the cluster has a JobManager pod other than the one of UID old
// ("" for none) whose Flink process runs, and reads that process's start while it lives.
func (b *bench) newJobManager(ctx context.Context, key client.ObjectKey, old types.UID) (*jobManager, error) {
	var jm *jobManager
	err := poll(ctx, startTimeout, key.Name+": a new JobManager process", func() (bool, error) {
		var pods corev1.PodList
		if err := b.env.Client.List(ctx, &pods, client.InNamespace(key.Namespace),
			client.MatchingLabels{native.LabelApp: key.Name, native.LabelComponent: native.ComponentJobManager}); err != nil {
			return false, fmt.Errorf("list JobManager pods: %w", err)
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			pid, ok := runningPID(p)
			if p.UID == old || p.DeletionTimestamp != nil || p.Status.PodIP == "" || !ok {
				continue
			}
			started, err := processStart(pid)
			if err != nil {
				return false, fmt.Errorf("pod %s: %w", p.Name, err)
			}
			rest, err := flink.New(flink.Options{URL: "http://" + p.Status.PodIP + ":8081", Timeout: 5 * time.Second})
			if err != nil {
				return false, fmt.Errorf("pod %s: %w", p.Name, err)
			}
			jm = &jobManager{namespace: p.Namespace, name: p.Name, pod: p.UID, started: started, rest: rest}
			return true, nil
		}
		return false, nil
	})
	return jm, err
}

// runningPID is the process of the pod's Flink container: the node agent names it in the
// container ID (nodeagent://<pid>) and runs the JVM itself as that process.
func runningPID(p *corev1.Pod) (int, bool) {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name != native.MainContainer || c.State.Running == nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimPrefix(c.ContainerID, "nodeagent://"))
		return pid, err == nil && pid > 0
	}
	return 0, false
}

// jobRunning waits until the JobManager runs a job (jobID, or its only job when "") that
// Flink reports RUNNING since after (a job id kept through HA names the old run too), and
// returns the job as Flink's REST describes it, its timestamps included.
func (jm *jobManager) jobRunning(ctx context.Context, jobID string, after time.Time) (*flink.JobDetails, error) {
	var details *flink.JobDetails
	err := poll(ctx, startTimeout, "job RUNNING on the new JobManager", func() (bool, error) {
		id := jobID
		if id == "" {
			jobs, err := jm.rest.JobsOverview(ctx)
			if err != nil || len(jobs) == 0 {
				return false, err
			}
			id = jobs[0].ID
		}
		d, err := jm.rest.JobDetails(ctx, id)
		if err != nil {
			return false, err
		}
		details = d
		return d.State == flink.JobRunning && d.Timestamps[flink.JobRunning] >= after.UnixMilli(), nil
	})
	return details, err
}

// allTasksRunning waits until every task of the job runs: a savepoint triggered earlier fails,
// so the flows start from there (outside what they time).
func (jm *jobManager) allTasksRunning(ctx context.Context, jobID string) error {
	return poll(ctx, startTimeout, "job "+jobID+": all tasks running", func() (bool, error) {
		d, err := jm.rest.JobDetails(ctx, jobID)
		return err == nil && d.AllTasksRunning(), err
	})
}

// completedCheckpoint waits until the job has completed a checkpoint, which a last-state
// upgrade restores (otherwise it would restore nothing and time less than a real one).
func (jm *jobManager) completedCheckpoint(ctx context.Context, jobID string) error {
	return poll(ctx, startTimeout, "job "+jobID+": a completed checkpoint", func() (bool, error) {
		s, err := jm.rest.CheckpointStatistics(ctx, jobID)
		return err == nil && s.Latest.Completed != nil, err
	})
}

// restoredFrom is the checkpoint or savepoint Flink says the job restored from
// (GET /jobs/<id>/checkpoints, latest.restored); Flink reports it shortly after RUNNING.
func (jm *jobManager) restoredFrom(ctx context.Context, jobID string) (*flink.CheckpointRef, error) {
	var restored *flink.CheckpointRef
	err := poll(ctx, time.Minute, "job "+jobID+": Flink reports a restore", func() (bool, error) {
		s, err := jm.rest.CheckpointStatistics(ctx, jobID)
		if err != nil {
			return false, err
		}
		restored = s.Latest.Restored
		return restored != nil, nil
	})
	return restored, err
}
