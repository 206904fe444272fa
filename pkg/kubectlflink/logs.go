package kubectlflink

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/native"
)

// logOptions are the flags of logs.
type logOptions struct {
	taskManagers bool
	follow       bool
	tail         int64
}

func (p *plugin) logsCommand() *cobra.Command {
	var (
		kind string
		opts logOptions
	)
	cmd := &cobra.Command{
		Use:   "logs NAME",
		Short: "Print the JobManager's log (--taskmanagers: the TaskManagers' too) of a cluster or of a session job's session",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, t, err := p.connectTo(args[0], kind)
			if err != nil {
				return err
			}
			cluster, err := clusterOf(cmd.Context(), c, t)
			if err != nil {
				return err
			}
			return printLogs(cmd.Context(), c.Kube, t.Namespace, cluster, opts, p.out())
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "kind of NAME: deployment (default) or sessionjob (its session's logs)")
	cmd.Flags().BoolVar(&opts.taskManagers, "taskmanagers", false, "also print the TaskManagers' logs")
	cmd.Flags().BoolVarP(&opts.follow, "follow", "f", false, "keep printing new lines")
	cmd.Flags().Int64Var(&opts.tail, "tail", -1, "lines of each log to print from its end (-1: all)")
	return cmd
}

// clusterOf is the name of the Flink cluster whose pods run the target's job.
func clusterOf(ctx context.Context, c *Clients, t Target) (string, error) {
	switch t.Kind {
	case KindDeployment:
		return t.Name, nil
	case KindSessionJob:
		obj, err := getTyped(ctx, c.Client, t)
		if err != nil {
			return "", err
		}
		session := obj.(*flinkv1beta1.FlinkSessionJob).Spec.DeploymentName
		if session == "" {
			return "", fmt.Errorf("%s names no session (spec.deploymentName)", t)
		}
		return session, nil
	}
	return "", fmt.Errorf("%s: logs are those of FlinkDeployments and FlinkSessionJobs", t)
}

// printLogs prints the Flink container's log of each JobManager (and TaskManager) pod of the
// cluster, found by the labels Flink and the operator put on them; with several pods, each line
// is prefixed with its pod's name.
func printLogs(ctx context.Context, kube kubernetes.Interface, namespace, cluster string, opts logOptions, out io.Writer) error {
	components := []string{native.ComponentJobManager}
	if opts.taskManagers {
		components = append(components, native.ComponentTaskManager)
	}
	var pods []corev1.Pod
	for _, component := range components {
		sel := labels.SelectorFromSet(map[string]string{native.LabelApp: cluster, native.LabelComponent: component})
		list, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return fmt.Errorf("list the %s pods of cluster %s/%s: %w", component, namespace, cluster, err)
		}
		pods = append(pods, list.Items...)
	}
	if len(pods) == 0 {
		return fmt.Errorf("no JobManager pod of cluster %s/%s (labels app=%s, component=jobmanager): is it deployed? see kubectl flink status %s",
			namespace, cluster, cluster, cluster)
	}
	var mu sync.Mutex // one line at a time on out
	if !opts.follow {
		// One pod after the other, so that each pod's log stays together.
		for _, pod := range pods {
			if err := streamLog(ctx, kube, pod, opts, podPrefix(pods, pod), &mu, out); err != nil {
				return err
			}
		}
		return nil
	}
	g, ctx := errgroup.WithContext(ctx)
	for _, pod := range pods {
		g.Go(func() error { return streamLog(ctx, kube, pod, opts, podPrefix(pods, pod), &mu, out) })
	}
	return g.Wait()
}

// podPrefix names the pod on each of its lines when there are several pods.
func podPrefix(pods []corev1.Pod, pod corev1.Pod) string {
	if len(pods) == 1 {
		return ""
	}
	return "[" + pod.Name + "] "
}

func streamLog(ctx context.Context, kube kubernetes.Interface, pod corev1.Pod, opts logOptions, prefix string, mu *sync.Mutex, out io.Writer) error {
	logOpts := &corev1.PodLogOptions{Container: containerOf(pod), Follow: opts.follow}
	if opts.tail >= 0 {
		logOpts.TailLines = &opts.tail
	}
	stream, err := kube.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, logOpts).Stream(ctx)
	if err != nil {
		return fmt.Errorf("log of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	defer func() { _ = stream.Close() }()
	lines := bufio.NewScanner(stream)
	lines.Buffer(make([]byte, 64*1024), 1024*1024)
	for lines.Scan() {
		mu.Lock()
		_, err := fmt.Fprintf(out, "%s%s\n", prefix, lines.Text())
		mu.Unlock()
		if err != nil {
			return err
		}
	}
	if err := lines.Err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("log of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// containerOf is Flink's container of a pod, or its only one.
func containerOf(pod corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == native.MainContainer {
			return c.Name
		}
	}
	if len(pod.Spec.Containers) == 1 {
		return pod.Spec.Containers[0].Name
	}
	return native.MainContainer
}
