package nodeagent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podRunner runs one pod: its volumes, init containers, containers and status reports.
type podRunner struct {
	a   *Agent
	pod *corev1.Pod
	ip  string
	dir string

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu          sync.Mutex
	startTime   metav1.Time
	waiting     *corev1.ContainerStateWaiting // why containers have not started yet
	inits       []*containerRunner
	containers  []*containerRunner
	mounts      map[string]string // volume name -> local directory
	terminating bool
	failed      string // pod-level failure (init container failed with restartPolicy Never)
	lastPatch   string
	forwards    map[string]int // "container/port" -> local port, for process containers (ProcessImage.PortFlags)
}

func newPodRunner(a *Agent, pod *corev1.Pod) *podRunner {
	return &podRunner{a: a, pod: pod, ip: a.ips.allocate(), dir: a.podDir(pod), done: make(chan struct{}),
		startTime: metav1.Now()}
}

func (r *podRunner) hostsPath() string { return filepath.Join(r.dir, "hosts") }

func (r *podRunner) writeHosts(content string) error {
	if old, err := os.ReadFile(r.hostsPath()); err == nil && string(old) == content {
		return nil
	}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return err
	}
	return writeFileAtomic(r.hostsPath(), []byte(content), 0o644)
}

func (r *podRunner) logf(format string, args ...any) {
	r.a.logf("pod %s/%s: "+format, append([]any{r.pod.Namespace, r.pod.Name}, args...)...)
}

// run prepares the pod, runs init containers in order, then the containers, and reports
// status until the pod is stopped.
func (r *podRunner) run(parent context.Context) {
	r.ctx, r.cancel = context.WithCancel(parent)
	defer close(r.done)
	go r.reportStatus()
	defer r.patchStatus() // the final state

	if err := os.MkdirAll(filepath.Join(r.dir, "logs"), 0o755); err != nil {
		r.setWaiting("CreateContainerError", err.Error())
		return
	}
	r.a.writeHostsFiles()
	for {
		err := r.prepareVolumes()
		if err == nil {
			break
		}
		r.setWaiting("ContainerCreating", err.Error())
		select {
		case <-r.ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
	r.mu.Lock()
	r.waiting = nil
	for _, c := range r.pod.Spec.InitContainers {
		r.inits = append(r.inits, newContainerRunner(r, c, true))
	}
	r.mu.Unlock()
	for _, ic := range r.inits {
		if !ic.runToCompletion() {
			if r.ctx.Err() == nil && r.pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
				r.mu.Lock()
				r.failed = "init container " + ic.spec.Name + " failed"
				r.mu.Unlock()
			}
			<-r.ctx.Done()
			return
		}
	}
	var wg sync.WaitGroup
	r.mu.Lock()
	for _, c := range r.pod.Spec.Containers {
		r.containers = append(r.containers, newContainerRunner(r, c, false))
	}
	containers := r.containers
	r.mu.Unlock()
	for _, c := range containers {
		wg.Add(1)
		go func() { defer wg.Done(); c.run() }()
	}
	wg.Wait()
}

// isReady reports whether every container is ready (the pod's Ready condition).
func (r *podRunner) isReady() bool {
	r.mu.Lock()
	containers := r.containers
	r.mu.Unlock()
	if len(containers) == 0 {
		return false
	}
	for _, c := range containers {
		c.mu.Lock()
		ready := c.ready
		c.mu.Unlock()
		if !ready {
			return false
		}
	}
	return true
}

func (r *podRunner) setWaiting(reason, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: message}
}

func (r *podRunner) beginTermination() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.terminating {
		return false
	}
	r.terminating = true
	return true
}

// stop terminates the containers (SIGTERM, SIGKILL after grace) and waits for the runner.
func (r *podRunner) stop(grace time.Duration) {
	r.mu.Lock()
	all := append(append([]*containerRunner{}, r.inits...), r.containers...)
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range all {
		wg.Add(1)
		go func() { defer wg.Done(); c.kill(grace) }()
	}
	wg.Wait()
	if r.cancel != nil {
		r.cancel()
	}
	<-r.done
}

