package native

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
)

func deployment(t *testing.T, doc string) *flinkv1beta1.FlinkDeployment {
	t.Helper()
	dep := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), dep))
	if dep.Namespace == "" {
		dep.Namespace = "team-a"
	}
	dep.Generation = 3
	return dep
}

func TestContainerResourcesFromLegacy(t *testing.T) {
	cpu := 0.5
	r := containerResources(nil, &flinkv1beta1.Resource{CPU: &cpu, Memory: "2048m", EphemeralStorage: "1Gi"})
	assert.Equal(t, int64(500), r.Requests.Cpu().MilliValue())
	assert.Equal(t, int64(2<<30), r.Limits.Memory().Value())
	eph := r.Limits[corev1.ResourceEphemeralStorage]
	want := resource.MustParse("1Gi")
	assert.Zero(t, want.Cmp(eph))
}

func TestMilliMemoryIsReadAsFlinkMebibytes(t *testing.T) {
	dep := deployment(t, `{metadata: {name: x}, spec: {jobManager: {resources: {requests: {memory: 2048m}, limits: {memory: 4096m}}}}}`)
	conf, err := flinkconf.EffectiveConfig(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
	require.NoError(t, err)
	assert.Equal(t, "2g", conf["jobmanager.memory.process.size"])
	assert.Equal(t, "2", conf["kubernetes.jobmanager.memory.limit-factor"])
	r := containerResources(dep.Spec.JobManager.Resources, nil)
	assert.Equal(t, int64(2<<30), r.Requests.Memory().Value())
	assert.Equal(t, int64(4<<30), r.Limits.Memory().Value())
}

// Every deployment of an application cluster with HA storage gets result stores of its own,
// kept after commit (FLINK-27569): an ended job is not re-run by a restarted JobManager, and a
// stale entry of an earlier deployment is never read by the next one.
// A restore path in the user's flinkConfiguration never reaches Flink: what a job
// restores is the operator's decision, and a stateless redeploy must not restore it.
// Flink 2.3 added the application result store; it gets a store per deployment too (upstream
// FLINK-40467), or a stale entry of the previous deployment makes the new cluster run nothing.
// A cluster Build makes always has result stores of its own: without a chosen id a
// random one, new for every Build, the same in the rendered configuration file and reported on
// the Cluster so the caller can record it. The deprecated name of the HA storage directory
// counts, as Flink reads it, and a user's storage path is replaced, as upstream does.
func TestBuildPicksAFreshResultStore(t *testing.T) {
	dep := deployment(t, `
metadata: {name: app}
spec:
  flinkVersion: v1_20
  image: flink:1.20
  flinkConfiguration: {high-availability.type: kubernetes, high-availability.zookeeper.storageDir: "s3://bucket/ha", job-result-store.storage-path: "s3://bucket/fixed"}
  jobManager: {resource: {memory: 1g, cpu: 1}}
  taskManager: {resource: {memory: 1g, cpu: 1}}
  job: {jarURI: "local:///opt/flink/job.jar", upgradeMode: last-state}`)
	first, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, first.ResultStoreID)
	path := "s3://bucket/ha/job-result-store/app/" + first.ResultStoreID
	assert.Equal(t, path, first.Config["job-result-store.storage-path"])
	assert.Equal(t, "false", first.Config["job-result-store.delete-on-commit"])
	assert.Contains(t, first.ConfigMap.Data[flinkconf.ConfigFileName(flinkv1beta1.FlinkVersion1_20)], path, "the file Flink reads has the same store")

	second, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, first.ResultStoreID, second.ResultStoreID, "every deployment its own store")

	chosen, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{ResultStoreID: "recorded"})
	require.NoError(t, err)
	assert.Equal(t, "recorded", chosen.ResultStoreID)
	assert.Equal(t, "s3://bucket/ha/job-result-store/app/recorded", chosen.Config["job-result-store.storage-path"])

	dep.Spec.Job = nil
	session, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
	require.NoError(t, err)
	assert.Empty(t, session.ResultStoreID, "a session cluster runs no application")
	assert.NotContains(t, session.Config, "job-result-store.delete-on-commit")
}

// The last-state sentinel: the restore path under the version's key, so a job whose
// HA checkpoints vanished fails instead of starting empty; a savepoint to restore wins; the
// user's own restore path never shows through.
// Whether unclaimed state may be dropped stays the user's setting, as upstream: only
// spec.job.allowNonRestoredState (or the operator) overrides it, under the version's name.
// A job id the user fixed wins over the operator's, in the configuration Flink
// gets as in what the controller records.
// As upstream's FlinkConfigBuilder.getParallelism: TaskManager replicas fix the parallelism
// (replicas × slots) and job.parallelism is then ignored; without replicas it is the job's.
