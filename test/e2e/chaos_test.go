//go:build e2e

package e2e

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/native"
)

// settleBound is how long a resource may stay in motion once the operator is back (or once the
// last spec change was applied, when that came later). A stuck operator stays stuck past any
// bound; this one leaves room for a JobManager that starts slowly when make test's other lanes
// run four more clusters beside this one (2 minutes was exceeded there once, by a
// savepoint-upgrade round whose JobManager was still starting).
const settleBound = 3 * time.Minute

// TestChaos is the crash-safety chaos test: in each flow (savepoint upgrade, last-state upgrade
// through Kubernetes HA, suspend/resume, manual savepoint) the operator is SIGKILLed at a random
// moment of every round, sometimes the spec changes while no operator runs, the operator is
// started again, and the invariants are checked on what Flink and the disk say, not on our
// status: at most one savepoint per stop (exactly one per manual nonce), a stateful job never
// starts without its state, Flink runs the latest spec applied, and the resource settles within
// two minutes of the operator being back. The deletion flow (chaos_deletion_test.go) deletes a
// resource with a savepoint on deletion around the kills: gone within its bound, the final
// savepoint on disk. Seeded: CHAOS_SEED replays the random choices (kill
// delays, offline changes), CHAOS_ROUNDS sets the rounds per flow (default 2, sized to the CI budget; each run draws a new seed).
func TestChaos(t *testing.T) {
	seed := time.Now().UnixNano()
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		require.NoError(t, err, "CHAOS_SEED")
		seed = v
	}
	rounds := 2
	if s := os.Getenv("CHAOS_ROUNDS"); s != "" {
		v, err := strconv.Atoi(s)
		require.NoError(t, err, "CHAOS_ROUNDS")
		require.Positive(t, v, "CHAOS_ROUNDS")
		rounds = v
	}
	t.Logf("chaos seed %d, %d rounds per flow (replay with CHAOS_SEED=%d CHAOS_ROUNDS=%d)", seed, rounds, seed, rounds)

	flows := []chaosFlow{
		{name: "savepoint-upgrade", upgradeMode: flinkv1beta1.UpgradeModeSavepoint, window: 25 * time.Second, action: toggleParallelism},
		{name: "last-state-upgrade", upgradeMode: flinkv1beta1.UpgradeModeLastState, window: 20 * time.Second, action: toggleParallelism},
		{name: "suspend-resume", upgradeMode: flinkv1beta1.UpgradeModeSavepoint, window: 30 * time.Second, action: suspendThenResume},
		{name: "manual-savepoint", upgradeMode: flinkv1beta1.UpgradeModeSavepoint, window: 5 * time.Second, action: bumpNonce, manual: true},
	}
	for i, f := range flows {
		t.Run(f.name, func(t *testing.T) {
			// Each flow draws from a source of its own, so one flow replays alone with -run.
			c := &chaos{t: t, flow: f, seed: seed, rounds: rounds, rng: rand.New(rand.NewSource(seed + int64(i)))}
			t.Cleanup(func() {
				// A failure between a kill and a restart must not leave the suites after it without operator.
				_ = env.RestartOperator(context.Background())
				if t.Failed() {
					t.Logf("chaos flow %s failed: replay with CHAOS_SEED=%d CHAOS_ROUNDS=%d go test -tags e2e ./test/e2e -run 'TestChaos/%s' -v",
						f.name, seed, rounds, f.name)
				}
			})
			c.run()
		})
	}
	// Deletion always ends (docs/concepts/deletion.md), the operator killed around it.
	t.Run("deletion", func(t *testing.T) {
		c := &chaos{t: t, flow: chaosFlow{name: "deletion", upgradeMode: flinkv1beta1.UpgradeModeSavepoint}, seed: seed, rounds: rounds,
			rng: rand.New(rand.NewSource(seed + int64(len(flows))))}
		t.Cleanup(func() {
			_ = env.RestartOperator(context.Background())
			if t.Failed() {
				t.Logf("chaos flow deletion failed: replay with CHAOS_SEED=%d CHAOS_ROUNDS=%d go test -tags e2e ./test/e2e -run 'TestChaos/deletion' -v", seed, rounds)
			}
		})
		c.runDeletion()
	})
}

