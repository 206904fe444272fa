package flinkconf

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
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

func TestEffectiveConfigLayers(t *testing.T) {
	dep := deployment(t, `
metadata: {name: orders}
spec:
  flinkVersion: v1_20
  image: flink:1.20
  serviceAccount: flink
  flinkConfiguration:
    taskmanager.numberOfTaskSlots: 4
    state: {savepoints: {dir: "s3://user/sp"}}
    kubernetes.operator.periodic.savepoint.interval: 1h
    job.autoscaler.enabled: "true"
    kubernetes.cluster-id: ignored
`)
	defaults, err := DefaultsFromOperatorConfig(map[string]string{
		"state.savepoints.dir":                   "s3://operator/sp",
		"metrics.reporters":                      "prom",
		"kubernetes.operator.reconcile.interval": "60s",
		"kubernetes.operator.default-configuration.namespace.team-a.metrics.reporters":           "team-a-prom",
		"kubernetes.operator.default-configuration.namespace.team-b.metrics.reporters":           "team-b-prom",
		"kubernetes.operator.default-configuration.flink-version.v1_18+.rest.flamegraph.enabled": "true",
		"kubernetes.operator.default-configuration.flink-version.v1_20.rest.flamegraph.enabled":  "false",
		"kubernetes.operator.default-configuration.flink-version.v2_0+.only.two":                 "x",
	})
	require.NoError(t, err)

	conf, err := EffectiveConfig(dep, defaults, BuildOptions{})
	require.NoError(t, err)
	assert.Equal(t, "s3://user/sp", conf["state.savepoints.dir"], "the resource's configuration wins over defaults")
	assert.Equal(t, "team-a-prom", conf["metrics.reporters"], "namespace defaults win over base defaults")
	assert.Equal(t, "false", conf["rest.flamegraph.enabled"], "the exact version wins over a range")
	assert.NotContains(t, conf, "only.two", "v2_0+ does not apply to v1_20")
	assert.Equal(t, "4", conf["taskmanager.numberOfTaskSlots"])
	assert.Equal(t, "orders", conf["kubernetes.cluster-id"], "derived keys win over the user's")
	assert.Equal(t, "team-a", conf["kubernetes.namespace"])
	assert.Equal(t, "flink:1.20", conf["kubernetes.container.image.ref"])
	assert.Equal(t, "flink", conf["kubernetes.service-account"])
	assert.Equal(t, "kubernetes-session", conf["execution.target"])
	assert.Equal(t, "ClusterIP", conf["kubernetes.rest-service.exposed.type"])
	for k := range conf {
		assert.NotRegexp(t, `^(kubernetes\.operator\.|job\.autoscaler\.)`, k, "operator keys never reach Flink")
	}
}

