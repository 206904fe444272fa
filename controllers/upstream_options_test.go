package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/wait"
)

// count is the number of events containing substr.
func (r *recordedEvents) count(substr string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if strings.Contains(e, substr) {
			n++
		}
	}
	return n
}

// TestUnsupportedOptionEvents: an Apache operator option with no effect
// here is recorded on the resource as a Warning event, once per generation of the spec.
func TestUnsupportedOptionEvents(t *testing.T) {
	t.Parallel()
	c := testEnv(t).Client
	ns, _, k, events := newScenario(t, "unsupported-option")
	dep := haDeployment(t, ns, "job", map[string]string{"kubernetes.operator.observer.rest-ready.delay": "30 s"})
	dep.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeSavepoint
	d := stableDeployment(t, c, k, dep)
	const want = "Warning UnsupportedOption spec.flinkConfiguration.kubernetes.operator.observer.rest-ready.delay (an Apache operator option) is not honoured by this operator and is ignored"
	events.seen(t, want)

	update(t, c, ns, "job", func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.Parallelism = 4 })
	k.collect(ns, "job")
	d = redeployed(t, c, k, ns, "job", d.Status.JobStatus.JobID)
	k.run(ns, "job", d.Status.JobStatus.JobID)
	wait.For(t, 10*time.Second, fmt.Sprintf("one event per generation, not per reconcile: %d", events.count(want)), func() bool { return events.count(want) == 2 })
	waitFor(t, c, ns, "job", "STABLE again", lifecycleIs(flinkv1beta1.LifecycleStable))
	assert.Equal(t, 2, events.count(want), "no more events for a generation already reported")
}