type chaosFlow struct {
	name        string
	upgradeMode flinkv1beta1.UpgradeMode
	// window bounds the random kill delay; it covers the whole action, so kills land in every phase.
	window time.Duration
	action func(c *chaos) []chaosStep
	// manual: the round asks for a manual savepoint (exactly one on disk per nonce), no stop.
	manual bool
}

// chaosStep is one spec change of a round, applied once when applies the resource.
type chaosStep struct {
	what  string
	when  func(*flinkv1beta1.FlinkDeployment) bool
	apply func(*flinkv1beta1.FlinkDeployment)
}

func always(*flinkv1beta1.FlinkDeployment) bool { return true }

func toggleParallelism(*chaos) []chaosStep {
	return []chaosStep{{what: "parallelism 1↔2", when: always, apply: func(d *flinkv1beta1.FlinkDeployment) {
		d.Spec.Job.Parallelism = 3 - d.Spec.Job.Parallelism
	}}}
}

func suspendThenResume(*chaos) []chaosStep {
	return []chaosStep{
		{what: "suspend", when: always, apply: func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.State = flinkv1beta1.JobStateSuspended }},
		{what: "resume", when: func(d *flinkv1beta1.FlinkDeployment) bool {
			return d.Status.LifecycleState == flinkv1beta1.LifecycleSuspended && d.Status.ObservedGeneration == d.Generation
		}, apply: func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.State = flinkv1beta1.JobStateRunning }},
	}
}

func bumpNonce(*chaos) []chaosStep {
	return []chaosStep{{what: "savepointTriggerNonce+1", when: always, apply: func(d *flinkv1beta1.FlinkDeployment) {
		d.Spec.Job.SavepointTriggerNonce = ptr(nonce(d) + 1)
	}}}
}

func nonce(d *flinkv1beta1.FlinkDeployment) int64 {
	if d.Spec.Job.SavepointTriggerNonce == nil {
		return 0
	}
	return *d.Spec.Job.SavepointTriggerNonce
}

type chaos struct {
	t      *testing.T
	flow   chaosFlow
	seed   int64
	rounds int
	rng    *rand.Rand
	key    client.ObjectKey
	// savepoints and checkpoints are the local directories the flow's Flink writes to.
	savepoints, checkpoints string
	// logOffsets: how much of each pod log file earlier rounds already scanned.
	logOffsets map[string]int64
	// restores: per log file, the jobs whose restore was logged and whose start not yet.
	restores   map[string]map[string]string
	killPhases map[string]int
}

