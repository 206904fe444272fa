package kubectlflink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/native"
)

// flinkAskTimeout bounds the one question status asks Flink: a JobManager that does not
// answer must not hold up the screen.
const flinkAskTimeout = 5 * time.Second

// maxFlinkAnswer bounds the checkpoint statistics read (their history is bounded by Flink's
// web.checkpoints.history, 10 by default: a few KiB).
const maxFlinkAnswer = 4 << 20

// errNoProxy: the client cannot proxy to Services (a fake without a reactor).
var errNoProxy = errors.New("no service proxy")

// checkpointStatistics asks the job's JobManager for its checkpoint statistics (GET
// /jobs/:jobid/checkpoints) through the API server's proxy to the cluster's REST Service, so
// the plugin needs no route to the pods, only `get services/proxy`. The operator records a
// checkpoint in the status only in upstream's legacy snapshot mode; Flink always knows its
// latest one.
func checkpointStatistics(ctx context.Context, kube kubernetes.Interface, namespace, cluster, jobID string) (*flink.CheckpointStatistics, error) {
	ctx, cancel := context.WithTimeout(ctx, flinkAskTimeout)
	defer cancel()
	req := kube.CoreV1().Services(namespace).ProxyGet("http", flinkconf.RESTServiceName(cluster), native.PortNameREST,
		"/jobs/"+url.PathEscape(jobID)+"/checkpoints", nil)
	if req == nil {
		return nil, errNoProxy
	}
	body, err := req.Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("checkpoint statistics of job %s from service %s/%s: %w", jobID, namespace, flinkconf.RESTServiceName(cluster), err)
	}
	defer body.Close()
	// The JobManager runs the user's code: what it answers is read within a bound.
	raw, err := io.ReadAll(io.LimitReader(body, maxFlinkAnswer+1))
	if err != nil {
		return nil, fmt.Errorf("checkpoint statistics of job %s: %w", jobID, err)
	}
	if len(raw) > maxFlinkAnswer {
		return nil, fmt.Errorf("checkpoint statistics of job %s: the answer is over %d bytes", jobID, maxFlinkAnswer)
	}
	stats := &flink.CheckpointStatistics{}
	if err := json.Unmarshal(raw, stats); err != nil {
		return nil, fmt.Errorf("checkpoint statistics of job %s: %w", jobID, err)
	}
	return stats, nil
}

// refTime is when a checkpoint or savepoint Flink reports completed (its last acknowledgement,
// else its trigger).
func refTime(r *flink.CheckpointRef) time.Time {
	switch {
	case r == nil:
		return time.Time{}
	case r.LatestAck > 0:
		return time.UnixMilli(r.LatestAck)
	case r.TriggerTimestamp > 0:
		return time.UnixMilli(r.TriggerTimestamp)
	}
	return time.Time{}
}
