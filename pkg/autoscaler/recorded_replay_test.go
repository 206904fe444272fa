package autoscaler

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestRecordedSeries replays the metric series recorded on real Flink (testdata/recorded-*.json,
// written by flinkmetrics' TestRealFlinkLoadGen with RECORD_AUTOSCALER_SERIES=1: the load
// generator at 10 → 150 → 10 records/s, 4 ms per record in busy-map, every vertex at parallelism
// 1 throughout) and checks the decisions against what the load asks for. The recording is open
// loop: nothing rescaled the job, so each decision is what the autoscaler would ask of a job
// still at parallelism 1.
//
// The series are evaluated with the AVG busy-time aggregator (accumulated busy time per
// subtask). Under the default MAX aggregator the window of a short stabilization interval holds
// Flink's busyTimeMsPerSecond gauge of freshly started tasks, which reads 1000 ms/s and trails
// the load by about a minute, so the idle sink and the source get scaled too (replaying these
// series with MAX and a 15 s stabilization does exactly that); upstream reads the same gauge and
// relies on its 5 minute default stabilization interval to skip it.
func TestRecordedSeries(t *testing.T) {
	const (
		source = VertexID("bfcb2191119800788de23e4ea88417fe")
		busy   = VertexID("c0482d2747ca8145298a230e6c864cea")
		sink   = VertexID("944a180b15f418fe526e0a41072d55d4")
	)
	// busy-map at 150 records/s × 4 ms is 0.6 busy at parallelism 1: above utilization.max
	// 0.45, so it is scaled up to 0.6/0.3 = 2 once the window holds only the high load, and
	// further while the lag built up in the meantime is to be caught up within 30 s.
	wantBusyMap := []int{2, 4}
	for _, version := range []string{"1.20.3", "2.3.0"} {
		t.Run(version, func(t *testing.T) {
			f := loadReplay(t, filepath.Join("testdata", fmt.Sprintf("recorded-%s.json", version)))
			f.FlinkConf["job.autoscaler.stabilization.interval"] = "30 s"
			f.FlinkConf["job.autoscaler.metrics.busy-time.aggregator"] = "AVG"
			f.FlinkConf["job.autoscaler.utilization.target"] = "0.3"
			f.FlinkConf["job.autoscaler.utilization.max"] = "0.45"
			f.FlinkConf["job.autoscaler.utilization.min"] = "0.1"
			f.FlinkConf["job.autoscaler.scale-down.interval"] = "0 s"
			got, reported := replay(t, f)
			if !reported {
				t.Fatal("no ScalingReport")
			}
			if len(got) != len(wantBusyMap) {
				t.Fatalf("%d decisions %v, want busy-map at %v", len(got), got, wantBusyMap)
			}
			jobStart := f.Observations[0].JobStart
			// The schedule's 40 s of low load start when the source first runs, a few seconds
			// after the job; a decision before the high load fills half of the 30 s window would
			// be one taken on the low load or on start-up readings.
			highFilled := jobStart.Add(40*time.Second + 15*time.Second)
			for i, d := range got {
				if d.Overrides[busy] != wantBusyMap[i] {
					t.Errorf("decision %d at +%v: busy-map %d, want %d", i, d.Time.Sub(jobStart), d.Overrides[busy], wantBusyMap[i])
				}
				if d.Overrides[source] != 1 || d.Overrides[sink] != 1 {
					t.Errorf("decision %d at +%v moved a vertex that is never busy: %v", i, d.Time.Sub(jobStart), d.Overrides)
				}
				if d.Time.Before(highFilled) {
					t.Errorf("decision %d at +%v, before the high load filled half the window (+%v)", i, d.Time.Sub(jobStart), highFilled.Sub(jobStart))
				}
			}
		})
	}
}
