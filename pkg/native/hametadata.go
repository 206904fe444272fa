package native

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What Flink's Kubernetes HA services keep in ConfigMaps, by the keys they write:
//   - "<cluster>-cluster-config-map" holds the submitted jobs' graphs, one key per job:
//     "jobGraph-<jobid>" (Flink 1.x) or "executionPlan-<jobid>" (Flink 2.x);
//   - "<cluster>-<jobid>-config-map" holds that job's completed checkpoint pointers,
//     "checkpointID-<id>" keys, and its checkpoint id counter.
const (
	haJobGraphKeyPrefix      = "jobGraph-"
	haExecutionPlanKeyPrefix = "executionPlan-"
	haCheckpointKeyPrefix    = "checkpointID-"
)

// HAConfigMaps lists the ConfigMaps Flink's Kubernetes HA services wrote for a cluster. They are
// told apart by their labels and names, as Flink writes them: the cluster's app label with
// Flink's type label (configmap-type=high-availability on Flink 1.x, which 2.x no longer
// writes), and a name "<cluster>-cluster-config-map", "<cluster>-<job id>-config-map" or a
// legacy "<cluster>-...-leader". The operator's own ConfigMaps of the cluster (its
// configuration, its pod template) never match.
func HAConfigMaps(ctx context.Context, c client.Client, namespace, cluster string) ([]corev1.ConfigMap, error) {
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{LabelApp: cluster}); err != nil {
		return nil, fmt.Errorf("list HA ConfigMaps of %s/%s: %w", namespace, cluster, err)
	}
	var out []corev1.ConfigMap
	for _, cm := range list.Items {
		flinks := cm.Labels[LabelConfigMapType] == ConfigMapTypeHA || cm.Labels[LabelType] == TypeNative
		named := strings.HasPrefix(cm.Name, cluster+"-") && (strings.HasSuffix(cm.Name, "-config-map") || strings.HasSuffix(cm.Name, "-leader"))
		if flinks && named {
			out = append(out, cm)
		}
	}
	return out, nil
}

// deleteHAConfigMaps deletes a cluster's HA ConfigMaps (HAConfigMaps).
func deleteHAConfigMaps(ctx context.Context, c client.Client, namespace, cluster string) error {
	list, err := HAConfigMaps(ctx, c, namespace, cluster)
	if err != nil {
		return err
	}
	for i := range list {
		if err := c.Delete(ctx, &list[i]); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete HA ConfigMap %s/%s: %w", namespace, list[i].Name, err)
		}
	}
	return nil
}

// HAClusterConfigMapName is the HA ConfigMap holding a cluster's job graphs.
func HAClusterConfigMapName(cluster string) string { return cluster + "-cluster-config-map" }

// DeleteJobGraphs removes the job graphs from a cluster's Kubernetes HA metadata and keeps the
// checkpoint pointers. A last-state redeploy needs it: a JobManager finding a job graph in HA
// recovers that graph, so a changed parallelism or job configuration would be silently
// dropped; without it, the application submits its new graph under the same job id and Flink
// restores the job's latest checkpoint from the HA checkpoint store. Call it only while no
// JobManager of the cluster runs (it would write the graph again). Idempotent.
func DeleteJobGraphs(ctx context.Context, c client.Client, namespace, cluster string) error {
	key := client.ObjectKey{Namespace: namespace, Name: HAClusterConfigMapName(cluster)}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, key, cm); err != nil {
			return err
		}
		changed := false
		for k := range cm.Data {
			if strings.HasPrefix(k, haJobGraphKeyPrefix) || strings.HasPrefix(k, haExecutionPlanKeyPrefix) {
				delete(cm.Data, k)
				changed = true
			}
		}
		if !changed {
			return nil
		}
		// An update carries the resourceVersion read: a concurrent writer makes it conflict
		// and the removal is done again on what that writer left.
		return c.Update(ctx, cm)
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove the job graphs from HA ConfigMap %s: %w", key, err)
	}
	return nil
}

// HasHACheckpoint reports whether a cluster's HA metadata points at a completed checkpoint of
// one of its jobs: then a last-state deploy restores it, and its restore path can be the
// last-state sentinel (a job whose HA metadata vanished then fails instead of starting empty).
func HasHACheckpoint(ctx context.Context, c client.Client, namespace, cluster string) (bool, error) {
	list, err := HAConfigMaps(ctx, c, namespace, cluster)
	if err != nil {
		return false, err
	}
	for _, cm := range list {
		for k := range cm.Data {
			if strings.HasPrefix(k, haCheckpointKeyPrefix) {
				return true, nil
			}
		}
	}
	return false, nil
}