func TestEffectiveConfigDerivedKeys(t *testing.T) {
	tests := []struct {
		name   string
		spec   string
		opts   BuildOptions
		want   map[string]string
		absent []string
	}{
		{
			name: "native application with legacy resources",
			spec: `
metadata: {name: app}
spec:
  flinkVersion: v1_17
  image: flink:1.17
  jobManager: {resource: {memory: 2048m, cpu: 1}, replicas: 1}
  taskManager: {resource: {memory: 1g, cpu: 0.5}}
  job: {jarURI: "local:///opt/flink/usrlib/job.jar", entryClass: com.example.Main, args: [--a, b], parallelism: 3, upgradeMode: savepoint}`,
			opts: BuildOptions{JobID: "00000000000000000000000000000abc", RestorePath: "s3://sp/savepoint-1", AllowNonRestoredState: true},
			want: map[string]string{
				"execution.target": "kubernetes-application", "pipeline.jars": "local:///opt/flink/usrlib/job.jar",
				"jobmanager.memory.process.size": "2g", "kubernetes.jobmanager.cpu.amount": "1.0",
				"taskmanager.memory.process.size": "1g", "kubernetes.taskmanager.cpu.amount": "0.5",
				"kubernetes.jobmanager.replicas": "1", "parallelism.default": "3",
				"execution.shutdown-on-application-finish": "false", "pipeline.name": "app",
				"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
				"$internal.application.main":                                "com.example.Main", "$internal.application.program-args": "--a;b",
				"$internal.pipeline.job-id": "00000000000000000000000000000abc",
				"execution.savepoint.path":  "s3://sp/savepoint-1", "execution.savepoint.ignore-unclaimed-state": "true",
				"kubernetes.container.image.ref": "flink:1.17", "jobmanager.rpc.address": "app.team-a",
			},
			absent: []string{"execution.state-recovery.path", "execution.checkpointing.interval", "high-availability.cluster-id"},
		},
		{
			name: "resources: requests win, limit factors, 1.16 image key",
			spec: `
metadata: {name: sized}
spec:
  flinkVersion: v1_16
  image: flink:1.16
  jobManager:
    resources: {requests: {memory: 1536Mi, cpu: 500m}, limits: {memory: 3072Mi, cpu: "1"}}
  taskManager:
    resources: {limits: {memory: 2Gi, cpu: "2"}}`,
			want: map[string]string{
				"jobmanager.memory.process.size": "1536m", "kubernetes.jobmanager.cpu.amount": "0.5",
				"kubernetes.jobmanager.memory.limit-factor": "2", "kubernetes.jobmanager.cpu.limit-factor": "2",
				"taskmanager.memory.process.size": "2g", "kubernetes.taskmanager.cpu.amount": "2.0",
				"kubernetes.container.image": "flink:1.16",
			},
			absent: []string{"kubernetes.container.image.ref", "kubernetes.taskmanager.cpu.limit-factor"},
		},
		{
			name: "standalone last-state application with HA on 2.x",
			spec: `
metadata: {name: ha}
spec:
  flinkVersion: v2_0
  mode: standalone
  flinkConfiguration: {high-availability.type: kubernetes, high-availability.storageDir: "s3://ha", taskmanager.numberOfTaskSlots: "2"}
  taskManager: {replicas: 3}
  job: {jarURI: "local:///opt/flink/usrlib/job.jar", upgradeMode: last-state}`,
			opts: BuildOptions{RestorePath: "s3://cp/chk-7"},
			want: map[string]string{
				"execution.target": "remote", "pipeline.classpaths": "file:///opt/flink/usrlib/job.jar",
				"high-availability.cluster-id": "ha", "parallelism.default": "6",
				"execution.checkpointing.interval": "5min", "execution.submit-failed-job-on-application-error": "true",
				"execution.savepoint.path": "s3://cp/chk-7",
			},
			// Nobody chose whether unclaimed state may be dropped: Flink's default (it may not).
			absent: []string{"jobmanager.rpc.address", "pipeline.jars", "execution.state-recovery.path", "kubernetes.pod-template-file.taskmanager",
				"execution.state-recovery.ignore-unclaimed-state", "execution.savepoint.ignore-unclaimed-state"},
		},
		{
			name: "user's checkpoint interval and pipeline name are kept",
			spec: `
metadata: {name: keep}
spec:
  flinkVersion: v1_20
  flinkConfiguration: {execution.checkpointing.interval: 10s, pipeline.name: mine}
  job: {jarURI: "local:///x.jar", upgradeMode: last-state}`,
			want: map[string]string{"execution.checkpointing.interval": "10s", "pipeline.name": "mine"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf, err := EffectiveConfig(deployment(t, tt.spec), Defaults{}, tt.opts)
			require.NoError(t, err)
			for k, v := range tt.want {
				assert.Equal(t, v, conf[k], k)
			}
			for _, k := range tt.absent {
				assert.NotContains(t, conf, k)
			}
		})
	}
}

