package benchflink

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

// TestTimelineSpansOfAnUpgrade: a cluster replaced by an upgrade, its events seen out of
// order and with another cluster's and earlier flows' in between, splits into the eight steps,
// each from the step before it; a flow with no old cluster starts with the new Deployment.
func TestTimelineSpansOfAnUpgrade(t *testing.T) {
	cluster := types.NamespacedName{Namespace: "benchflink-1", Name: "run1-job1"}
	other := types.NamespacedName{Namespace: "benchflink-1", Name: "run1-job2"}
	base := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	tl := &timeline{seen: map[string]bool{}}
	see := func(ms int, c types.NamespacedName, kind objectKind, uid types.UID, deleting, running, exited, gone bool) {
		tl.observe(at(ms), c.Namespace, c.Name, kind, uid, deleting, running, exited, gone)
	}
	// Before the flow (t0 = 10 s): the old Deployment, JobManager and TaskManager.
	see(0, cluster, kindDeployment, "dep-old", false, false, false, false)
	see(100, cluster, kindJobManager, "jm-old", false, true, false, false)
	see(200, cluster, kindTaskManager, "tm-old", false, true, false, false)
	see(300, other, kindDeployment, "dep-other", false, false, false, false)
	t0 := at(10_000)
	see(12_000, cluster, kindDeployment, "dep-old", true, false, false, false)
	see(12_500, cluster, kindTaskManager, "tm-old", true, true, false, false)
	see(12_400, cluster, kindJobManager, "jm-old", true, true, false, false)
	see(12_600, other, kindDeployment, "dep-other", true, false, false, false) // another cluster's
	see(14_000, cluster, kindJobManager, "jm-old", true, false, true, false)
	see(14_300, cluster, kindTaskManager, "tm-old", true, false, true, false)
	see(14_400, cluster, kindJobManager, "jm-old", true, false, true, true)
	see(14_450, cluster, kindTaskManager, "tm-old", true, false, true, true)
	see(15_000, cluster, kindDeployment, "dep-old", true, false, false, true)
	see(15_200, cluster, kindDeployment, "dep-new", false, false, false, false)
	see(15_300, cluster, kindJobManager, "jm-new", false, false, false, false)
	see(16_000, cluster, kindJobManager, "jm-new", false, true, false, false)

	spans := tl.spans(cluster, t0)
	want := []Span{
		{SpanOperatorStop, Seconds(2000 * time.Millisecond)},
		{SpanCascade, Seconds(500 * time.Millisecond)}, // the last pod's deletion
		{SpanFlinkShutdown, Seconds(1800 * time.Millisecond)},
		{SpanPodsGone, Seconds(150 * time.Millisecond)},
		{SpanDeploymentGone, Seconds(550 * time.Millisecond)},
		{SpanOperatorStart, Seconds(200 * time.Millisecond)},
		{SpanControllers, Seconds(100 * time.Millisecond)},
		{SpanSchedulerAndNode, Seconds(700 * time.Millisecond)},
	}
	require.Equal(t, want, spans)

	// The next flow of the same cluster (t0 = 20 s): what happened before it is old; nothing
	// has happened since.
	require.Empty(t, tl.spans(cluster, at(20_000)))
	// A flow that only creates (the other cluster's objects existed, so a flow from 0 has none).
	created := &timeline{seen: map[string]bool{}}
	created.events = []event{
		{at: at(1_000), cluster: cluster, kind: kindDeployment, uid: "d", step: stepCreated},
		{at: at(1_100), cluster: cluster, kind: kindJobManager, uid: "j", step: stepCreated},
		{at: at(2_000), cluster: cluster, kind: kindJobManager, uid: "j", step: stepRunning},
	}
	require.Equal(t, []Span{
		{SpanOperatorStart, Seconds(1000 * time.Millisecond)},
		{SpanControllers, Seconds(100 * time.Millisecond)},
		{SpanSchedulerAndNode, Seconds(900 * time.Millisecond)},
	}, created.spans(cluster, at(0)))
}

// TestMedianSpans: each step's median is over the samples that went through it, the steps in
// the order they first appear.
func TestMedianSpans(t *testing.T) {
	s := func(d ...float64) Sample {
		var sp []Span
		names := []string{SpanOperatorStop, SpanCascade, SpanOperatorStart}
		for i, v := range d {
			if v >= 0 {
				sp = append(sp, Span{Name: names[i], Duration: Seconds(time.Duration(v * float64(time.Second)))})
			}
		}
		return Sample{Spans: sp}
	}
	got := medianSpans([]Sample{s(1, 2, 3), s(-1, 4, 5), s(3, -1, 1)})
	require.Equal(t, []Span{
		{SpanOperatorStop, Seconds(2 * time.Second)},
		{SpanCascade, Seconds(3 * time.Second)},
		{SpanOperatorStart, Seconds(3 * time.Second)},
	}, got)
}
