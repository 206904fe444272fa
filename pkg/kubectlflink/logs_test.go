package kubectlflink

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

func flinkPod(name, cluster, component string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"app": cluster, "component": component, "type": "flink-native-kubernetes"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "flink-main-container"}, {Name: "sidecar"}}},
	}
}

// TestLogsFindsTheClustersPods: logs reads the JobManager pods by the labels the cluster's pods
// carry (the TaskManagers' with --taskmanagers), prefixes lines with the pod when there are
// several, follows a session job to its session, and says what to check when there is no pod.
// (client-go's fake answers every log request with "fake logs".)
func TestLogsFindsTheClustersPods(t *testing.T) {
	j := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job"}}
	j.Spec.DeploymentName = "session"
	f := newFakeCluster(t, interceptor.Funcs{}, j)
	ctx := context.Background()
	for _, p := range []*corev1.Pod{flinkPod("app-jm", "app", "jobmanager"), flinkPod("app-tm-1", "app", "taskmanager"),
		flinkPod("other-jm", "other", "jobmanager"), flinkPod("session-jm", "session", "jobmanager")} {
		_, err := f.kube.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	assert.Equal(t, "fake logs\n", mustRun(t, f, "ns", "logs", "app"))
	assert.Equal(t, "[app-jm] fake logs\n[app-tm-1] fake logs\n", mustRun(t, f, "ns", "logs", "app", "--taskmanagers"))
	assert.Equal(t, "fake logs\n", mustRun(t, f, "ns", "logs", "--kind", "sessionjob", "job"))

	_, err := f.run(t, "ns", "logs", "gone")
	require.ErrorContains(t, err, "no JobManager pod of cluster ns/gone (labels app=gone, component=jobmanager)")
}

func TestContainerOf(t *testing.T) {
	assert.Equal(t, "flink-main-container", containerOf(*flinkPod("p", "c", "jobmanager")))
	assert.Equal(t, "only", containerOf(corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "only"}}}}))
}
