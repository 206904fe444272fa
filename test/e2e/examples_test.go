//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestExamples runs every example in examples/ on real Flink, so none of them rots: each becomes
// Ready, and what it demonstrates is checked. checkpoint-ha and checkpoint-s3 have scenarios of
// their own (TestApplicationWithHA, TestStateInObjectStorage).
func TestExamples(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path  string
		check func(t *testing.T, key client.ObjectKey, d *flinkv1beta1.FlinkDeployment)
	}{
		{path: "examples/basic/basic.yaml", check: func(t *testing.T, key client.ObjectKey, d *flinkv1beta1.FlinkDeployment) {
			allTasksRunning(t, key, d.Status.JobStatus.JobID)
			require.Contains(t, d.Status.ClusterInfo["flink-version"], "2.", "the flink:2.2 image runs Flink 2")
		}},
		{path: "examples/session/session.yaml", check: func(t *testing.T, key client.ObjectKey, d *flinkv1beta1.FlinkDeployment) {
			jobs, err := flinkREST(t, key).JobsOverview(context.Background())
			require.NoError(t, err, "the session cluster serves REST")
			require.Empty(t, jobs)
		}},
		{path: "examples/pod-template/pod-template.yaml", check: func(t *testing.T, key client.ObjectKey, d *flinkv1beta1.FlinkDeployment) {
			allTasksRunning(t, key, d.Status.JobStatus.JobID)
			jm := jobManagerPod(t, key)
			require.Equal(t, "streaming", jm.Labels["team"])
			require.Equal(t, "coordinator", jm.Labels["role"])
			require.Contains(t, jm.Spec.Containers[0].Env, corev1.EnvVar{Name: "TEAM", Value: "streaming"})
			// Native TaskManagers are created by Flink from the template the operator hands to the
			// JobManager, which Flink reads at the in-pod path /opt/flink/pod-template: the pod
			// Flink created is asked, and what was handed over.
			tm := podOf(t, key, native.ComponentTaskManager)
			require.Equal(t, "worker", tm.Labels["role"], "Flink created the TaskManager from the template")
			require.Equal(t, "streaming", tm.Labels["team"], "the common template is merged in")
			require.Contains(t, tm.Spec.Containers[0].Env, corev1.EnvVar{Name: "WORKER_POOL", Value: "general"})
			require.Contains(t, tm.Spec.Containers[0].Env, corev1.EnvVar{Name: "TEAM", Value: "streaming"})
			var tmpl corev1.ConfigMap
			require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: key.Namespace,
				Name: native.PodTemplateConfigMapName(key.Name)}, &tmpl))
			require.Contains(t, tmpl.Data[flinkconf.TaskManagerPodFile], "role: worker")
			require.Contains(t, tmpl.Data[flinkconf.TaskManagerPodFile], "WORKER_POOL")
			require.Contains(t, tmpl.Data[flinkconf.TaskManagerPodFile], "TEAM", "the common template is merged in")
		}},
		{path: "examples/ingress/ingress.yaml", check: func(t *testing.T, key client.ObjectKey, d *flinkv1beta1.FlinkDeployment) {
			allTasksRunning(t, key, d.Status.JobStatus.JobID)
			var ing networkingv1.Ingress
			require.NoError(t, env.Client.Get(context.Background(), key, &ing))
			require.Equal(t, "ingress-example.e2e-examples.flink.example.com", ing.Spec.Rules[0].Host)
			require.Equal(t, "ingress-example-rest", ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name)
			require.Equal(t, "nginx", *ing.Spec.IngressClassName)
		}},
		{path: "examples/custom-logging/custom-logging.yaml", check: func(t *testing.T, key client.ObjectKey, d *flinkv1beta1.FlinkDeployment) {
			allTasksRunning(t, key, d.Status.JobStatus.JobID)
			jm := jobManagerPod(t, key)
			logs, err := filepath.Glob(filepath.Join(env.Dir, "node", "pods", jm.Namespace+"_"+jm.Name+"_*", "logs", "flink-main-container.out"))
			require.NoError(t, err)
			require.Len(t, logs, 1)
			out, err := os.ReadFile(logs[0])
			require.NoError(t, err)
			require.Contains(t, string(out), "[custom-logging] ", "the JobManager logs with the custom layout")
		}},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(filepath.Dir(tt.path)), func(t *testing.T) {
			// Each example is a resource of its own: they share only the namespace, and the
			// suite's -parallel bound with the other tests.
			t.Parallel()
			ctx := context.Background()
			dep := example(t, tt.path, "e2e-examples")
			key := client.ObjectKeyFromObject(dep)
			require.NoError(t, env.Client.Create(ctx, dep))
			d := waitFor(t, key, "Ready", 3*time.Minute, func(d *flinkv1beta1.FlinkDeployment) bool {
				c := meta.FindStatusCondition(d.Status.Conditions, "Ready")
				ready := c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == d.Generation
				return ready && (d.Spec.Job == nil || d.Status.JobStatus.State == flinkv1beta1.JobStatusRunning)
			})
			tt.check(t, key, d)
			require.NoError(t, env.Client.Delete(ctx, d))
			wait.For(t, 2*time.Minute, "deleted", func() bool {
				return apierrors.IsNotFound(env.Client.Get(ctx, key, &flinkv1beta1.FlinkDeployment{}))
			})
			requireNoPods(t, key)
		})
	}
}

