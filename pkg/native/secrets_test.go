package native

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
)

// kubernetes.secrets mounts Secrets into the pods the operator builds, as Flink's
// MountSecretsDecorator does (upstream's basic-secure example mounts its keystores so). The old
// code mounted nothing: the JobManager could not read its keystore.
func TestKubernetesSecretsAreMounted(t *testing.T) {
	for _, mode := range []flinkv1beta1.KubernetesDeploymentMode{flinkv1beta1.DeploymentModeNative, flinkv1beta1.DeploymentModeStandalone} {
		t.Run(string(mode), func(t *testing.T) {
			dep := deployment(t, `{metadata: {name: basic-secure}, spec: {job: {jarURI: "local:///x.jar", parallelism: 1}}}`)
			dep.Spec.Mode = mode
			dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{
				"kubernetes.secrets": "basic-secure-cert:/opt/flink/tls-cert, extra:/opt/extra"})
			cluster, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
			require.NoError(t, err)
			pods := []corev1.PodSpec{cluster.JobManager.Spec.Template.Spec}
			if cluster.TaskManager != nil {
				pods = append(pods, cluster.TaskManager.Spec.Template.Spec)
			}
			for _, p := range pods {
				assert.Contains(t, p.Volumes, corev1.Volume{Name: "basic-secure-cert-volume",
					VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "basic-secure-cert"}}})
				assert.Contains(t, p.Volumes, corev1.Volume{Name: "extra-volume",
					VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "extra"}}})
				assert.Contains(t, p.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "basic-secure-cert-volume", MountPath: "/opt/flink/tls-cert"})
				assert.Contains(t, p.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "extra-volume", MountPath: "/opt/extra"})
			}
		})
	}
	dep := deployment(t, `{metadata: {name: bad}, spec: {job: {jarURI: "local:///x.jar", parallelism: 1}}}`)
	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{"kubernetes.secrets": "nopath"})
	_, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
	require.ErrorContains(t, err, "kubernetes.secrets")
}
