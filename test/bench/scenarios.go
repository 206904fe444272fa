package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// Responsiveness is how soon the operator acted on a spec change made to one resource while
// the others were still being created and deployed.
type Responsiveness struct {
	// DeployedWhenChanged is how many JobManager Deployments existed when the spec changed.
	DeployedWhenChanged int `json:"deployedWhenChanged"`
	// ActedOn is the time from the update returning to the status recording the new
	// generation (the upgrade's first, write-ahead step); zero when it did not within the run.
	ActedOn time.Duration `json:"actedOnNanos"`
}

// probeSpecChange changes the parallelism of FlinkDeployment name (already deployed) and waits,
// polling the API server, until the operator records the new generation in its status.
func probeSpecChange(ctx context.Context, c client.Client, name string, deployed int, timeout time.Duration) (Responsiveness, error) {
	r := Responsiveness{DeployedWhenChanged: deployed}
	fd := &flinkv1beta1.FlinkDeployment{}
	key := client.ObjectKey{Namespace: benchNS, Name: name}
	if err := c.Get(ctx, key, fd); err != nil {
		return r, err
	}
	patch := client.MergeFrom(fd.DeepCopy())
	fd.Spec.Job.Parallelism++
	if err := c.Patch(ctx, fd, patch); err != nil {
		return r, fmt.Errorf("change the spec of %s: %w", name, err)
	}
	changed, generation := time.Now(), fd.Generation
	for time.Since(changed) < timeout {
		if err := c.Get(ctx, key, fd); err != nil {
			return r, err
		}
		if fd.Status.ObservedGeneration >= generation {
			r.ActedOn = time.Since(changed)
			return r, nil
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return r, nil
}

// clusterSample is what the operator wrote for one FlinkDeployment: its status and the
// objects of its cluster. The full limit run writes copies of them.
type clusterSample struct {
	status     flinkv1beta1.FlinkDeploymentStatus
	jobManager *appsv1.Deployment
	dependents []client.Object
}

func readSample(ctx context.Context, c client.Client, name string) (*clusterSample, error) {
	fd := &flinkv1beta1.FlinkDeployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: benchNS, Name: name}, fd); err != nil {
		return nil, err
	}
	s := &clusterSample{status: fd.Status, jobManager: &appsv1.Deployment{}}
	if err := c.Get(ctx, client.ObjectKey{Namespace: benchNS, Name: name}, s.jobManager); err != nil {
		return nil, err
	}
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.InNamespace(benchNS), client.MatchingLabels{"app": name}); err != nil {
		return nil, err
	}
	var svcs corev1.ServiceList
	if err := c.List(ctx, &svcs, client.InNamespace(benchNS), client.MatchingLabels{"app": name}); err != nil {
		return nil, err
	}
	for i := range cms.Items {
		s.dependents = append(s.dependents, &cms.Items[i])
	}
	for i := range svcs.Items {
		s.dependents = append(s.dependents, &svcs.Items[i])
	}
	if len(s.dependents) == 0 {
		return nil, fmt.Errorf("no ConfigMap or Service labelled app=%s", name)
	}
	return s, nil
}

// fullLimitWork does for FlinkDeployment i, without an operator, every write the operator does
// for a new one, in its order: the FlinkDeployment's create (the user's), the finalizer, the
// write-ahead status, the JobManager Deployment, its dependents together, the event, the final
// status. It is the API server's speed for the work itself.
//
// It returns when the FlinkDeployment's create returned, from which its JobManager is timed.
func (s *clusterSample) fullLimitWork(ctx context.Context, c client.Client, ns string, i int) (time.Time, error) {
	fd, err := flinkDeployment(i)
	if err != nil {
		return time.Time{}, err
	}
	fd.Namespace = ns
	if err := c.Create(ctx, fd); err != nil {
		return time.Time{}, err
	}
	created := time.Now()
	if err := s.operatorWrites(ctx, c, fd); err != nil {
		return created, err
	}
	return created, nil
}

