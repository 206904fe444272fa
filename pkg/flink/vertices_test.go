package flink

import (
	"context"
	"io"
	"math"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	testSource = "bc764cd8ddf7a0cff126f51c16239658"
	testMap    = "0a448493b4782967b150582570326227"
)

// Flink's Jackson writes a NaN or infinite double as a string; one such subtask aggregate
// must not fail the whole answer (busy time is NaN where a task cannot measure it).
func TestSubtaskMetricsReadNaNAndInfinityStrings(t *testing.T) {
	c := fakeFlink(t, "1.20.3", func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/jobs/"+testJob+"/vertices/"+testMap+"/subtasks/metrics", r.URL.Path)
		assert.Equal(t, "busyTimeMsPerSecond,numRecordsInPerSecond", r.URL.Query().Get("get"))
		assert.Equal(t, "max,sum", r.URL.Query().Get("agg"))
		_, _ = io.WriteString(w, `[{"id":"busyTimeMsPerSecond","max":"NaN","sum":"Infinity"},`+
			`{"id":"numRecordsInPerSecond","max":"-Infinity","sum":"12.5","min":3}]`)
	})
	got, err := c.SubtaskMetrics(context.Background(), testJob, testMap,
		[]string{"busyTimeMsPerSecond", "numRecordsInPerSecond"}, []string{AggMax, AggSum})
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.True(t, math.IsNaN(*got[0].Max))
	assert.True(t, math.IsInf(*got[0].Sum, 1))
	assert.Nil(t, got[0].Min, "an aggregate not sent stays nil")
	assert.True(t, math.IsInf(*got[1].Max, -1))
	assert.Equal(t, 12.5, *got[1].Sum)
	assert.Equal(t, 3.0, *got[1].Min)
}

func TestSubtaskMetricsRejectAWordForANumber(t *testing.T) {
	c := fakeFlink(t, "1.20.3", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `[{"id":"busyTimeMsPerSecond","max":"lots"}]`)
	})
	_, err := c.SubtaskMetrics(context.Background(), testJob, testMap, []string{"busyTimeMsPerSecond"}, []string{AggMax})
	require.Error(t, err)
	assert.Equal(t, KindMalformed, KindOf(err), "%v", err)
	var fe *Error
	require.ErrorAs(t, err, &fe)
	assert.Contains(t, fe.Err.Error(), `"lots" is not a number`)
}

const detailsWithPlan = `{"jid":"` + testJob + `","name":"loadgen","state":"RUNNING",
 "vertices":[
  {"id":"` + testSource + `","name":"Source: loadgen-source","parallelism":1,"maxParallelism":128,"status":"RUNNING",
   "metrics":{"read-records":0,"write-records":900,"read-records-complete":true,"write-records-complete":true,"accumulated-busy-time":"NaN"}},
  {"id":"` + testMap + `","name":"busy-map","parallelism":2,"maxParallelism":128,"status":"RUNNING",
   "metrics":{"read-records":880,"write-records":880,"read-records-complete":true,"write-records-complete":false,"accumulated-busy-time":1234.5}}],
 "plan":{"jid":"` + testJob + `","name":"loadgen","type":"STREAMING","nodes":[
  {"id":"` + testMap + `","parallelism":2,"operator":"","description":"busy-map","inputs":[
   {"num":0,"id":"` + testSource + `","ship_strategy":"HASH","exchange":"pipelined_bounded"}]},
  {"id":"` + testSource + `","parallelism":1,"operator":"","description":"Source: loadgen-source"}]}}`

func TestJobDetailsCarryVertexCountersAndPlan(t *testing.T) {
	c := fakeFlink(t, "1.20.3", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, detailsWithPlan)
	})
	d, err := c.JobDetails(context.Background(), testJob)
	require.NoError(t, err, "a NaN accumulated busy time does not fail the job details")
	require.Len(t, d.Vertices, 2)
	require.NotNil(t, d.Vertices[0].Metrics)
	assert.True(t, math.IsNaN(float64(d.Vertices[0].Metrics.AccumulatedBusyTimeMs)))
	assert.Equal(t, int64(900), d.Vertices[0].Metrics.WriteRecords)
	m := d.Vertices[1].Metrics
	assert.Equal(t, VertexIOMetrics{ReadRecords: 880, WriteRecords: 880, ReadRecordsComplete: true, AccumulatedBusyTimeMs: 1234.5}, *m)

	plan, err := d.JobPlan()
	require.NoError(t, err)
	require.Len(t, plan.Nodes, 2)
	assert.Equal(t, []JobPlanInput{{Num: 0, ID: testSource, ShipStrategy: ShipHash, Exchange: "pipelined_bounded"}}, plan.Nodes[0].Inputs)
	assert.Empty(t, plan.Nodes[1].Inputs)
}

func TestJobPlanEndpoint(t *testing.T) {
	c := fakeFlink(t, "2.3.0", func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/jobs/"+testJob+"/plan", r.URL.Path)
		_, _ = io.WriteString(w, `{"plan":{"jid":"`+testJob+`","name":"j","nodes":[{"id":"`+testSource+`","parallelism":3,"description":"src"}]}}`)
	})
	plan, err := c.JobPlan(context.Background(), testJob)
	require.NoError(t, err)
	assert.Equal(t, []JobPlanNode{{ID: testSource, Parallelism: 3, Description: "src"}}, plan.Nodes)
}

// Vertex ids end up in metric paths and in pipeline.jobvertex-parallelism-overrides: a plan
// from a hostile JobManager with other ids is refused.
func TestJobPlanRefusesIDsThatAreNotFlinkIDs(t *testing.T) {
	for name, plan := range map[string]string{
		"node id":  `{"nodes":[{"id":"../../jobs","parallelism":1}]}`,
		"input id": `{"nodes":[{"id":"` + testMap + `","parallelism":1,"inputs":[{"id":"` + testMap[:31] + `,x:9","ship_strategy":"HASH"}]}]}`,
		"no plan":  `null`,
		"not JSON": `"a string"`,
	} {
		t.Run(name, func(t *testing.T) {
			d := &JobDetails{ID: testJob, Plan: []byte(plan)}
			_, err := d.JobPlan()
			require.Error(t, err)
			assert.Equal(t, KindMalformed, KindOf(err), "%v", err)
		})
	}
	c := fakeFlink(t, "1.20.3", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"plan":{"nodes":[{"id":"zz","parallelism":1}]}}`)
	})
	_, err := c.JobPlan(context.Background(), testJob)
	assert.Equal(t, KindMalformed, KindOf(err), "%v", err)
}
