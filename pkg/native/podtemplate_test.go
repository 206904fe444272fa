package native

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
)

func pod(t *testing.T, doc string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), p))
	return p
}

func TestMergePods(t *testing.T) {
	base := pod(t, `
metadata: {labels: {team: a, tier: base}, annotations: {x: "1"}}
spec:
  serviceAccountName: base-sa
  nodeSelector: {disk: ssd}
  initContainers: [{name: fetch, image: busybox}]
  containers:
  - name: flink-main-container
    env: [{name: A, value: base}, {name: B, value: base}]
    volumeMounts: [{name: logs, mountPath: /opt/flink/log}]
    args: [base]
  - name: fluentbit
    image: fluent/fluent-bit:1.9
  volumes: [{name: logs, emptyDir: {}}]
`)
	overlay := pod(t, `
metadata: {labels: {tier: jm}}
spec:
  serviceAccountName: jm-sa
  containers:
  - name: flink-main-container
    env: [{name: B, value: jm}, {name: C, value: jm}]
    volumeMounts: [{name: data, mountPath: /data}]
    args: [jm]
  volumes: [{name: data, emptyDir: {}}]
  tolerations: [{key: dedicated, operator: Equal, value: flink}]
`)
	got, err := MergePods(base, overlay)
	require.NoError(t, err)

	assert.Equal(t, map[string]string{"team": "a", "tier": "jm"}, got.Labels, "maps merge, overlay wins")
	assert.Equal(t, map[string]string{"x": "1"}, got.Annotations)
	assert.Equal(t, "jm-sa", got.Spec.ServiceAccountName, "scalars from the overlay")
	assert.Equal(t, map[string]string{"disk": "ssd"}, got.Spec.NodeSelector, "base-only fields survive")
	require.Len(t, got.Spec.InitContainers, 1)
	require.Len(t, got.Spec.Tolerations, 1)

	require.Len(t, got.Spec.Containers, 2, "sidecars are kept; same-named containers merge")
	main := got.Spec.Containers[0]
	if main.Name != MainContainer {
		main = got.Spec.Containers[1]
	}
	assert.ElementsMatch(t, []corev1.EnvVar{{Name: "A", Value: "base"}, {Name: "B", Value: "jm"}, {Name: "C", Value: "jm"}}, main.Env, "env merges by name")
	assert.ElementsMatch(t, []string{"/opt/flink/log", "/data"}, []string{main.VolumeMounts[0].MountPath, main.VolumeMounts[1].MountPath}, "mounts merge by path")
	assert.Equal(t, []string{"jm"}, main.Args, "plain lists are replaced, not concatenated")
	names := []string{got.Spec.Volumes[0].Name, got.Spec.Volumes[1].Name}
	assert.ElementsMatch(t, []string{"logs", "data"}, names, "volumes merge by name")
}

func TestMergePodsNil(t *testing.T) {
	p := pod(t, `{spec: {containers: [{name: a}]}}`)
	got, err := MergePods(nil, p)
	require.NoError(t, err)
	assert.Equal(t, p, got)
	got.Spec.Containers[0].Name = "changed"
	assert.Equal(t, "a", p.Spec.Containers[0].Name, "a copy, not the input")
	got, err = MergePods(p, nil)
	require.NoError(t, err)
	assert.Equal(t, p, got)
	got, err = MergePods(nil, nil)
	require.NoError(t, err)
	assert.Equal(t, &corev1.Pod{}, got)
}

func TestMergePodsKeepsContainersOfAMetadataOnlyOverlay(t *testing.T) {
	base := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: MainContainer,
		Env: []corev1.EnvVar{{Name: "TEAM", Value: "streaming"}}}}}}
	overlay := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"role": "coordinator"}}}
	got, err := MergePods(base, overlay)
	require.NoError(t, err)
	require.Len(t, got.Spec.Containers, 1, "a template with only metadata must not delete containers")
	require.Equal(t, []corev1.EnvVar{{Name: "TEAM", Value: "streaming"}}, got.Spec.Containers[0].Env)
	require.Equal(t, "coordinator", got.Labels["role"])
}

// TestOverlayPodOperatorWins: found by FuzzMergePods. A user label "$patch" was obeyed as a
// strategic merge directive (deleting or replacing the operator's labels), and a user volume
// named like the operator's configuration volume was merged into it (an emptyDir beside the
// configMap, or items renaming the files Flink reads).
func TestOverlayPodOperatorWins(t *testing.T) {
	generated := pod(t, `{metadata: {labels: {app: demo}}, spec: {volumes: [{name: flink-config-volume, configMap: {name: flink-config-demo}}]}}`)

	_, err := OverlayPod(pod(t, `{metadata: {labels: {$patch: delete}}}`), generated)
	require.ErrorContains(t, err, "$patch")
	_, err = OverlayPod(pod(t, `{metadata: {labels: {team: a}}}`), pod(t, `{metadata: {labels: {$patch: replace, app: demo}}}`))
	require.ErrorContains(t, err, "$patch")

	user := pod(t, `{spec: {volumes: [{name: flink-config-volume, configMap: {name: mine, items: [{key: log4j-console.properties, path: config.yaml}]}}, {name: data, emptyDir: {}}]}}`)
	merged, err := OverlayPod(user, generated)
	require.NoError(t, err)
	require.Len(t, merged.Spec.Volumes, 2)
	for _, v := range merged.Spec.Volumes {
		if v.Name == "flink-config-volume" {
			assert.Equal(t, generated.Spec.Volumes[0], v, "the operator's volume, whole")
		}
	}
	assert.Len(t, user.Spec.Volumes, 2, "the user's template is not modified")
}

// TestContainerizedEnvReachesTheMainContainers: containerized.master.env.NAME and
// containerized.taskmanager.env.NAME become environment variables of the JobManager's and (in
// standalone mode, where the operator renders them) the TaskManagers' main containers, as
// Flink's Kubernetes decorators set them for the Apache operator; the Flink image's entrypoint
// reads some, such as ENABLE_BUILT_IN_PLUGINS. Before, they were left out of the Deployments.
func TestContainerizedEnvReachesTheMainContainers(t *testing.T) {
	dep := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(`
metadata: {name: s3, namespace: jobs}
spec:
  image: flink:1.20
  flinkVersion: v1_20
  mode: standalone
  flinkConfiguration:
    containerized.master.env.ENABLE_BUILT_IN_PLUGINS: flink-s3-fs-presto-1.20.0.jar
    containerized.master.env.TEAM: orders
    containerized.taskmanager.env.ENABLE_BUILT_IN_PLUGINS: flink-s3-fs-presto-1.20.0.jar
  jobManager: {resource: {memory: 1g, cpu: 1}}
  taskManager: {resource: {memory: 1g, cpu: 1}}
  job: {jarURI: "local:///opt/flink/usrlib/job.jar", parallelism: 1}
`), dep))
	cluster, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
	require.NoError(t, err)
	env := func(d *appsv1.Deployment) map[string]string {
		out := map[string]string{}
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.ValueFrom == nil {
				out[e.Name] = e.Value
			}
		}
		return out
	}
	assert.Equal(t, map[string]string{"ENABLE_BUILT_IN_PLUGINS": "flink-s3-fs-presto-1.20.0.jar", "TEAM": "orders"}, env(cluster.JobManager))
	require.NotNil(t, cluster.TaskManager)
	assert.Equal(t, map[string]string{"ENABLE_BUILT_IN_PLUGINS": "flink-s3-fs-presto-1.20.0.jar"}, env(cluster.TaskManager))
}