func TestEffectiveConfigErrorsNameTheField(t *testing.T) {
	tests := []struct{ spec, want string }{
		{`{metadata: {name: x}, spec: {jobManager: {resource: {memory: lots}}}}`, `spec.jobManager.resource.memory: "lots" is neither`},
		{`{metadata: {name: x}, spec: {taskManager: {resource: {cpu: -1}}}}`, `spec.taskManager.resource.cpu: -1, must be greater than 0`},
		{`{metadata: {name: x}, spec: {flinkConfiguration: {a.b: "1", a: {b: "2"}}}}`, `spec.flinkConfiguration: key "a.b" is given more than once`},
		{`{metadata: {name: x}, spec: {flinkConfiguration: {taskmanager.numberOfTaskSlots: many}, taskManager: {replicas: 2}, job: {jarURI: "local:///x.jar"}}}`, `taskmanager.numberOfTaskSlots: "many" is not an integer`},
	}
	for _, tt := range tests {
		_, err := EffectiveConfig(deployment(t, tt.spec), Defaults{}, BuildOptions{})
		assert.ErrorContains(t, err, tt.want)
	}
	_, err := DefaultsFromOperatorConfig(map[string]string{"kubernetes.operator.default-configuration.flink-version.v9_9.a": "b"})
	assert.ErrorContains(t, err, "want kubernetes.operator.default-configuration.flink-version.<v1_20>[+].<flink key>")
}

func TestMemory(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"2048m", 2 << 30}, {"1g", 1 << 30}, {"1G", 1 << 30}, {"512 mb", 512 << 20}, {"1024", 1024},
		{"2Gi", 2 << 30}, {"1500Mi", 1500 << 20}, {"1e9", 1e9},
	}
	for _, tt := range tests {
		got, err := MemoryBytes(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
	assert.Equal(t, "2g", FlinkMemory(2<<30))
	assert.Equal(t, "1536m", FlinkMemory(1536<<20))
	assert.Equal(t, "1000000000b", FlinkMemory(1e9))
}

func TestConfigFile(t *testing.T) {
	conf := Config{"a.b": "true", "c": "file:///x", "d": "[1,2]", "e": "k1:v1,k2:v2", "f": "plain"}
	assert.Equal(t, "flink-conf.yaml", ConfigFileName(flinkv1beta1.FlinkVersion1_18))
	assert.Equal(t, "config.yaml", ConfigFileName(flinkv1beta1.FlinkVersion1_19))
	assert.Equal(t, "config.yaml", ConfigFileName(flinkv1beta1.FlinkVersion2_2))

	legacy, err := RenderConfigFile(conf, flinkv1beta1.FlinkVersion1_18)
	require.NoError(t, err)
	assert.Equal(t, "a.b: true\nc: file:///x\nd: [1,2]\ne: k1:v1,k2:v2\nf: plain\n", legacy)

	standard, err := RenderConfigFile(conf, flinkv1beta1.FlinkVersion2_0)
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(standard), &back))
	for k, v := range conf {
		assert.Equal(t, v, back[k], "config.yaml must read back every value as the same string: %s", k)
	}
	_, err = RenderConfigFile(Config{"a": "two\nlines"}, flinkv1beta1.FlinkVersion1_17)
	assert.ErrorContains(t, err, "line breaks")
}

func TestTaskManagerReplicas(t *testing.T) {
	spec := &flinkv1beta1.FlinkDeploymentSpec{}
	n, err := TaskManagerReplicas(Config{"parallelism.default": "5", "taskmanager.numberOfTaskSlots": "2"}, spec)
	require.NoError(t, err)
	assert.Equal(t, int32(3), n)
	spec.TaskManager = &flinkv1beta1.TaskManagerSpec{Replicas: ptr(int32(7))}
	n, err = TaskManagerReplicas(Config{}, spec)
	require.NoError(t, err)
	assert.Equal(t, int32(7), n)
}

