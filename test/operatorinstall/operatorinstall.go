// Package operatorinstall builds the operator's kustomize installs (config/default, its
// profiles and overlays of them) as `kustomize build` does, and installs one on a local cluster
// as `make deploy` does: the objects applied server-side by kubectl, the operator's pods run by
// the node agent from the manager built from ./cmd in place of the image they name. Test code
// only.
package operatorinstall

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/flink-operator/flink-operator/test/nodeagent"
)

// Install is one kustomize build: its objects in kustomize's order, the operator's Deployment
// among them, and the flags of the operator's container.
type Install struct {
	Objects    []*unstructured.Unstructured
	Deployment *appsv1.Deployment
	// Flags are the operator container's --name=value arguments.
	Flags map[string]string
}

// Build builds the kustomization in dir as `kustomize build dir` does, in its order.
func Build(dir string) (Install, error) {
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy // the kustomize command's order: namespaces and CRDs first
	res, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return Install{}, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	in := Install{Flags: map[string]string{}}
	for _, r := range res.Resources() {
		// Through JSON: kustomize's maps hold Go ints, which unstructured cannot deep-copy.
		data, err := r.MarshalJSON()
		if err != nil {
			return Install{}, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		o := &unstructured.Unstructured{}
		if err := json.Unmarshal(data, &o.Object); err != nil {
			return Install{}, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		in.Objects = append(in.Objects, o)
		if o.GetKind() == "Deployment" {
			if in.Deployment != nil {
				return Install{}, fmt.Errorf("kustomize build %s: more than one Deployment", dir)
			}
			in.Deployment = &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, in.Deployment); err != nil {
				return Install{}, fmt.Errorf("%s: %w", r.CurId(), err)
			}
		}
	}
	if in.Deployment == nil || len(in.Deployment.Spec.Template.Spec.Containers) == 0 {
		return Install{}, fmt.Errorf("kustomize build %s: no operator Deployment", dir)
	}
	for _, a := range in.Manager().Args {
		if name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "="); ok {
			in.Flags[name] = value
		}
	}
	return in, nil
}

// Manager is the operator's container: the Deployment's first, which config/default's patches
// address by index (overlays may rename it).
func (in Install) Manager() corev1.Container { return in.Deployment.Spec.Template.Spec.Containers[0] }

// Namespace is the operator's namespace.
func (in Install) Namespace() string { return in.Deployment.Namespace }

// Get returns the object of kind and name, or nil.
func (in Install) Get(kind, name string) *unstructured.Unstructured {
	for _, o := range in.Objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// All returns the objects of kind.
func (in Install) All(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range in.Objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// ProcessImages are the node agent's images for the install (localenv.Options.ProcessImages):
// the operator's image runs manager, a binary built from ./cmd (kubeenv.BuildOperator), with
// the Deployment's arguments.
func (in Install) ProcessImages(manager string) map[string]nodeagent.ProcessImage {
	return map[string]nodeagent.ProcessImage{in.Manager().Image: {Binary: manager,
		// Every replica's webhook server would bind :9443 on all addresses of the machine.
		PortFlags: map[int32]string{9443: "--webhook-port=%d"},
		// Processes cannot resolve Service names (no cluster DNS on this machine), so the
		// operator addresses JobManagers by pod IP.
		Args: []string{"--flink-rest-address=pod-ip"}}}
}

// Apply applies objs as `kubectl apply --server-side -f -` does, with kubectl (a path) against
// the cluster of kubeconfig; args are more of kubectl apply's flags (-n, --force-conflicts).
func Apply(ctx context.Context, kubectl, kubeconfig string, objs []*unstructured.Unstructured, args ...string) error {
	var stream bytes.Buffer
	for _, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
		stream.WriteString("---\n")
		stream.Write(data)
	}
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig, "apply", "--server-side", "-f", "-"}, args...)...)
	cmd.Stdin = &stream
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl apply --server-side: %w: %s", err, out)
	}
	return nil
}

// Ready tells whether the operator's Deployment has rolled out: its current generation observed,
// every replica of it updated and ready.
func (in Install) Ready(ctx context.Context, c client.Client) (bool, error) {
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKeyFromObject(in.Deployment), &d); err != nil {
		return false, err
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas == want &&
		d.Status.ReadyReplicas == want && d.Status.Replicas == want, nil
}