// prepareVolumes turns the pod's volumes into directories; it fails, and the pod waits, while a
// volume's source is missing (a ConfigMap, a Secret, a claim not bound yet).
func (r *podRunner) prepareVolumes() error {
	mounts := map[string]string{}
	ctx := r.ctx
	for _, v := range r.pod.Spec.Volumes {
		dir := filepath.Join(r.dir, "volumes", v.Name)
		switch {
		case v.HostPath != nil:
			dir = r.a.hostPathDir(v.HostPath.Path)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		case v.PersistentVolumeClaim != nil:
			claimDir, err := r.a.claimDir(ctx, r.pod.Namespace, v.PersistentVolumeClaim.ClaimName)
			if err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
			dir = claimDir
		case v.ConfigMap != nil:
			cm, err := r.a.client.CoreV1().ConfigMaps(r.pod.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && v.ConfigMap.Optional != nil && *v.ConfigMap.Optional {
				cm = &corev1.ConfigMap{}
			} else if err != nil {
				return fmt.Errorf("volume %s: configmap %q: %w", v.Name, v.ConfigMap.Name, err)
			}
			files := map[string][]byte{}
			for k, val := range cm.Data {
				files[k] = []byte(val)
			}
			for k, val := range cm.BinaryData {
				files[k] = val
			}
			if err := writeVolumeFiles(dir, files, v.ConfigMap.Items); err != nil {
				return err
			}
		case v.Secret != nil:
			s, err := r.a.client.CoreV1().Secrets(r.pod.Namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && v.Secret.Optional != nil && *v.Secret.Optional {
				s = &corev1.Secret{}
			} else if err != nil {
				return fmt.Errorf("volume %s: secret %q: %w", v.Name, v.Secret.SecretName, err)
			}
			if err := writeVolumeFiles(dir, s.Data, v.Secret.Items); err != nil {
				return err
			}
		case v.Projected != nil && r.runsProcesses():
			if err := r.writeProjected(ctx, dir, v.Projected); err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
		default: // emptyDir, projected service account tokens, downward API: a directory
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		mounts[v.Name] = dir
	}
	r.mu.Lock()
	r.mounts = mounts
	r.mu.Unlock()
	return nil
}

func writeVolumeFiles(dir string, files map[string][]byte, items []corev1.KeyToPath) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	paths := map[string]string{}
	for k := range files {
		paths[k] = k
	}
	if len(items) > 0 {
		paths = map[string]string{}
		for _, it := range items {
			paths[it.Key] = it.Path
		}
	}
	for key, rel := range paths {
		data, ok := files[key]
		if !ok {
			continue
		}
		p := filepath.Join(dir, filepath.Clean("/"+rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// reportStatus patches the pod status whenever it changes.
func (r *podRunner) reportStatus() {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-tick.C:
			r.patchStatus()
		}
	}
}

func (r *podRunner) patchStatus() {
	status := r.status()
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return
	}
	r.mu.Lock()
	unchanged := string(body) == r.lastPatch
	r.mu.Unlock()
	if unchanged {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = r.a.client.CoreV1().Pods(r.pod.Namespace).Patch(ctx, r.pod.Name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
	if err != nil {
		if !apierrors.IsNotFound(err) {
			r.logf("status: %v", err)
		}
		return
	}
	r.mu.Lock()
	r.lastPatch = string(body)
	r.mu.Unlock()
}

// status computes the pod status a kubelet would report.
func (r *podRunner) status() corev1.PodStatus {
	r.mu.Lock()
	waiting, failed := r.waiting, r.failed
	inits, containers := r.inits, r.containers
	r.mu.Unlock()

	st := corev1.PodStatus{
		HostIP: "127.0.0.1", HostIPs: []corev1.HostIP{{IP: "127.0.0.1"}},
		PodIP: r.ip, PodIPs: []corev1.PodIP{{IP: r.ip}},
		StartTime: &r.startTime, QOSClass: r.pod.Status.QOSClass,
	}
	initsDone := len(inits) == len(r.pod.Spec.InitContainers)
	for i, c := range r.pod.Spec.InitContainers {
		if i < len(inits) {
			s := inits[i].status()
			st.InitContainerStatuses = append(st.InitContainerStatuses, s)
			initsDone = initsDone && s.State.Terminated != nil && s.State.Terminated.ExitCode == 0
		} else {
			st.InitContainerStatuses = append(st.InitContainerStatuses, pendingStatus(c, waiting, "PodInitializing"))
		}
	}
	allReady, allRunning, anyFailed, allSucceeded := true, true, false, true
	for i, c := range r.pod.Spec.Containers {
		var s corev1.ContainerStatus
		if i < len(containers) {
			s = containers[i].status()
		} else {
			s = pendingStatus(c, waiting, "PodInitializing")
		}
		st.ContainerStatuses = append(st.ContainerStatuses, s)
		allReady = allReady && s.Ready
		allRunning = allRunning && s.State.Running != nil
		if t := s.State.Terminated; t != nil {
			anyFailed = anyFailed || t.ExitCode != 0
			allSucceeded = allSucceeded && t.ExitCode == 0
		} else {
			allSucceeded = false
		}
	}
	policy := r.pod.Spec.RestartPolicy
	switch {
	case failed != "":
		st.Phase, st.Reason, st.Message = corev1.PodFailed, "InitContainerFailed", failed
	case allSucceeded && policy != corev1.RestartPolicyAlways:
		st.Phase = corev1.PodSucceeded
	case anyFailed && policy == corev1.RestartPolicyNever:
		st.Phase = corev1.PodFailed
	case initsDone && len(containers) > 0:
		st.Phase = corev1.PodRunning
	default:
		st.Phase = corev1.PodPending
	}
	now := metav1.Now()
	cond := func(t corev1.PodConditionType, ok bool) corev1.PodCondition {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, LastTransitionTime: now}
		if ok {
			c.Status = corev1.ConditionTrue
		}
		for _, old := range r.pod.Status.Conditions {
			if old.Type == t && old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		return c
	}
	ready := allReady && allRunning && st.Phase == corev1.PodRunning
	st.Conditions = []corev1.PodCondition{
		cond(corev1.PodReadyToStartContainers, waiting == nil),
		cond(corev1.PodInitialized, initsDone),
		cond(corev1.ContainersReady, ready),
		cond(corev1.PodReady, ready),
		cond(corev1.PodScheduled, true),
	}
	// LastTransitionTime is remembered through the pod copy, so unchanged conditions compare equal.
	r.mu.Lock()
	r.pod.Status.Conditions = st.Conditions
	r.mu.Unlock()
	sort.SliceStable(st.Conditions, func(i, j int) bool { return st.Conditions[i].Type < st.Conditions[j].Type })
	return st
}

func pendingStatus(c corev1.Container, waiting *corev1.ContainerStateWaiting, fallback string) corev1.ContainerStatus {
	w := corev1.ContainerStateWaiting{Reason: fallback}
	if waiting != nil {
		w = *waiting
	}
	return corev1.ContainerStatus{Name: c.Name, Image: c.Image, State: corev1.ContainerState{Waiting: &w}}
}

// mountFor maps a container path to its local directory through the container's mounts;
// ok is false when the path is not under a mount.
func (r *podRunner) pathMap(c corev1.Container) []pathRewrite {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []pathRewrite
	for _, m := range c.VolumeMounts {
		dir, ok := r.mounts[m.Name]
		if !ok {
			continue
		}
		if m.SubPath != "" {
			dir = filepath.Join(dir, filepath.Clean("/"+m.SubPath))
		}
		out = append(out, pathRewrite{from: strings.TrimSuffix(m.MountPath, "/"), to: dir})
	}
	return out
}