func TestOperatorOptionsReachReconcilersNotFlink(t *testing.T) {
	defaults, err := DefaultsFromOperatorConfig(map[string]string{
		"kubernetes.operator.periodic.savepoint.interval": "1 h", "taskmanager.numberOfTaskSlots": "2"})
	require.NoError(t, err)
	dep := &flinkv1beta1.FlinkDeployment{}
	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{"kubernetes.operator.savepoint.history.max.count": "3"})
	user, err := UserConfig(dep, defaults)
	require.NoError(t, err)
	assert.Equal(t, "1 h", user["kubernetes.operator.periodic.savepoint.interval"], "operator-wide option as the default")
	assert.Equal(t, "3", user["kubernetes.operator.savepoint.history.max.count"], "the resource's own option")
	effective := Config{"rest.port": "8081", "taskmanager.numberOfTaskSlots": "2"}
	got := WithOptions(effective, user)
	assert.Equal(t, "1 h", got["kubernetes.operator.periodic.savepoint.interval"])
	assert.Equal(t, "8081", got["rest.port"])
	assert.NotContains(t, effective, "kubernetes.operator.periodic.savepoint.interval", "Flink's configuration is untouched")
}

// Every deployment of an application cluster with HA storage gets result stores of its own,
// kept after commit (FLINK-27569): an ended job is not re-run by a restarted JobManager, and a
// stale entry of an earlier deployment is never read by the next one.
func TestResultStoresPerDeployment(t *testing.T) {
	dep := deployment(t, `
metadata: {name: app}
spec:
  flinkVersion: v1_20
  image: flink:1.20
  flinkConfiguration: {high-availability.type: kubernetes, high-availability.storageDir: "s3://bucket/ha/"}
  jobManager: {resource: {memory: 1g, cpu: 1}}
  taskManager: {resource: {memory: 1g, cpu: 1}}
  job: {jarURI: "local:///opt/flink/job.jar", upgradeMode: last-state}`)
	conf, err := EffectiveConfig(dep, Defaults{}, BuildOptions{ResultStoreID: "attempt-1"})
	require.NoError(t, err)
	assert.Equal(t, "false", conf["job-result-store.delete-on-commit"])
	assert.Equal(t, "s3://bucket/ha/job-result-store/app/attempt-1", conf["job-result-store.storage-path"])
	assert.NotContains(t, conf, "application-result-store.storage-path", "Flink 1.20 has no application result store")

	next, err := EffectiveConfig(dep, Defaults{}, BuildOptions{ResultStoreID: "attempt-2"})
	require.NoError(t, err)
	assert.NotEqual(t, conf["job-result-store.storage-path"], next["job-result-store.storage-path"], "a new deployment, a new store")

	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{"high-availability.type": "kubernetes",
		"high-availability.storageDir": "s3://bucket/ha", "job-result-store.delete-on-commit": "true"})
	conf, err = EffectiveConfig(dep, Defaults{}, BuildOptions{ResultStoreID: "attempt-3"})
	require.NoError(t, err)
	assert.Equal(t, "true", conf["job-result-store.delete-on-commit"], "the user's choice is kept")

	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{})
	conf, err = EffectiveConfig(dep, Defaults{}, BuildOptions{ResultStoreID: "attempt-4"})
	require.NoError(t, err)
	assert.NotContains(t, conf, "job-result-store.storage-path", "no HA storage: Flink's in-memory store")
}

// A restore path in the user's flinkConfiguration never reaches Flink: what a job
// restores is the operator's decision, and a stateless redeploy must not restore it.
func TestUserRestorePathIsRemoved(t *testing.T) {
	dep := deployment(t, `
metadata: {name: app}
spec:
  flinkVersion: v1_20
  image: flink:1.20
  flinkConfiguration: {execution.savepoint.path: "s3://old/sp-1", execution.state-recovery.path: "s3://old/sp-2", $internal.pipeline.job-id: "0000000000000000000000000000cafe"}
  jobManager: {resource: {memory: 1g, cpu: 1}}
  taskManager: {resource: {memory: 1g, cpu: 1}}
  job: {jarURI: "local:///opt/flink/job.jar", upgradeMode: stateless}`)
	conf, err := EffectiveConfig(dep, Defaults{}, BuildOptions{JobID: "0000000000000000000000000000cafe"})
	require.NoError(t, err)
	assert.NotContains(t, conf, "execution.savepoint.path")
	assert.NotContains(t, conf, "execution.state-recovery.path")
	conf, err = EffectiveConfig(dep, Defaults{}, BuildOptions{RestorePath: "s3://sp/chosen"})
	require.NoError(t, err)
	assert.Equal(t, "s3://sp/chosen", conf["execution.savepoint.path"], "only the operator's restore path, under upstream's name")
	assert.NotContains(t, conf, "execution.state-recovery.path")
	assert.Equal(t, "0000000000000000000000000000cafe", UserJobID(&dep.Spec), "the user's job id is read for the status")
}

