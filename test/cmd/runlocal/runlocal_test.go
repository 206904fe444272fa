//go:build e2e

package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/kubeenv"
	"github.com/flink-operator/flink-operator/test/localenv"
)

// make run-local runs the operator as users install it, admission webhooks on: a spec the
// validator refuses is refused at kubectl apply, naming the field, and the sample is admitted.
// (Before, run-local ran the operator with --enable-webhooks=false and both were admitted.)
func TestRunLocalRefusesABadSpecNamingTheField(t *testing.T) {
	ctrllog.SetLogger(logr.Discard()) // the test's clients print API warnings through it
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	env, err := localenv.Start(ctx, envOptions(t.TempDir(), nil))
	require.NoError(t, err)
	t.Cleanup(env.Stop)
	require.NoError(t, env.Namespace(ctx, "default"))

	data, err := os.ReadFile(filepath.Join(root, "examples", "checkpoint-ha", "checkpoint-ha.yaml"))
	require.NoError(t, err)
	sample := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, yaml.UnmarshalStrict(data, sample))
	sample.Namespace = "default"

	bad := sample.DeepCopy()
	bad.Spec.Job.Parallelism = -1
	err = env.Client.Create(ctx, bad, client.DryRunAll)
	require.Error(t, err, "a negative parallelism was admitted")
	require.Contains(t, err.Error(), `admission webhook "vflinkdeployment-v1beta1.flink.apache.org" denied the request`)
	require.Contains(t, err.Error(), "spec.job.parallelism")
	t.Logf("refused: %v", err)

	require.NoError(t, env.Client.Create(ctx, sample, client.DryRunAll), "the sample run-local applies")
}