// operatorWrites are the writes the operator makes for the new FlinkDeployment fd.
func (s *clusterSample) operatorWrites(ctx context.Context, c client.Client, fd *flinkv1beta1.FlinkDeployment) error {
	ns := fd.Namespace
	fd.Finalizers = append(fd.Finalizers, "flinkdeployments.flink.apache.org/finalizer")
	if err := c.Update(ctx, fd); err != nil {
		return err
	}
	for _, state := range []flinkv1beta1.ReconciliationState{flinkv1beta1.ReconciliationUpgrading, ""} {
		before := fd.DeepCopy()
		fd.Status = *s.status.DeepCopy()
		if state != "" {
			fd.Status.ReconciliationStatus.State = state
		}
		if err := c.Status().Patch(ctx, fd, client.MergeFrom(before)); err != nil {
			return err
		}
		if state == "" {
			break
		}
		jm := copyForLimit(s.jobManager, ns, fd.Name, fd.Name, metav1.OwnerReference{
			APIVersion: flinkv1beta1.GroupVersion.String(), Kind: "FlinkDeployment", Name: fd.Name, UID: fd.UID})
		if err := applyCopy(ctx, c, jm); err != nil {
			return err
		}
		owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: jm.GetName(), UID: jm.GetUID()}
		var wg sync.WaitGroup
		errs := make([]error, len(s.dependents))
		for k, d := range s.dependents {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[k] = applyCopy(ctx, c, copyForLimit(d, ns, fd.Name, renamed(d.GetName(), s.jobManager.Name, fd.Name), owner))
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: fd.Name + ".", Namespace: ns},
			InvolvedObject: corev1.ObjectReference{APIVersion: flinkv1beta1.GroupVersion.String(), Kind: "FlinkDeployment",
				Name: fd.Name, Namespace: ns, UID: fd.UID},
			Reason: "Submit", Message: "Starting deployment", Type: corev1.EventTypeNormal,
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
			Source: corev1.EventSource{Component: "bench-limit"}}
		if err := c.Create(ctx, ev); err != nil {
			return err
		}
	}
	return nil
}

// renamed replaces the sample cluster's name in an object name with another cluster's.
func renamed(objName, from, to string) string {
	for i := 0; i+len(from) <= len(objName); i++ {
		if objName[i:i+len(from)] == from {
			return objName[:i] + to + objName[i+len(from):]
		}
	}
	return objName
}

// copyForLimit is obj under another name and namespace, labelled for cluster, owned by owner,
// without what the API server set on the original.
func copyForLimit(obj client.Object, ns, cluster, name string, owner metav1.OwnerReference) client.Object {
	out := obj.DeepCopyObject().(client.Object)
	out.SetNamespace(ns)
	out.SetName(name)
	out.SetUID("")
	out.SetResourceVersion("")
	out.SetCreationTimestamp(metav1.Time{})
	out.SetManagedFields(nil)
	out.SetGeneration(0)
	labels := map[string]string{}
	for k, v := range out.GetLabels() {
		labels[k] = v
	}
	labels["app"] = cluster
	out.SetLabels(labels)
	out.SetOwnerReferences([]metav1.OwnerReference{owner})
	switch o := out.(type) {
	case *corev1.Service:
		if o.Spec.ClusterIP != corev1.ClusterIPNone { // a headless Service stays headless
			o.Spec.ClusterIP, o.Spec.ClusterIPs = "", nil
		}
		o.Status = corev1.ServiceStatus{}
	case *appsv1.Deployment:
		o.Status = appsv1.DeploymentStatus{}
	}
	return out
}

// applyCopy writes obj with server-side apply, as the operator does.
func applyCopy(ctx context.Context, c client.Client, obj client.Object) error {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	raw, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj, client.RawPatch(types.ApplyPatchType, raw), client.FieldOwner("bench-limit"), client.ForceOwnership)
}

const (
	fullLimitNS = "bench-limit-full"
	unrelatedNS = "bench-unrelated"
)