// Flink 2.3 added the application result store; it gets a store per deployment too (upstream
// FLINK-40467), or a stale entry of the previous deployment makes the new cluster run nothing.
func TestApplicationResultStoreOnFlink23(t *testing.T) {
	dep := deployment(t, `
metadata: {name: app}
spec:
  flinkVersion: v2_3
  image: flink:2.3
  flinkConfiguration: {high-availability.type: kubernetes, high-availability.storageDir: "s3://bucket/ha"}
  job: {jarURI: "local:///opt/flink/job.jar", upgradeMode: last-state}`)
	conf, err := EffectiveConfig(dep, Defaults{}, BuildOptions{ResultStoreID: "attempt-1"})
	require.NoError(t, err)
	assert.Equal(t, "false", conf["application-result-store.delete-on-commit"])
	assert.Equal(t, "s3://bucket/ha/application-result-store/app/attempt-1", conf["application-result-store.storage-path"])
	assert.Equal(t, "s3://bucket/ha/job-result-store/app/attempt-1", conf["job-result-store.storage-path"])
}

// A cluster Build makes always has result stores of its own: without a chosen id a
// random one, new for every Build, the same in the rendered configuration file and reported on
// the Cluster so the caller can record it. The deprecated name of the HA storage directory
// counts, as Flink reads it, and a user's storage path is replaced, as upstream does.
// The last-state sentinel: the restore path under the version's key, so a job whose
// HA checkpoints vanished fails instead of starting empty; a savepoint to restore wins; the
// user's own restore path never shows through.
func TestLastStateRestoreRendersTheSentinel(t *testing.T) {
	for _, tc := range []struct {
		version flinkv1beta1.FlinkVersion
		key     string
	}{
		{flinkv1beta1.FlinkVersion1_18, "execution.savepoint.path"},
		{flinkv1beta1.FlinkVersion1_20, "execution.savepoint.path"},
		{flinkv1beta1.FlinkVersion2_3, "execution.savepoint.path"},
	} {
		t.Run(string(tc.version), func(t *testing.T) {
			dep := deployment(t, `
metadata: {name: app}
spec:
  image: flink
  flinkConfiguration: {high-availability.type: kubernetes, high-availability.storageDir: "s3://bucket/ha", execution.savepoint.path: "s3://old/sp"}
  job: {jarURI: "local:///opt/flink/job.jar", upgradeMode: last-state}`)
			dep.Spec.FlinkVersion = tc.version
			conf, err := EffectiveConfig(dep, Defaults{}, BuildOptions{LastStateRestore: true})
			require.NoError(t, err)
			assert.Equal(t, "KUBERNETES_OPERATOR_LAST_STATE", conf[tc.key])
			assert.Equal(t, flinkv1beta1.LastStateSentinelPath, conf[tc.key])
			for _, other := range []string{"execution.savepoint.path", "execution.state-recovery.path"} {
				if other != tc.key {
					assert.NotContains(t, conf, other)
				}
			}

			conf, err = EffectiveConfig(dep, Defaults{}, BuildOptions{LastStateRestore: true, RestorePath: "s3://sp/chosen"})
			require.NoError(t, err)
			assert.Equal(t, "s3://sp/chosen", conf[tc.key], "a savepoint to restore wins over the sentinel")

			conf, err = EffectiveConfig(dep, Defaults{}, BuildOptions{})
			require.NoError(t, err)
			assert.NotContains(t, conf, tc.key, "not a last-state restore: no restore path at all")
		})
	}
}