// podOf is a running pod of a cluster component.
func podOf(t *testing.T, key client.ObjectKey, component string) *corev1.Pod {
	t.Helper()
	var running *corev1.Pod
	wait.Until(t, context.Background(), time.Minute, fmt.Sprintf("a running %s pod of %s", component, key.Name), func() (bool, error) {
		var pods corev1.PodList
		if err := env.Client.List(context.Background(), &pods, client.InNamespace(key.Namespace),
			client.MatchingLabels{native.LabelApp: key.Name, native.LabelComponent: component}); err != nil {
			return false, err
		}
		for i := range pods.Items {
			if pods.Items[i].Status.Phase == corev1.PodRunning {
				running = &pods.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	return running
}

// notRunnableImage is an image the local node cannot run: neither Flink's nor busybox, nor an
// image the suite runs as a process. Its containers stay Waiting with reason ImageNotRunnable.
const notRunnableImage = "registry.invalid/not-runnable:1"

// TestNodeAgentReportsFailures: what the local node cannot run, or what crashes, shows in
// pod status as a kubelet would report it, never as a fake success.
func TestNodeAgentReportsFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ns = "e2e-agent"
	require.NoError(t, env.Namespace(ctx, ns))
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "not-flink", Namespace: ns}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: notRunnableImage, Command: []string{"sleep", "3600"}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "crashing", Namespace: ns}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "flink-main-container", Image: "flink:2.2",
				Args: []string{"standalone-job", "--job-classname", "does.not.Exist"}}}}},
	}
	for _, p := range pods {
		require.NoError(t, env.Client.Create(ctx, p))
	}
	status := func(name string, cond func(corev1.ContainerStatus) bool) (corev1.ContainerStatus, bool) {
		p := &corev1.Pod{}
		wait.Until(t, ctx, 2*time.Minute, name+": the container status awaited", func() (bool, error) {
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
				return false, err
			}
			return len(p.Status.ContainerStatuses) == 1 && cond(p.Status.ContainerStatuses[0]), nil
		}, func() string { return fmt.Sprintf("status %+v", p.Status.ContainerStatuses) })
		return p.Status.ContainerStatuses[0], podIsReady(p)
	}
	s, ready := status("not-flink", func(s corev1.ContainerStatus) bool {
		return s.State.Waiting != nil && s.State.Waiting.Reason == "ImageNotRunnable"
	})
	require.Contains(t, s.State.Waiting.Message, notRunnableImage)
	require.False(t, ready, "a pod the node cannot run is never Ready")
	// A crashing container without probes is Ready while it runs between crashes, as with a
	// kubelet; what matters is the restart record.
	s, _ = status("crashing", func(s corev1.ContainerStatus) bool {
		return s.RestartCount >= 1 && s.LastTerminationState.Terminated != nil
	})
	require.NotZero(t, s.LastTerminationState.Terminated.ExitCode)
	require.Equal(t, "Error", s.LastTerminationState.Terminated.Reason)
	require.True(t, strings.HasPrefix(s.ContainerID, "nodeagent://"))
	for _, p := range pods {
		require.NoError(t, env.Client.Delete(ctx, p))
	}
}

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
