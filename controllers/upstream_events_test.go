package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/test/wait"
)

// since are the events recorded after the first n.
func (r *recordedEvents) since(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events[n:]...)
}

func (r *recordedEvents) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// TestUpstreamEvents: for each action, the operator's events carry
// upstream's reasons and messages (as the Apache operator wrote them in the capture of
// status-samples/s1-laststate: "UPGRADE change(s) detected (Diff: FlinkDeploymentSpec[job.
// parallelism : 1 -> 2, ...]), starting reconciliation.", "Suspending existing deployment."),
// where tools and upstream's e2e tests match on them.
func TestUpstreamEvents(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ns, _, k, events := newScenario(t, "upstream-events")
	d := stableDeployment(t, c, k, fixtures.NewDeployment(t, ns, "job"))

	type event struct{ reason, message string } // message: the whole message, or its start when it ends in "…"
	steps := []struct {
		action string
		change func(*flinkv1beta1.FlinkDeployment)
		done   func(t *testing.T) *flinkv1beta1.FlinkDeployment
		want   []event
		not    []string
	}{
		{action: "upgrade", change: func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Parallelism = 4 },
			done: func(t *testing.T) *flinkv1beta1.FlinkDeployment {
				k.collect(ns, "job")
				d := redeployed(t, c, k, ns, "job", d.Status.JobStatus.JobID)
				k.run(ns, "job", d.Status.JobStatus.JobID)
				return waitFor(t, c, ns, "job", "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
			},
			want: []event{
				{reconciler.ReasonSpecChanged, "UPGRADE change(s) detected (Diff: FlinkDeploymentSpec[job.parallelism : 2 -> 4]), starting reconciliation."},
				{reconciler.ReasonSuspended, "Suspending existing deployment."},
				{reconciler.ReasonSubmit, "Starting deployment…"},
			}},
		{action: "suspend", change: func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.State = flinkv1beta1.JobStateSuspended },
			done: func(t *testing.T) *flinkv1beta1.FlinkDeployment {
				k.collect(ns, "job")
				return waitFor(t, c, ns, "job", "SUSPENDED", lifecycleIs(flinkv1beta1.LifecycleSuspended))
			},
			want: []event{
				{reconciler.ReasonSpecChanged, "UPGRADE change(s) detected (Diff: FlinkDeploymentSpec[job.state : running -> suspended]), starting reconciliation."},
				{reconciler.ReasonSuspended, "Suspending existing deployment."},
			},
			not: []string{reconciler.ReasonSubmit}},
		{action: "resume", change: func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.State = flinkv1beta1.JobStateRunning },
			done: func(t *testing.T) *flinkv1beta1.FlinkDeployment {
				d := waitFor(t, c, ns, "job", "redeployed", func(d *flinkv1beta1.FlinkDeployment) bool {
					jm := k.jobManager(ns, "job")
					return d.Status.ReconciliationStatus.State == flinkv1beta1.ReconciliationDeployed && jm != nil && jm.DeletionTimestamp.IsZero()
				})
				k.run(ns, "job", d.Status.JobStatus.JobID)
				return waitFor(t, c, ns, "job", "STABLE", lifecycleIs(flinkv1beta1.LifecycleStable))
			},
			want: []event{
				{reconciler.ReasonSpecChanged, "UPGRADE change(s) detected (Diff: FlinkDeploymentSpec[job.state : suspended -> running]), starting reconciliation."},
				{reconciler.ReasonSubmit, "Starting deployment…"},
			},
			not: []string{reconciler.ReasonSuspended}, // nothing runs: nothing is stopped
		},
	}
	for _, step := range steps {
		before := events.len()
		update(t, c, ns, "job", step.change)
		d = step.done(t)
		for _, want := range step.want {
			line := "Normal " + want.reason + " " + want.message
			if prefix, cut := strings.CutSuffix(line, "…"); cut {
				line = prefix
			}
			wait.For(t, 10*time.Second, fmt.Sprintf("%s: no event %q among %q", step.action, line, events.since(before)), func() bool {
				for _, e := range events.since(before) {
					if e == line || (strings.HasSuffix(want.message, "…") && strings.HasPrefix(e, line)) {
						return true
					}
				}
				return false
			})
		}
		for _, e := range events.since(before) {
			for _, reason := range step.not {
				assert.NotContains(t, e, " "+reason+" ", "%s: unexpected event", step.action)
			}
			if strings.Contains(e, " "+reconciler.ReasonSuspended+" ") {
				assert.Equal(t, "Normal Suspended Suspending existing deployment.", e, step.action)
			}
		}
	}
}
