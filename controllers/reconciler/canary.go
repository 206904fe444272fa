package reconciler

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flink-operator/flink-operator/pkg/validation"
)

// skipCanary says whether obj is a canary resource (label flink.apache.org/canary=true), which
// the reconcilers leave alone. Upstream's CanaryResourceManager uses canaries only to tell
// that the operator reconciles: they have no spec to deploy (upstream's examples/canary.yaml
// has none), so reconciling one would only fail validation and emit an error event on every
// reconcile. No finalizer, no status, no events; a finalizer an earlier version of this
// operator added is removed, so the canary can be deleted.
func skipCanary(ctx context.Context, c client.Client, obj client.Object, finalizer string) (bool, error) {
	if !validation.IsCanary(obj.GetLabels()) {
		return false, nil
	}
	if controllerutil.RemoveFinalizer(obj, finalizer) {
		if err := c.Update(ctx, obj); err != nil {
			return true, fmt.Errorf("remove the finalizer of canary %s: %w", obj.GetName(), err)
		}
	}
	log.FromContext(ctx).V(1).Info("canary resource: not reconciled", "name", obj.GetName())
	return true, nil
}
