package localenv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// OperatorNamespace is where the operator's ServiceAccount lives in the local environment, as
// config/default installs it.
const OperatorNamespace = "flink-operator-system"

// kustomizeNamespace is the placeholder namespace of config/rbac, which config/default replaces.
const kustomizeNamespace = "system"

// operatorIdentity installs the operator's ServiceAccount with exactly the RBAC of config/rbac
// (every file its kustomization lists, in the operator's namespace) and writes a kubeconfig that
// authenticates as that ServiceAccount with a token from the TokenRequest API. The operator run
// with it has the permissions a user installs, not the admin's, so a missing rule fails a test.
func (e *Env) operatorIdentity(ctx context.Context, root string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OperatorNamespace}}
	if err := e.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	objs, err := RBACObjects(root)
	if err != nil {
		return "", err
	}
	serviceAccount, err := serviceAccountOf(objs)
	if err != nil {
		return "", err
	}
	for _, o := range objs {
		if err := e.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("install %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return e.ServiceAccountKubeconfig(ctx, OperatorNamespace, serviceAccount, filepath.Join(e.Dir, "operator.kubeconfig"))
}

// ServiceAccountKubeconfig writes a kubeconfig to path that authenticates as the ServiceAccount
// namespace/name with a day-long token from the TokenRequest API, so a process run with it has
// that account's RBAC, not the admin's.
func (e *Env) ServiceAccountKubeconfig(ctx context.Context, namespace, name, path string) (string, error) {
	expiry := int64(24 * 60 * 60)
	token, err := e.Kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token of ServiceAccount %s/%s: %w", namespace, name, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: e.Cluster.Config.Host, InsecureSkipTLSVerify: true}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: name, Namespace: namespace}
	cfg.CurrentContext = "local"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", err
	}
	return path, nil
}

// RBACObjects are the objects of config/rbac as the local environment installs them: in the
// operator's namespace.
func RBACObjects(root string) ([]*unstructured.Unstructured, error) {
	return kustomizationObjects(filepath.Join(root, "config", "rbac"))
}

// OperatorUser is the user name the operator's requests carry: its ServiceAccount's.
func OperatorUser(root string) (string, error) {
	objs, err := RBACObjects(root)
	if err != nil {
		return "", err
	}
	sa, err := serviceAccountOf(objs)
	if err != nil {
		return "", err
	}
	return "system:serviceaccount:" + OperatorNamespace + ":" + sa, nil
}

func serviceAccountOf(objs []*unstructured.Unstructured) (string, error) {
	for _, o := range objs {
		if o.GetKind() == "ServiceAccount" {
			return o.GetName(), nil
		}
	}
	return "", fmt.Errorf("config/rbac has no ServiceAccount")
}

// kustomizationObjects reads the objects of the kustomization in dir (its resources list), moved from
// kustomize's placeholder namespace to the operator's.
func kustomizationObjects(dir string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		return nil, fmt.Errorf("%s/kustomization.yaml: %w", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, file := range k.Resources {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			o := &unstructured.Unstructured{}
			if err := dec.Decode(&o.Object); err == io.EOF {
				break
			} else if err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			if len(o.Object) == 0 {
				continue
			}
			if o.GetNamespace() == kustomizeNamespace {
				o.SetNamespace(OperatorNamespace)
			}
			if subjects, ok := o.Object["subjects"].([]any); ok {
				for _, s := range subjects {
					if m, ok := s.(map[string]any); ok && m["namespace"] == kustomizeNamespace {
						m["namespace"] = OperatorNamespace
					}
				}
			}
			out = append(out, o)
		}
	}
	return out, nil
}
