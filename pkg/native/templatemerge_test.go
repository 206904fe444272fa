package native

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// TestMergeTemplates: upstream's FlinkUtils.mergePodTemplates, by index (its default) and by
// name (kubernetes.operator.pod-template.merge-arrays-by-name).
func TestMergeTemplates(t *testing.T) {
	common := `
metadata: {labels: {team: a, tier: base}}
spec:
  serviceAccountName: base-sa
  nodeSelector: {disk: ssd}
  containers:
  - name: flink-main-container
    args: [base-1, base-2]
    env: [{name: A, value: base}, {name: B, value: base}]
    volumeMounts: [{name: logs, mountPath: /opt/flink/log}]
  - name: fluentbit
    image: fluent/fluent-bit:1.9
  volumes: [{name: logs, emptyDir: {}}]
  tolerations: [{key: a, operator: Exists}]
`
	component := `
metadata: {labels: {tier: jm}}
spec:
  serviceAccountName: jm-sa
  containers:
  - name: flink-main-container
    args: [jm-1, jm-2, jm-3]
    env: [{name: B, value: jm}, {name: C, value: jm}]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, configMap: {name: data}}]
  tolerations: [{key: b, operator: Exists}, {key: c, operator: Exists}]
`
	tests := []struct {
		name   string
		byName bool
		want   string
	}{
		{name: "by index (upstream's default)", want: `
metadata: {labels: {team: a, tier: jm}}
spec:
  serviceAccountName: jm-sa
  nodeSelector: {disk: ssd}
  containers:
  - name: flink-main-container
    args: [base-1, base-2, jm-3]
    env: [{name: B, value: jm}, {name: C, value: jm}]
    volumeMounts: [{name: data, mountPath: /data}]
    resources: {}
  - name: fluentbit
    image: fluent/fluent-bit:1.9
    resources: {}
  volumes: [{name: data, emptyDir: {}, configMap: {name: data}}]
  tolerations: [{key: b, operator: Exists}, {key: c, operator: Exists}]
`},
		{name: "by name", byName: true, want: `
metadata: {labels: {team: a, tier: jm}}
spec:
  serviceAccountName: jm-sa
  nodeSelector: {disk: ssd}
  containers:
  - name: flink-main-container
    args: [base-1, base-2, jm-3]
    env: [{name: A, value: base}, {name: B, value: jm}, {name: C, value: jm}]
    volumeMounts: [{name: logs, mountPath: /opt/flink/log}, {name: data, mountPath: /data}]
    resources: {}
  - name: fluentbit
    image: fluent/fluent-bit:1.9
    resources: {}
  volumes: [{name: logs, emptyDir: {}}, {name: data, configMap: {name: data}}]
  tolerations: [{key: b, operator: Exists}, {key: c, operator: Exists}]
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MergeTemplates(pod(t, common), pod(t, component), tt.byName)
			require.NoError(t, err)
			gotYAML, err := yaml.Marshal(got)
			require.NoError(t, err)
			wantYAML, err := yaml.Marshal(pod(t, tt.want))
			require.NoError(t, err)
			assert.Equal(t, string(wantYAML), string(gotYAML))
		})
	}
}

func TestMergeTemplatesNilAndMetadataOnly(t *testing.T) {
	p := pod(t, `{spec: {containers: [{name: a, env: [{name: X, value: "1"}]}]}}`)
	got, err := MergeTemplates(nil, p, false)
	require.NoError(t, err)
	assert.Equal(t, p, got)
	got.Spec.Containers[0].Name = "changed"
	assert.Equal(t, "a", p.Spec.Containers[0].Name, "a copy, not the input")
	got, err = MergeTemplates(p, nil, false)
	require.NoError(t, err)
	assert.Equal(t, p, got)

	got, err = MergeTemplates(p, pod(t, `{metadata: {labels: {role: jm}}}`), false)
	require.NoError(t, err)
	require.Len(t, got.Spec.Containers, 1, "a template with only metadata keeps the containers")
	assert.Equal(t, "jm", got.Labels["role"])
}

// The cluster's pods get upstream's merge: by index unless the option says by name. The old
// code always merged by name (Kubernetes' strategic merge): env [A, B, C] here.
func TestBuildMergesTemplatesAsUpstream(t *testing.T) {
	for _, tt := range []struct {
		option  string
		wantEnv []string
	}{
		{"", []string{"B", "C"}},
		{"false", []string{"B", "C"}},
		{"true", []string{"A", "B", "C"}},
	} {
		t.Run("merge-arrays-by-name="+tt.option, func(t *testing.T) {
			dep := deployment(t, `
metadata: {name: merged}
spec:
  mode: standalone
  podTemplate:
    spec:
      containers: [{name: flink-main-container, env: [{name: A, value: common}, {name: B, value: common}]}]
  jobManager:
    podTemplate:
      spec:
        containers: [{name: flink-main-container, env: [{name: B, value: jm}, {name: C, value: jm}]}]
  taskManager:
    podTemplate:
      spec:
        containers: [{name: flink-main-container, env: [{name: B, value: tm}, {name: C, value: tm}]}]
  job: {jarURI: "local:///x.jar", parallelism: 1}`)
			if tt.option != "" {
				dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{options.PodTemplateMergeArraysByName.Key: tt.option})
			}
			cluster, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
			require.NoError(t, err)
			for _, d := range []string{"jobmanager", "taskmanager"} {
				c := cluster.JobManager.Spec.Template.Spec.Containers[0]
				if d == "taskmanager" {
					c = cluster.TaskManager.Spec.Template.Spec.Containers[0]
				}
				var names []string
				for _, e := range c.Env {
					if e.Name != "_POD_IP_ADDRESS" {
						names = append(names, e.Name)
					}
				}
				assert.Equal(t, tt.wantEnv, names, d)
			}
		})
	}
	dep := deployment(t, `{metadata: {name: bad}, spec: {job: {jarURI: "local:///x.jar", parallelism: 1}}}`)
	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{options.PodTemplateMergeArraysByName.Key: "yes"})
	_, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
	require.ErrorContains(t, err, options.PodTemplateMergeArraysByName.Key)
}
