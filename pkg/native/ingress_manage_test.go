package native

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-operator/flink-operator/pkg/flinkconf"
)

// TestIngressManageFalse: with kubernetes.operator.ingress.manage false in the operator
// configuration (upstream's OPERATOR_MANAGE_INGRESS), a spec.ingress gets no Ingress, and an
// Ingress that exists under the cluster's name (the user's own) is neither changed nor deleted.
func TestIngressManageFalse(t *testing.T) {
	env := testEnv(t)
	ns := env.NewNamespace(t, "ingress-manage")
	ctx := context.Background()
	c := newWatchClient(t, env)
	dep := createDeployment(t, c, ns, nativeApp)
	unmanaged := flinkconf.Defaults{Operator: map[string]string{"kubernetes.operator.ingress.manage": "false"}}

	cluster, err := Build(dep, unmanaged, flinkconf.BuildOptions{JobID: "0000000000000000000000000000abcd"})
	require.NoError(t, err)
	assert.Nil(t, cluster.Ingress)
	require.NoError(t, Apply(ctx, c, c, cluster))
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, &appsv1.Deployment{}), "the cluster is deployed")
	var ingresses networkingv1.IngressList
	require.NoError(t, c.List(ctx, &ingresses, client.InNamespace(ns)))
	assert.Empty(t, ingresses.Items, "no Ingress is created")

	// The user's own Ingress for the cluster, owned by the FlinkDeployment as the operator's
	// would be: left alone when the spec no longer has spec.ingress.
	t.Run("an existing Ingress is left alone", func(t *testing.T) {
		managed, err := Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{JobID: "0000000000000000000000000000abcd"})
		require.NoError(t, err)
		require.NoError(t, Apply(ctx, c, c, managed))
		ing := &networkingv1.Ingress{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, ing))
		before := ing.ResourceVersion

		changed := dep.DeepCopy()
		changed.Spec.Ingress = nil
		next, err := Build(changed, unmanaged, flinkconf.BuildOptions{JobID: "0000000000000000000000000000abcd"})
		require.NoError(t, err)
		require.NoError(t, Apply(ctx, c, c, next))
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, ing), "not deleted")
		assert.Equal(t, before, ing.ResourceVersion, "not changed")
		assert.True(t, ing.DeletionTimestamp.IsZero())
	})
}