// runLimits measures the two limits, one after the other, with the operator stopped: the same
// N JobManager Deployments created by a plain client (the Deployments-only limit), and the
// same N FlinkDeployments with every write the operator makes for each (the full limit).
func runLimits(ctx context.Context, c client.Client, cfg *rest.Config, o Options, template *appsv1.Deployment,
	sample *clusterSample, res *Result, logf func(string, ...any)) error {
	logf("limit: %d Deployments straight through the API server", o.N)
	cp0, err := controlPlaneCPU()
	if err != nil {
		return err
	}
	limit, _, err := timeCreation(ctx, cfg, limitNS, o, func(ctx context.Context, i int) (string, time.Time, error) {
		d := limitDeployment(template, i)
		err := c.Create(ctx, d)
		return d.Name, time.Now(), err
	}, func(d *appsv1.Deployment) (string, bool) { return d.Name, true }, nil)
	if err != nil {
		return fmt.Errorf("limit run: %w", err)
	}
	res.Limit = limit
	cp1, err := controlPlaneCPU()
	if err != nil {
		return err
	}
	res.ControlPlaneCPULimitSeconds = cp1 - cp0

	logf("full limit: %d FlinkDeployments and every write the operator makes for them, by a plain client", o.N)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fullLimitNS}}); err != nil {
		return err
	}
	full, _, err := timeCreation(ctx, cfg, fullLimitNS, o, func(ctx context.Context, i int) (string, time.Time, error) {
		created, err := sample.fullLimitWork(ctx, c, fullLimitNS, i)
		return fmt.Sprintf("fd-%05d", i), created, err
	}, func(d *appsv1.Deployment) (string, bool) { return d.Name, true }, nil)
	if err != nil {
		return fmt.Errorf("full limit run: %w", err)
	}
	res.FullLimit = full
	cp2, err := controlPlaneCPU()
	if err != nil {
		return err
	}
	res.ControlPlaneCPUFullLimitSeconds = cp2 - cp1
	return nil
}

// UnrelatedMemory compares the operator's memory after a restart on the N resources, without
// and then with many unrelated Pods and ConfigMaps in another namespace: its caches must hold
// Flink's objects only.
type UnrelatedMemory struct {
	Objects int `json:"objects"`
	// Without and With are the RSS (and its anonymous part) once the restarted operator's
	// requests stopped.
	WithoutMiB     float64 `json:"withoutMiB"`
	WithMiB        float64 `json:"withMiB"`
	WithoutAnonMiB float64 `json:"withoutAnonMiB"`
	WithAnonMiB    float64 `json:"withAnonMiB"`
}

func measureUnrelated(ctx context.Context, c client.Client, env *kubeenv.Env, bin, dir string, o Options,
	res *Result, logf func(string, ...any)) error {
	restartRSS := func() (mem, error) {
		op, err := startOperator(ctx, env, bin, dir, o.OperatorArgs...)
		if err != nil {
			return mem{}, err
		}
		defer op.stop()
		if _, err := op.waitQuiet(ctx, 5*time.Second, o.Settle); err != nil {
			return mem{}, err
		}
		return memory(op.cmd.Process.Pid)
	}
	logf("memory: restarting the operator on %d FlinkDeployments", o.N)
	without, err := restartRSS()
	if err != nil {
		return err
	}
	logf("memory: creating %d Pods and %d ConfigMaps in namespace %s", o.Unrelated, o.Unrelated, unrelatedNS)
	if err := createUnrelated(ctx, c, o.Unrelated, o.Concurrency); err != nil {
		return err
	}
	logf("memory: restarting the operator again")
	with, err := restartRSS()
	if err != nil {
		return err
	}
	res.Unrelated = &UnrelatedMemory{Objects: 2 * o.Unrelated, WithoutMiB: without.rssMiB, WithMiB: with.rssMiB,
		WithoutAnonMiB: without.anonMiB, WithAnonMiB: with.anonMiB}
	return nil
}

// createUnrelated creates n Pods and n ConfigMaps that are nothing of Flink's, like those of the
// other applications of a cluster: a few labels, a small spec, some data.
func createUnrelated(ctx context.Context, c client.Client, n, concurrency int) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: unrelatedNS}}); err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: unrelatedNS}}); err != nil {
		return err
	}
	data := map[string]string{"application.properties": string(make([]byte, 512))}
	jobs := make(chan int)
	errs := make(chan error, concurrency)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				labels := map[string]string{"app": fmt.Sprintf("web-%d", i%100), "tier": "frontend"}
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%05d", i), Namespace: unrelatedNS, Labels: labels},
					Spec: corev1.PodSpec{AutomountServiceAccountToken: ptrTo(false),
						Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}}}
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-config-%05d", i), Namespace: unrelatedNS, Labels: labels},
					Data: data}
				for _, obj := range []client.Object{pod, cm} {
					if err := c.Create(ctx, obj); err != nil {
						errs <- fmt.Errorf("unrelated %s: %w", obj.GetName(), err)
						return
					}
				}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for i := range n {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	return <-errs
}

func ptrTo[T any](v T) *T { return &v }
