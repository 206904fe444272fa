package native

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// TestJobManagerProbesAsUpstream: upstream's FlinkUtils.addStartupProbe gives the JobManager's
// main container a startup probe on /config (port "rest", every second, never giving up) unless
// the user's template has one or kubernetes.operator.jm-deployment.startup.probe.enabled is
// false, and no readiness or liveness probe; TaskManagers get no probe. With REST SSL it stays
// http, as upstream's (Flink redirects it; see startupProbe). The old code always set its own
// probes (5 s × 60, readiness on /config, liveness on the port), over the user's.
func TestJobManagerProbesAsUpstream(t *testing.T) {
	upstreamProbe := func() *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/config", Port: intstr.FromString("rest")}},
			PeriodSeconds:    1,
			FailureThreshold: math.MaxInt32,
		}
	}
	userProbe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8081)}}, PeriodSeconds: 7}
	tests := []struct {
		name      string
		version   flinkv1beta1.FlinkVersion
		conf      map[string]string
		template  string
		startup   *corev1.Probe
		readiness *corev1.Probe
	}{
		{name: "default", startup: upstreamProbe()},
		{name: "option true", conf: map[string]string{options.JMStartupProbe.Key: "TRUE"}, startup: upstreamProbe()},
		{name: "option false", conf: map[string]string{options.JMStartupProbe.Key: "false"}},
		{name: "REST SSL: http, as upstream", conf: map[string]string{"security.ssl.rest.enabled": "true"}, startup: upstreamProbe()},
		{name: "REST SSL with client certificates", conf: map[string]string{"security.ssl.rest.enabled": "true", "security.ssl.rest.authentication-enabled": "true"},
			startup: upstreamProbe()},
		{name: "the user's probes are kept", template: "jm",
			startup: userProbe, readiness: userProbe},
		{name: "the common template's probes are kept", template: "common",
			startup: userProbe, readiness: userProbe},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mode := range []flinkv1beta1.KubernetesDeploymentMode{flinkv1beta1.DeploymentModeNative, flinkv1beta1.DeploymentModeStandalone} {
				dep := deployment(t, `{metadata: {name: probes}, spec: {taskManager: {}, job: {jarURI: "local:///x.jar", parallelism: 1}}}`)
				dep.Spec.Mode, dep.Spec.FlinkVersion = mode, tt.version
				if tt.conf != nil {
					dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(tt.conf)
				}
				user := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: MainContainer, StartupProbe: userProbe, ReadinessProbe: userProbe}}}}
				switch tt.template {
				case "jm":
					dep.Spec.JobManager = &flinkv1beta1.JobManagerSpec{PodTemplate: user}
				case "common":
					dep.Spec.PodTemplate = user
				}
				cluster, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
				require.NoError(t, err)
				jm := cluster.JobManager.Spec.Template.Spec.Containers[0]
				require.Equal(t, MainContainer, jm.Name)
				assert.Equal(t, tt.startup, jm.StartupProbe, "%s: startup", mode)
				assert.Equal(t, tt.readiness, jm.ReadinessProbe, "%s: readiness", mode)
				assert.Nil(t, jm.LivenessProbe, "%s: liveness", mode)
				if cluster.TaskManager != nil && tt.template == "" {
					tm := cluster.TaskManager.Spec.Template.Spec.Containers[0]
					assert.Nil(t, tm.StartupProbe)
					assert.Nil(t, tm.ReadinessProbe)
					assert.Nil(t, tm.LivenessProbe)
				}
			}
		})
	}
}

func TestStartupProbeOptionMustBeABoolean(t *testing.T) {
	dep := deployment(t, `{metadata: {name: probes}, spec: {job: {jarURI: "local:///x.jar", parallelism: 1}}}`)
	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(map[string]string{options.JMStartupProbe.Key: "sometimes"})
	_, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
	require.ErrorContains(t, err, options.JMStartupProbe.Key)
	// The operator's configuration sets it for every resource.
	dep.Spec.FlinkConfiguration = flinkv1beta1.FlinkConfiguration{}
	cluster, err := Build(dep, flinkconf.Defaults{Operator: map[string]string{options.JMStartupProbe.Key: "false"}}, flinkconf.BuildOptions{})
	require.NoError(t, err)
	assert.Nil(t, cluster.JobManager.Spec.Template.Spec.Containers[0].StartupProbe)
}