// fatalf fails the flow with the seed to replay it.
func (c *chaos) fatalf(round int, format string, args ...any) {
	c.t.Helper()
	// The snapshot resources tell which request each savepoint answered.
	for _, s := range listSnapshots(c.t, c.key.Namespace, c.key.Name, "") {
		c.t.Logf("snapshot %s created %s trigger=%s state=%s triggerId=%s path=%s", s.Name, s.CreationTimestamp.Format("15:04:05.000"),
			s.Labels["snapshot.trigger-type"], s.Status.State, s.Status.TriggerID, s.Status.Path)
	}
	// What the cluster says of the flow's pods and what happened to them: a slow JobManager
	// start and a stuck operator look alike from the resource's status alone.
	var pods corev1.PodList
	if err := env.Client.List(context.Background(), &pods, client.InNamespace(c.key.Namespace)); err == nil {
		for _, p := range pods.Items {
			c.t.Logf("pod %s created %s phase=%s deleting=%v conditions=%v", p.Name, p.CreationTimestamp.Format("15:04:05"),
				p.Status.Phase, p.DeletionTimestamp != nil, p.Status.Conditions)
		}
	}
	var events corev1.EventList
	if err := env.Client.List(context.Background(), &events, client.InNamespace(c.key.Namespace)); err == nil {
		sort.Slice(events.Items, func(i, j int) bool { return events.Items[i].LastTimestamp.Before(&events.Items[j].LastTimestamp) })
		for _, e := range events.Items[max(0, len(events.Items)-30):] {
			c.t.Logf("event %s %s %s/%s %s: %s", e.LastTimestamp.Format("15:04:05"), e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	c.t.Fatalf("%s round %d: %s (replay with CHAOS_SEED=%d CHAOS_ROUNDS=%d; operator log %s)",
		c.flow.name, round, fmt.Sprintf(format, args...), c.seed, c.rounds, env.OperatorLog())
}

func (c *chaos) run() {
	t := c.t
	ctx := context.Background()
	ns := "e2e-chaos-" + c.flow.name
	dep := example(t, "examples/checkpoint-ha/checkpoint-ha.yaml", ns)
	dep.Name = "chaos"
	dep.Spec.Job.UpgradeMode = c.flow.upgradeMode
	// State of its own, so the savepoint count on disk is this flow's alone.
	hostPath := "/tmp/flink-" + ns
	dep.Spec.PodTemplate.Spec.Volumes[0].HostPath.Path = hostPath
	local := filepath.Join(env.Dir, "node", "hostpath", hostPath)
	c.savepoints, c.checkpoints = filepath.Join(local, "savepoints"), filepath.Join(local, "checkpoints")
	c.key, c.logOffsets, c.restores, c.killPhases = client.ObjectKeyFromObject(dep), map[string]int64{}, map[string]map[string]string{}, map[string]int{}
	start := time.Now()
	require.NoError(t, env.Client.Create(ctx, dep))
	d := waitFor(t, c.key, "Ready and RUNNING", 3*time.Minute, readyAndRunning)
	allTasksRunning(t, c.key, d.Status.JobStatus.JobID)
	// A stateful job has state to lose only once a checkpoint completed.
	cp := completedCheckpoint(t, c.key, d.Status.JobStatus.JobID)
	require.True(t, strings.HasPrefix(localPath(cp.ExternalPath), c.checkpoints+"/"),
		"checkpoint %s is not under %s: the test reads the wrong directories", cp.ExternalPath, c.checkpoints)
	c.scanJobStarts(0) // the first start restores nothing; only rounds are checked
	logf(t, "%s: deployed in %s", c.flow.name, time.Since(start).Round(time.Second))

	for round := 1; round <= c.rounds; round++ {
		c.round(round)
	}
	logf(t, "%s: %d rounds in %s; operator killed during: %v", c.flow.name, c.rounds, time.Since(start).Round(time.Second), c.killPhases)
	deleteAndWait(t, dep)
}

// jobSnapshot is what Flink says about the running job before a round.
type jobSnapshot struct {
	id        string
	startTime int64
	// newest is the id of the newest checkpoint or savepoint Flink reported for the job.
	newest int64
}

func (c *chaos) round(round int) {
	t := c.t
	ctx := context.Background()
	before := c.runningJob(round)
	if !c.flow.manual {
		// A checkpoint of this incarnation first, so the restore check asks for state newer than
		// what the previous round restored.
		completedCheckpoint(t, c.key, before.id)
		before = c.runningJob(round)
	}
	roundStart := time.Now()
	spBefore := c.savepointDirs(round)

	// The random choices, drawn in a fixed order whatever happens, so a seed replays them.
	// Half the kills land in the first 3 s, where the stop (stop-with-savepoint, cancel, HA
	// cluster deletion) happens; the others anywhere in the window (deploying, submitting, running).
	early := c.rng.Intn(2) == 0
	delay := time.Duration(c.rng.Int63n(int64(3 * time.Second)))
	if late := 3*time.Second + time.Duration(c.rng.Int63n(int64(c.flow.window-3*time.Second))); !early {
		delay = late
	}
	offline := c.rng.Intn(2) == 0
	pause := time.Duration(c.rng.Int63n(int64(3 * time.Second)))
	intervals := []string{"4s", "5s", "6s"}
	pick := c.rng.Intn(len(intervals))

	steps := c.flow.action(c)
	applied, stops := 0, 0
	var killed, restartedAt, lastChange time.Time
	var offlineWhat string
	var offlineTriggered int64 = -1
	killAt := roundStart.Add(delay)
	deadline := roundStart.Add(c.flow.window + 4*time.Minute)
	for applied < len(steps) || killed.IsZero() {
		if time.Now().After(deadline) {
			c.fatalf(round, "the round did not get through its steps (%d of %d applied)", applied, len(steps))
		}
		if killed.IsZero() && !time.Now().Before(killAt) {
			d := c.get()
			phase := fmt.Sprintf("%s/%s/%s", d.Status.LifecycleState, d.Status.JobManagerDeploymentStatus, d.Status.JobStatus.State)
			env.KillOperator()
			killed = time.Now()
			c.killPhases[phase]++
			logf(t, "%s round %d: operator SIGKILLed %s into the round (lifecycle/jm/job %s)", c.flow.name, round, delay.Round(time.Millisecond), phase)
			if offline {
				offlineTriggered = c.newestTriggered()
				// With the webhooks on, the API server refuses writes while the operator is
				// down; the change is made as an install without them would allow it.
				require.NoError(t, env.WithoutWebhooks(ctx, func() { offlineWhat = c.offlineChange(intervals[pick]) }))
				lastChange = time.Now()
				if !c.flow.manual {
					stops++
				}
				logf(t, "%s round %d: %s while no operator runs", c.flow.name, round, offlineWhat)
			}
			time.Sleep(pause) // Flink goes on unwatched for a moment (seeded)
			require.NoError(t, env.RestartOperator(ctx), "restart the operator")
			restartedAt = time.Now()
			continue
		}
		if applied < len(steps) {
			if d := c.get(); steps[applied].when(d) {
				patch(t, c.key, steps[applied].apply)
				lastChange = time.Now()
				logf(t, "%s round %d: %s", c.flow.name, round, steps[applied].what)
				if steps[applied].what != "resume" && !c.flow.manual {
					stops++
				}
				applied++
				continue
			}
		}
		wait := 200 * time.Millisecond
		if applied == len(steps) {
			wait = time.Until(killAt) // the random kill delay itself
		}
		time.Sleep(max(wait, 0))
	}

	// (d) no resource stays in motion more than settleBound after the operator is back (or after
	// the last change, when a step of the round was only applied after the restart).
	from := restartedAt
	if lastChange.After(from) {
		from = lastChange
	}
	// A manual savepoint is at rest once it is on disk: the last nonce honoured by a savepoint
	// Flink triggered after it was set.
	onDisk := func() bool { return true }
	if c.flow.manual {
		onDisk = func() bool {
			fresh := newSavepoints(spBefore, c.savepointDirs(round))
			return len(fresh) > 0 && fresh[len(fresh)-1].id > offlineTriggered
		}
	}
	d := c.waitSettled(round, from.Add(settleBound), onDisk)
	logf(t, "%s round %d: settled %s after the restart", c.flow.name, round, time.Since(restartedAt).Round(time.Second))

	if d.Spec.Job.State == flinkv1beta1.JobStateSuspended {
		c.fatalf(round, "the round ends suspended") // every flow ends its rounds running
	}
	after := c.runningJob(round)
	restarted := after.id != before.id || after.startTime != before.startTime

	// (b) a stateful job never starts without its state: Flink's latest.restored of the running
	// job, at least as new as what Flink had before the round, and no start without a restore in
	// the JobManager logs of the round.
	if restarted {
		stats := c.checkpointStats(round, after.id)
		r := stats.Latest.Restored
		if r == nil {
			c.fatalf(round, "job %s (re)started without restoring anything (Flink's latest.restored is empty)", after.id)
		}
		if r.ID < before.newest {
			c.fatalf(round, "job %s restored checkpoint %d (%s), older than checkpoint %d Flink had before the round",
				after.id, r.ID, r.ExternalPath, before.newest)
		}
		logf(t, "%s round %d: job %s restored %s %d ≥ %d", c.flow.name, round, after.id, kind(r), r.ID, before.newest)
	} else if !c.flow.manual {
		c.fatalf(round, "job %s was not restarted by the round's change", after.id)
	}
	if c.flow.manual && restarted {
		c.fatalf(round, "a manual savepoint restarted the job (%s started %d → %s started %d)", before.id, before.startTime, after.id, after.startTime)
	}
	starts := c.scanJobStarts(round)

	// (c) Flink runs the latest spec applied.
	allTasksRunning(t, c.key, after.id)
	if p := runningParallelism(t, c.key, after.id); p != int(d.Spec.Job.Parallelism) {
		c.fatalf(round, "Flink runs job %s at parallelism %d, the spec says %d", after.id, p, d.Spec.Job.Parallelism)
	}
	want := specInterval(t, d)
	if got := checkpointInterval(t, c.key, after.id); got != want {
		c.fatalf(round, "Flink checkpoints job %s every %d ms, the spec says %d ms", after.id, got, want)
	}

	// (a) at most one savepoint per stop; exactly one per manual nonce.
	fresh := newSavepoints(spBefore, c.savepointDirs(round))
	switch {
	case c.flow.manual && offlineWhat == "":
		if len(fresh) != 1 {
			c.fatalf(round, "one nonce, %d new savepoints on disk: %v", len(fresh), fresh)
		}
	case c.flow.manual:
		// Two nonces: the first may be superseded before it was acted on, but the last one is
		// honoured by a savepoint Flink triggered after it was set.
		if len(fresh) < 1 || len(fresh) > 2 {
			c.fatalf(round, "two nonces, %d new savepoints on disk: %v", len(fresh), fresh)
		}
		if fresh[len(fresh)-1].id <= offlineTriggered {
			c.fatalf(round, "no savepoint triggered after the second nonce (newest checkpoint triggered then: %d): %v", offlineTriggered, fresh)
		}
	default:
		if len(fresh) > stops {
			c.fatalf(round, "%d stops, %d new savepoints on disk: %v", stops, len(fresh), fresh)
		}
		perJob := map[string][]savepointDir{}
		for _, sp := range fresh {
			perJob[sp.job] = append(perJob[sp.job], sp)
		}
		for job, sps := range perJob {
			if len(sps) > 1 {
				c.fatalf(round, "job %s… stopped once, %d savepoints on disk: %v", job, len(sps), sps)
			}
		}
		if c.flow.upgradeMode == flinkv1beta1.UpgradeModeLastState && len(fresh) > 0 {
			c.fatalf(round, "a last-state upgrade through HA took savepoints: %v", fresh)
		}
	}
	logf(t, "%s round %d: done in %s; %d new savepoints %v; %d job starts, each restoring; parallelism %d, interval %d ms",
		c.flow.name, round, time.Since(roundStart).Round(time.Second), len(fresh), fresh, starts, d.Spec.Job.Parallelism, want)
}

// offlineChange changes the spec while no operator runs: another checkpoint interval for the
// upgrade flows (something Flink reports, and another upgrade), another nonce for the manual one.
func (c *chaos) offlineChange(interval string) string {
	if c.flow.manual {
		patch(c.t, c.key, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.SavepointTriggerNonce = ptr(nonce(d) + 1) })
		return "savepointTriggerNonce+1"
	}
	d := c.get()
	if strconv.FormatInt(specInterval(c.t, d)/1000, 10)+"s" == interval {
		interval = map[string]string{"4s": "6s", "5s": "4s", "6s": "5s"}[interval]
	}
	patch(c.t, c.key, func(d *flinkv1beta1.FlinkDeployment) {
		d.Spec.FlinkConfiguration = setConfig(c.t, d.Spec.FlinkConfiguration, "execution.checkpointing.interval", interval)
	})
	return "execution.checkpointing.interval=" + interval
}

func specInterval(t *testing.T, d *flinkv1beta1.FlinkDeployment) int64 {
	flat, err := d.Spec.FlinkConfiguration.Flatten()
	require.NoError(t, err)
	v, err := time.ParseDuration(flat["execution.checkpointing.interval"])
	require.NoError(t, err)
	return v.Milliseconds()
}

func kind(r *flink.CheckpointRef) string {
	if r.IsSavepoint {
		return "savepoint"
	}
	return "checkpoint"
}

func (c *chaos) get() *flinkv1beta1.FlinkDeployment {
	d := &flinkv1beta1.FlinkDeployment{}
	require.NoError(c.t, env.Client.Get(context.Background(), c.key, d))
	return d
}

// waitSettled waits until the resource is at rest for its current generation: Reconciling
// False, reconciliation DEPLOYED, Ready and RUNNING (or SUSPENDED when the spec says so), and
// none of its snapshots pending or in progress.
func (c *chaos) waitSettled(round int, deadline time.Time, onDisk func() bool) *flinkv1beta1.FlinkDeployment {
	for {
		d := c.get()
		if settled(d) && c.snapshotsAtRest() && onDisk() {
			return d
		}
		if time.Now().After(deadline) {
			c.fatalf(round, "still in motion %s after the operator came back: lifecycle=%s reconciliation=%s jm=%s job=%s generation=%d observed=%d error=%s savepoint-on-disk=%v",
				settleBound, d.Status.LifecycleState, d.Status.ReconciliationStatus.State, d.Status.JobManagerDeploymentStatus,
				d.Status.JobStatus.State, d.Generation, d.Status.ObservedGeneration, d.Status.Error, onDisk())
		}
		time.Sleep(time.Second)
	}
}

func settled(d *flinkv1beta1.FlinkDeployment) bool {
	rec := meta.FindStatusCondition(d.Status.Conditions, "Reconciling")
	if rec == nil || rec.Status != "False" || rec.ObservedGeneration != d.Generation || d.Status.ObservedGeneration != d.Generation {
		return false
	}
	if d.Spec.Job.State == flinkv1beta1.JobStateSuspended {
		return d.Status.LifecycleState == flinkv1beta1.LifecycleSuspended && d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed
	}
	return readyAndRunning(d)
}

func (c *chaos) snapshotsAtRest() bool {
	for _, s := range listSnapshots(c.t, c.key.Namespace, c.key.Name, "") {
		if s.Status.State == "" || s.Status.State == flinkv1beta1.SnapshotTriggerPending || s.Status.State == flinkv1beta1.SnapshotInProgress {
			return false
		}
	}
	return true
}

// rest is a client of the flow's JobManager, or nil while it has none.
func (c *chaos) rest() *flink.Client {
	var pods corev1.PodList
	if env.Client.List(context.Background(), &pods, client.InNamespace(c.key.Namespace),
		client.MatchingLabels{native.LabelApp: c.key.Name, native.LabelComponent: native.ComponentJobManager}) != nil {
		return nil
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp == nil && p.Status.PodIP != "" {
			cl, err := flink.New(flink.Options{URL: "http://" + p.Status.PodIP + ":8081", Timeout: 5 * time.Second})
			if err == nil {
				return cl
			}
		}
	}
	return nil
}

// runningJob asks Flink for the one RUNNING job of the flow's cluster and its newest checkpoint.
func (c *chaos) runningJob(round int) jobSnapshot {
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for {
		if cl := c.rest(); cl != nil {
			if jobs, err := cl.JobsOverview(ctx); err == nil {
				var running []flink.JobOverview
				for _, j := range jobs {
					if j.State == flink.JobRunning {
						running = append(running, j)
					}
				}
				if len(running) > 1 {
					c.fatalf(round, "Flink runs %d jobs: %+v", len(running), running)
				}
				if len(running) == 1 {
					stats, err := cl.CheckpointStatistics(ctx, running[0].ID)
					if err == nil {
						s := jobSnapshot{id: running[0].ID, startTime: running[0].StartTime}
						for _, r := range []*flink.CheckpointRef{stats.Latest.Completed, stats.Latest.Savepoint, stats.Latest.Restored} {
							if r != nil {
								s.newest = max(s.newest, r.ID)
							}
						}
						return s
					}
				}
			}
		}
		if time.Now().After(deadline) {
			c.fatalf(round, "Flink reports no running job")
		}
		time.Sleep(time.Second)
	}
}

func (c *chaos) checkpointStats(round int, jobID string) *flink.CheckpointStatistics {
	deadline := time.Now().Add(time.Minute)
	for {
		if cl := c.rest(); cl != nil {
			if stats, err := cl.CheckpointStatistics(context.Background(), jobID); err == nil {
				return stats
			}
		}
		if time.Now().After(deadline) {
			c.fatalf(round, "no checkpoint statistics of job %s", jobID)
		}
		time.Sleep(time.Second)
	}
}

// newestTriggered is the id of the newest checkpoint or savepoint Flink triggered for the
// running job, completed or not (its checkpoint history), or 0 when Flink does not answer: a
// savepoint with a higher id was triggered later.
func (c *chaos) newestTriggered() int64 {
	cl := c.rest()
	if cl == nil {
		return 0
	}
	jobs, err := cl.JobsOverview(context.Background())
	if err != nil {
		return 0
	}
	var newest int64
	for _, j := range jobs {
		if j.State != flink.JobRunning {
			continue
		}
		resp, err := http.Get(cl.URL() + "/jobs/" + j.ID + "/checkpoints")
		if err != nil {
			continue
		}
		var stats struct {
			History []struct {
				ID int64 `json:"id"`
			} `json:"history"`
		}
		if json.NewDecoder(resp.Body).Decode(&stats) == nil {
			for _, h := range stats.History {
				newest = max(newest, h.ID)
			}
		}
		resp.Body.Close()
	}
	return newest
}

// savepointDir is a completed savepoint on disk: Flink names its directory
// savepoint-<first 6 characters of the job id>-<random>, and writes _metadata last.
type savepointDir struct {
	name string
	job  string
	// id is the checkpoint id in the _metadata file.
	id int64
}

// newSavepoints are the savepoints of after that before did not have, oldest first.
func newSavepoints(before, after map[string]savepointDir) []savepointDir {
	var fresh []savepointDir
	for name, sp := range after {
		if _, ok := before[name]; !ok {
			fresh = append(fresh, sp)
		}
	}
	sort.Slice(fresh, func(i, j int) bool { return fresh[i].id < fresh[j].id })
	return fresh
}

func (s savepointDir) String() string { return fmt.Sprintf("%s(id %d)", s.name, s.id) }

func (c *chaos) savepointDirs(round int) map[string]savepointDir {
	entries, err := os.ReadDir(c.savepoints)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(c.t, err)
	out := map[string]savepointDir{}
	for _, e := range entries {
		parts := strings.Split(e.Name(), "-")
		if !e.IsDir() || len(parts) != 3 || parts[0] != "savepoint" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(c.savepoints, e.Name(), "_metadata"))
		if err != nil {
			continue // not completed (or being written)
		}
		// Flink's metadata file: magic number, version, then the checkpoint id (big endian).
		if len(data) < 16 || binary.BigEndian.Uint32(data) != 0x4960672d {
			c.fatalf(round, "%s/_metadata is not Flink checkpoint metadata", e.Name())
		}
		out[e.Name()] = savepointDir{name: e.Name(), job: parts[1], id: int64(binary.BigEndian.Uint64(data[8:16]))}
	}
	return out
}

// Flink 1.20's JobManager log lines that tell a job start from its restore: the job switching
// from CREATED to RUNNING, and, before it, the checkpoint coordinator restoring a completed
// checkpoint ("Restoring job <id> from <type> <n> @ <timestamp> for <id> located at <path>.",
// the type being Checkpoint or a kind of Savepoint). A job with nothing to restore logs no
// such line ("No checkpoint found during restore.").
var (
	jobStartLine   = regexp.MustCompile(`Job .* \(([0-9a-f]{32})\) switched from state CREATED to RUNNING`)
	jobRestoreLine = regexp.MustCompile(`Restoring job ([0-9a-f]{32}) from (.+?) (\d+) @ \d+ for [0-9a-f]{32} located at`)
)

// scanJobStarts reads what the flow's pod logs gained since the last scan and fails on a job
// that started without restoring a checkpoint or savepoint first. It returns the starts seen.
func (c *chaos) scanJobStarts(round int) int {
	files, err := filepath.Glob(filepath.Join(env.Dir, "node", "pods", c.key.Namespace+"_*", "logs", "*.log"))
	require.NoError(c.t, err)
	starts := 0
	for _, path := range files {
		data, err := os.ReadFile(path)
		require.NoError(c.t, err)
		from := c.logOffsets[path]
		if from > int64(len(data)) {
			from = 0 // rolled over
		}
		// Only whole lines: the rest is read by the next scan.
		end := int64(strings.LastIndexByte(string(data), '\n') + 1)
		if end <= from {
			continue
		}
		if c.restores[path] == nil {
			c.restores[path] = map[string]string{}
		}
		restored := c.restores[path]
		for _, line := range strings.Split(string(data[from:end]), "\n") {
			if m := jobRestoreLine.FindStringSubmatch(line); m != nil {
				restored[m[1]] = m[2] + " " + m[3]
			}
			if m := jobStartLine.FindStringSubmatch(line); m != nil {
				if round > 0 {
					starts++
					if restored[m[1]] == "" {
						c.fatalf(round, "job %s started without restoring state: %q in %s", m[1], line, path)
					}
				}
				delete(restored, m[1]) // the next start must restore again
			}
		}
		c.logOffsets[path] = end
	}
	return starts
}
