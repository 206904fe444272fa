package jobs

import (
	"github.com/flink-operator/flink-operator/pkg/autoscaler"
	"github.com/flink-operator/flink-operator/pkg/autoscaler/flinkmetrics"
	"github.com/flink-operator/flink-operator/pkg/flink"
)

// defaultMetricsSource reads a job's topology and metrics from its JobManager's REST API.
func defaultMetricsSource(c *flink.Client) autoscaler.MetricsSource { return flinkmetrics.New(c) }
