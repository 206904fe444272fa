package controllers

import (
	"context"
	"errors"

	"github.com/flink-operator/flink-operator/pkg/autoscaler"
	"github.com/flink-operator/flink-operator/pkg/flink"
)

// defaultMetricsSource reads a job's metrics from its JobManager's REST API.
func defaultMetricsSource(*flink.Client) autoscaler.MetricsSource { return noMetrics{} }

// noMetrics is the source until REST collection is wired in.
type noMetrics struct{}

var errNoMetrics = errors.New("metric collection from the JobManager is not available")

func (noMetrics) Topology(context.Context, string) (autoscaler.Topology, error) {
	return autoscaler.Topology{}, errNoMetrics
}

func (noMetrics) Sample(context.Context, string, autoscaler.Topology) (autoscaler.Sample, error) {
	return autoscaler.Sample{}, errNoMetrics
}
