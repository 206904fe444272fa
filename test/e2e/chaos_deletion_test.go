//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// deletionCleanupTimeout is the flow's kubernetes.operator.resource.cleanup.timeout: the final
// savepoint is given up after it, the JobManager's pods waited for at most as long again, so a
// resource is gone within twice this after its deletion started (docs/concepts/deletion.md).
const deletionCleanupTimeout = 2 * time.Minute

// runDeletion is TestChaos's deletion flow: every round deploys a stateful job with
// kubernetes.operator.job.savepoint-on-deletion, waits for a completed checkpoint, deletes the
// FlinkDeployment and SIGKILLs the operator one or two times at seeded random moments around the
// deletion (from 2 s before it, so the restarted operator may be the first to see it, to 3 s
// after, while the stop-with-savepoint runs). The invariants, from the API server and the disk:
// the resource is gone within its bound counted from its deletionTimestamp; Flink wrote exactly
// one savepoint of the job, the final one (a killed operator is no reason to give it up, nor to
// take it twice); and no Warning NoFinalSavepoint was recorded.
func (c *chaos) runDeletion() {
	t := c.t
	ctx := context.Background()
	ns := "e2e-chaos-" + c.flow.name
	hostPath := "/tmp/flink-" + ns
	local := filepath.Join(env.Dir, "node", "hostpath", hostPath)
	c.savepoints, c.checkpoints = filepath.Join(local, "savepoints"), filepath.Join(local, "checkpoints")
	c.logOffsets, c.restores, c.killPhases = map[string]int64{}, map[string]map[string]string{}, map[string]int{}

	for round := 1; round <= c.rounds; round++ {
		// The random choices, drawn in a fixed order whatever happens, so a seed replays them.
		kills := 1 + c.rng.Intn(2)
		var delays []time.Duration
		for range kills {
			delays = append(delays, time.Duration(c.rng.Int63n(int64(5*time.Second)))-2*time.Second)
		}
		pause := time.Duration(c.rng.Int63n(int64(3 * time.Second)))

		// A name of its own each round: a job of the same id would find the last round's
		// checkpoints in its directory.
		dep := example(t, "examples/checkpoint-ha/checkpoint-ha.yaml", ns)
		dep.Name = fmt.Sprintf("chaos-delete-%d", round)
		dep.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeSavepoint
		dep.Spec.PodTemplate.Spec.Volumes[0].HostPath.Path = hostPath
		dep.Spec.FlinkConfiguration = setConfig(t, dep.Spec.FlinkConfiguration, "kubernetes.operator.job.savepoint-on-deletion", "true")
		dep.Spec.FlinkConfiguration = setConfig(t, dep.Spec.FlinkConfiguration, "kubernetes.operator.resource.cleanup.timeout", fmt.Sprintf("%d s", int(deletionCleanupTimeout.Seconds())))
		c.key = client.ObjectKeyFromObject(dep)
		require.NoError(t, env.Client.Create(ctx, dep))
		d := waitFor(t, c.key, "Ready and RUNNING", 3*time.Minute, readyAndRunning)
		jobID := d.Status.JobStatus.JobID
		allTasksRunning(t, c.key, jobID)
		completedCheckpoint(t, c.key, jobID) // state to keep
		spBefore := c.savepointDirs(round)

		// The deletion happens 2 s from now, the first kill at 2 s plus its delay (so before the
		// deletion when the delay is negative); a second kill at its delay plus 2 s after the
		// operator is back.
		deleteAt := time.Now().Add(2 * time.Second)
		killAt := deleteAt.Add(delays[0])
		deleted := false
		var deleting time.Time // the deletionTimestamp, as the API server wrote it
		del := func(what string) {
			require.NoError(t, env.Client.Delete(ctx, d))
			deleted = true
			cur := &flinkv1beta1.FlinkDeployment{}
			if err := env.Client.Get(ctx, c.key, cur); err == nil && cur.DeletionTimestamp != nil {
				deleting = cur.DeletionTimestamp.Time
			} else {
				deleting = time.Now()
			}
			logf(t, "%s round %d: %s", c.flow.name, round, what)
		}
		for i := range delays {
			if !deleted && !killAt.Before(deleteAt) {
				time.Sleep(max(time.Until(deleteAt), 0))
				del("deleted")
			}
			time.Sleep(max(time.Until(killAt), 0))
			phase := "gone"
			cur := &flinkv1beta1.FlinkDeployment{}
			if err := env.Client.Get(ctx, c.key, cur); err == nil {
				phase = fmt.Sprintf("%s/%s/%s", cur.Status.LifecycleState, cur.Status.JobManagerDeploymentStatus, cur.Status.JobStatus.State)
			}
			env.KillOperator()
			c.killPhases[phase]++
			logf(t, "%s round %d: operator SIGKILLed (kill %d of %d; lifecycle/jm/job %s)", c.flow.name, round, i+1, kills, phase)
			if !deleted {
				// Deleted while no operator runs: the restarted one is the first to see it.
				del("deleted while no operator runs")
			}
			time.Sleep(pause)
			require.NoError(t, env.RestartOperator(ctx), "restart the operator")
			if i+1 < len(delays) {
				killAt = time.Now().Add(delays[i+1] + 2*time.Second)
			}
		}

		// Gone within the bound, counted from the deletionTimestamp the API server wrote.
		bound := 2*deletionCleanupTimeout + 30*time.Second // plus the restart and a loaded machine's reconcile
		deadline := time.Now().Add(bound + time.Minute)
		for {
			cur := &flinkv1beta1.FlinkDeployment{}
			err := env.Client.Get(ctx, c.key, cur)
			if apierrors.IsNotFound(err) {
				break
			}
			require.NoError(t, err)
			if time.Now().After(deadline) {
				c.fatalf(round, "still there %s after its deletion started (lifecycle %s, error %s)", time.Since(deleting).Round(time.Second),
					cur.Status.LifecycleState, cur.Status.Error)
			}
			time.Sleep(500 * time.Millisecond)
		}
		took := time.Since(deleting)
		if took > bound {
			c.fatalf(round, "gone %s after its deletion started, past the bound %s", took.Round(time.Second), bound)
		}

		// Exactly one new savepoint of the job on disk: the final one.
		var fresh []savepointDir
		for _, sp := range newSavepoints(spBefore, c.savepointDirs(round)) {
			if strings.HasPrefix(jobID, sp.job) {
				fresh = append(fresh, sp)
			}
		}
		if len(fresh) != 1 {
			c.fatalf(round, "deleted with savepoint-on-deletion: %d new savepoints of job %s on disk, want 1: %v", len(fresh), jobID, fresh)
		}
		var events corev1.EventList
		require.NoError(t, env.Client.List(ctx, &events, client.InNamespace(ns)))
		for _, e := range events.Items {
			if e.InvolvedObject.Name == c.key.Name && e.Reason == "NoFinalSavepoint" {
				c.fatalf(round, "the final savepoint was given up: %s", e.Message)
			}
		}
		logf(t, "%s round %d: gone %s after its deletion started; final savepoint %v", c.flow.name, round, took.Round(time.Second), fresh[0])
	}
	logf(t, "%s: %d rounds; operator killed during: %v", c.flow.name, c.rounds, c.killPhases)
}
