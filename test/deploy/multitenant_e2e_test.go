//go:build e2e

package deploy_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-operator/flink-operator/test/kubeenv"
	"github.com/flink-operator/flink-operator/test/localenv"
	"github.com/flink-operator/flink-operator/test/operatorinstall"
	"github.com/flink-operator/flink-operator/test/podnet"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestMultiTenantProfileOnCluster installs what `make deploy-multi-tenant` applies (kustomize
// build config/profiles/multi-tenant, applied server-side by kubectl) on the local cluster, the
// operator's pods running the manager built from ./cmd under the install's ServiceAccount and
// RBAC with its webhooks served through their Service, and the tenant ResourceQuota in a tenant
// namespace. The webhook refuses a FlinkDeployment with hostNetwork, one with a privileged
// container and one with an Ingress annotation outside the allowlist, each naming the field;
// it admits a well-behaved one; the quota refuses FlinkDeployments beyond its count.
//
// The local cluster has no network plugin, so the egress NetworkPolicy is stored but not
// enforced here (TestMultiTenantProfile checks what it selects).
func TestMultiTenantProfileOnCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	dir := t.TempDir()
	in := build(t, multiTenant)

	manager := filepath.Join(dir, "manager")
	require.NoError(t, kubeenv.BuildOperator(ctx, manager))
	env, err := localenv.Start(ctx, localenv.Options{Dir: dir, SkipCRDs: true, Pods: podnet.Current(),
		ProcessImages: in.ProcessImages(manager)})
	require.NoError(t, err)
	t.Cleanup(env.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			printOperatorLogs(t, dir, in.Namespace())
		}
	})
	kubectl := filepath.Join(localenv.KubeBinDir(root), "kubectl")
	kubectlApply := func(namespace string, objs []*unstructured.Unstructured) {
		t.Helper()
		var args []string
		if namespace != "" {
			args = append(args, "-n", namespace)
		}
		require.NoError(t, operatorinstall.Apply(ctx, kubectl, env.Cluster.Kubeconfig, objs, args...))
	}

	// make deploy-multi-tenant: kustomize build config/profiles/multi-tenant | kubectl apply --server-side -f -
	kubectlApply("", in.Objects)
	c := env.Client
	wait.Until(t, ctx, 3*time.Minute, "both operator replicas ready (certificate issued, webhooks served)", func() (bool, error) {
		return in.Ready(ctx, c)
	})
	logf(t, "operator ready after %s", time.Since(start).Round(time.Second))
	var np networkingv1.NetworkPolicy
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: in.Namespace(), Name: "flink-operator-controller-manager-egress"}, &np),
		"the egress NetworkPolicy is installed")

	// The tenant's namespace and quota: kustomize build config/profiles/multi-tenant/tenant |
	// kubectl apply -n team-a -f -, its FlinkDeployment count lowered to 1 so that two suffice.
	const tenant = "team-a"
	require.NoError(t, env.Namespace(ctx, tenant))
	quota := renderObjects(t, multiTenant+"/tenant")
	require.Len(t, quota, 1)
	require.NoError(t, unstructured.SetNestedField(quota[0].Object, "1", "spec", "hard", "count/flinkdeployments.flink.apache.org"))
	kubectlApply(tenant, quota)
	wait.Until(t, ctx, 3*time.Minute, "the quota's usage computed", func() (bool, error) {
		var q corev1.ResourceQuota
		if err := c.Get(ctx, client.ObjectKey{Namespace: tenant, Name: quota[0].GetName()}, &q); err != nil {
			return false, err
		}
		_, ok := q.Status.Used["count/flinkdeployments.flink.apache.org"]
		return ok, nil
	})

	t.Run("hostile FlinkDeployments refused naming the field", func(t *testing.T) {
		for _, h := range hostileDeployments(t) {
			h.dep.Namespace = tenant
			err := c.Create(ctx, h.dep)
			require.Error(t, err, h.name)
			assert.Contains(t, err.Error(), `admission webhook "vflinkdeployment-v1beta1.flink.apache.org" denied the request`, h.name)
			assert.Contains(t, err.Error(), h.field, h.name)
			assert.Contains(t, err.Error(), h.detail, h.name)
			logf(t, "%s: %v", h.name, err)
		}
	})

	t.Run("well-behaved FlinkDeployment admitted, the next beyond the quota refused", func(t *testing.T) {
		dep := wellBehaved(t)
		dep.Namespace = tenant
		require.NoError(t, c.Create(ctx, dep), "the webhooks admit a FlinkDeployment that meets baseline with an allowed annotation")
		second := wellBehaved(t)
		second.Namespace = tenant
		second.Name = "second"
		err := c.Create(ctx, second)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "exceeded quota")
		assert.Contains(t, err.Error(), "count/flinkdeployments.flink.apache.org")
	})

	t.Run("no request of the operator was refused", func(t *testing.T) {
		logs := operatorLogs(t, dir, in.Namespace())
		require.Len(t, logs, int(*in.Deployment.Spec.Replicas), "a log per replica")
		for path, content := range logs {
			for _, line := range strings.Split(content, "\n") {
				assert.NotContains(t, strings.ToLower(line), "forbidden", path)
			}
		}
	})
}
