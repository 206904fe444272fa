package kubectlflink

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kubefake "k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
	kubetesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// proxyAnswer is what the API server's service proxy answers.
type proxyAnswer struct {
	body []byte
	err  error
}

func (a proxyAnswer) DoRaw(context.Context) ([]byte, error) { return a.body, a.err }

func (a proxyAnswer) Stream(context.Context) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(a.body)), a.err
}

// flinkBehindProxy makes the fake clientset's service proxy answer GETs of path on service
// with answer, and records the proxied requests.
func flinkBehindProxy(kube *kubefake.Clientset, service, path string, answer proxyAnswer) *[]string {
	var asked []string
	kube.PrependProxyReactor("services", func(action kubetesting.Action) (bool, restclient.ResponseWrapper, error) {
		get := action.(kubetesting.ProxyGetAction)
		asked = append(asked, get.GetName()+":"+get.GetPort()+get.GetPath())
		if get.GetName() != service || get.GetPath() != path {
			return true, proxyAnswer{err: errors.New("404 not found")}, nil
		}
		return true, answer, nil
	})
	return &asked
}

// TestStatusAsksFlinkForItsLatestCheckpoint: the status records no checkpoint in the default
// snapshot mode; status asks the JobManager through the API server's proxy to the cluster's
// REST Service and shows Flink's latest completed checkpoint and savepoint with their paths.
// A JobManager that cannot be reached is said so, and the status's own records are shown.
func TestStatusAsksFlinkForItsLatestCheckpoint(t *testing.T) {
	d := runningDeployment()
	d.Status.JobStatus.CheckpointInfo = nil
	f := newFakeCluster(t, interceptor.Funcs{}, d)
	kube := kubefake.NewClientset()
	f.kube = kube
	stats := `{"counts":{"completed":12},"latest":{"completed":{"id":12,"external_path":"file:/data/checkpoints/0123/chk-12",` +
		`"latest_ack_timestamp":` + millis(testNow.Add(-4*time.Second)) + `},"savepoint":{"id":9,"external_path":"file:/data/savepoints/savepoint-0123-x",` +
		`"latest_ack_timestamp":` + millis(testNow.Add(-time.Hour)) + `}}}`
	asked := flinkBehindProxy(kube, "app-rest", "/jobs/0123456789abcdef0123456789abcdef/checkpoints", proxyAnswer{body: []byte(stats)})
	out := mustRun(t, f, "ns", "status", "app")
	assert.Equal(t, []string{"app-rest:rest/jobs/0123456789abcdef0123456789abcdef/checkpoints"}, *asked)
	assert.Contains(t, out, "Last checkpoint:  4s ago  file:/data/checkpoints/0123/chk-12")
	assert.Contains(t, out, "Last savepoint:   60m ago  file:/data/savepoints/savepoint-0123-x", "Flink's savepoint is newer than the status's")

	down := kubefake.NewClientset()
	flinkBehindProxy(down, "app-rest", "/jobs/0123456789abcdef0123456789abcdef/checkpoints", proxyAnswer{err: errors.New("the server is currently unable to handle the request")})
	f.kube = down
	out = mustRun(t, f, "ns", "status", "app")
	assert.Contains(t, out, "Flink:            not reached through the API server (checkpoint statistics of job 0123456789abcdef0123456789abcdef from service ns/app-rest: "+
		"the server is currently unable to handle the request): checkpoints and savepoints as the status records them")
	assert.Contains(t, out, "Last checkpoint:  none")
}

func millis(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// TestCheckpointStatisticsAreReadWithinABound: an answer over maxFlinkAnswer is refused, not
// read whole (the JobManager runs the user's code).
func TestCheckpointStatisticsAreReadWithinABound(t *testing.T) {
	kube := kubefake.NewClientset()
	huge := append([]byte(`{"counts":{"completed":1},"x":"`), bytes.Repeat([]byte("a"), maxFlinkAnswer)...)
	flinkBehindProxy(kube, "app-rest", "/jobs/j/checkpoints", proxyAnswer{body: append(huge, `"}`...)})
	_, err := checkpointStatistics(context.Background(), kube, "ns", "app", "j")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "over")

	flinkBehindProxy(kube, "app-rest", "/jobs/j/checkpoints", proxyAnswer{body: []byte(`{"counts":{"completed":1}}`)})
	stats, err := checkpointStatistics(context.Background(), kube, "ns", "app", "j")
	require.NoError(t, err)
	assert.NotNil(t, stats)
}