// Whether unclaimed state may be dropped stays the user's setting, as upstream: only
// spec.job.allowNonRestoredState (or the operator) overrides it, under the version's name.
func TestIgnoreUnclaimedStateIsTheUsersUnlessTheSpecSaysSo(t *testing.T) {
	dep := deployment(t, `
metadata: {name: app}
spec:
  flinkVersion: v1_20
  image: flink:1.20
  flinkConfiguration: {execution.savepoint.ignore-unclaimed-state: "true"}
  job: {jarURI: "local:///opt/flink/job.jar", upgradeMode: savepoint}`)
	conf, err := EffectiveConfig(dep, Defaults{}, BuildOptions{RestorePath: "s3://sp/1"})
	require.NoError(t, err)
	assert.Equal(t, "true", conf["execution.savepoint.ignore-unclaimed-state"], "the user's setting reaches Flink")
	assert.NotContains(t, conf, "execution.state-recovery.ignore-unclaimed-state")

	dep.Spec.Job.AllowNonRestoredState = ptr(false)
	conf, err = EffectiveConfig(dep, Defaults{}, BuildOptions{RestorePath: "s3://sp/1"})
	require.NoError(t, err)
	assert.Equal(t, "false", conf["execution.savepoint.ignore-unclaimed-state"], "the spec decides, under upstream's name")
	assert.NotContains(t, conf, "execution.state-recovery.ignore-unclaimed-state", "the newer name cannot contradict it")

	dep.Spec.Job.AllowNonRestoredState = nil
	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{})
	conf, err = EffectiveConfig(dep, Defaults{}, BuildOptions{RestorePath: "s3://sp/1", AllowNonRestoredState: true})
	require.NoError(t, err)
	assert.Equal(t, "true", conf["execution.savepoint.ignore-unclaimed-state"])
}

// A job id the user fixed wins over the operator's, in the configuration Flink
// gets as in what the controller records.
func TestUserJobIDWins(t *testing.T) {
	dep := deployment(t, `
metadata: {name: app}
spec:
  flinkVersion: v1_20
  image: flink:1.20
  flinkConfiguration: {$internal.pipeline.job-id: " 0000000000000000000000000000cafe "}
  job: {jarURI: "local:///opt/flink/job.jar"}`)
	conf, err := EffectiveConfig(dep, Defaults{}, BuildOptions{JobID: "0000000000000000000000000000abcd"})
	require.NoError(t, err)
	assert.Equal(t, "0000000000000000000000000000cafe", conf["$internal.pipeline.job-id"])
	assert.Equal(t, "0000000000000000000000000000cafe", UserJobID(&dep.Spec))

	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{})
	conf, err = EffectiveConfig(dep, Defaults{}, BuildOptions{JobID: "0000000000000000000000000000abcd"})
	require.NoError(t, err)
	assert.Equal(t, "0000000000000000000000000000abcd", conf["$internal.pipeline.job-id"])
	assert.Empty(t, UserJobID(&dep.Spec))
}

// As upstream's FlinkConfigBuilder.getParallelism: TaskManager replicas fix the parallelism
// (replicas × slots) and job.parallelism is then ignored; without replicas it is the job's.
func TestParallelism(t *testing.T) {
	tests := []struct {
		name, spec, want string
	}{
		{"replicas win over job.parallelism", `{metadata: {name: p}, spec: {flinkConfiguration: {taskmanager.numberOfTaskSlots: "2"},
  taskManager: {replicas: 3}, job: {jarURI: "local:///x.jar", parallelism: 10}}}`, "6"},
		{"replicas alone", `{metadata: {name: p}, spec: {taskManager: {replicas: 3}, job: {jarURI: "local:///x.jar"}}}`, "3"},
		{"job.parallelism without replicas", `{metadata: {name: p}, spec: {flinkConfiguration: {taskmanager.numberOfTaskSlots: "2"},
  taskManager: {}, job: {jarURI: "local:///x.jar", parallelism: 5}}}`, "5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf, err := EffectiveConfig(deployment(t, tt.spec), Defaults{}, BuildOptions{})
			require.NoError(t, err)
			assert.Equal(t, tt.want, conf["parallelism.default"])
		})
	}
}

func ptr[T any](v T) *T { return &v }
