package native_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flink-operator/flink-operator/test/wait"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/test/flinkcluster"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// TestGeneratedConfigRunsRealFlink starts a real JobManager and TaskManager from the
// configuration and logging files pkg/native renders for upstream's session example, and runs
// a job on it: the files we write are files Flink reads.
func TestGeneratedConfigRunsRealFlink(t *testing.T) {
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	example, err := os.ReadFile(filepath.Join(root, "test", "testdata", "upstream", "examples", "basic-session-deployment-only.yaml"))
	require.NoError(t, err)

	for _, version := range flinkcluster.Versions(t) {
		t.Run(version, func(t *testing.T) {
			dist := flinkcluster.DistFor(t, version)
			dep := &flinkv1beta1.FlinkDeployment{}
			require.NoError(t, yaml.UnmarshalStrict(example, dep))
			dep.Namespace = "flink"
			dep.Spec.FlinkVersion = flinkVersionOf(t, version)

			cluster, err := native.Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
			require.NoError(t, err)
			files := cluster.ConfigMap.Data
			configFile := files[flinkconf.ConfigFileName(dep.Spec.FlinkVersion)]
			require.NotEmpty(t, configFile)

			running := flinkcluster.StartSession(t, dist, flinkcluster.Options{
				ConfigFile: configFile,
				Log4j:      files[native.Log4jConsoleFile],
			})
			ctx := context.Background()
			c, err := flink.New(flink.Options{URL: running.RESTURL, Timeout: time.Minute})
			require.NoError(t, err)

			effective, err := c.JobManagerConfig(ctx)
			require.NoError(t, err)
			assert.Equal(t, dep.Name, effective["kubernetes.cluster-id"], "Flink read the rendered file")
			assert.Equal(t, "false", effective["web.cancel.enable"])
			assert.Equal(t, cluster.Config["jobmanager.memory.process.size"], effective["jobmanager.memory.process.size"])

			jar, err := os.Open(dist.Example("TopSpeedWindowing"))
			require.NoError(t, err)
			defer jar.Close()
			jarID, err := c.UploadJar(ctx, "TopSpeedWindowing.jar", jar)
			require.NoError(t, err)
			jobID := flink.NewTriggerID()
			_, err = c.RunJar(ctx, jarID, flink.RunJarRequest{JobID: jobID})
			require.NoError(t, err)
			wait.For(t, 90*time.Second, "the job never ran", func() bool {
				d, err := c.JobDetails(ctx, jobID)
				return err == nil && d.State == flink.JobRunning && d.AllTasksRunning()
			})

			logs, err := filepath.Glob(filepath.Join(running.Dir, "log", "jobmanager-1.log"))
			require.NoError(t, err)
			require.Len(t, logs, 1, "the rendered log4j configuration writes the JobManager log file")
		})
	}
}

func flinkVersionOf(t *testing.T, version string) flinkv1beta1.FlinkVersion {
	parts := strings.SplitN(version, ".", 3)
	require.GreaterOrEqual(t, len(parts), 2)
	return flinkv1beta1.FlinkVersion(fmt.Sprintf("v%s_%s", parts[0], parts[1]))
}
