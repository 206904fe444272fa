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
func HAConfigMaps(ctx context.Context, c client.Reader, namespace, cluster string) ([]corev1.ConfigMap, error) {
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{LabelApp: cluster}); err != nil {
		return nil, fmt.Errorf("list HA ConfigMaps of %s/%s: %w", namespace, cluster, err)
	}
	var out []corev1.ConfigMap
	for _, cm := range list.Items {
		if IsHAConfigMap(&cm) {
			out = append(out, cm)
		}
	}
	return out, nil
}

// IsHAConfigMap tells an HA ConfigMap of the cluster its app label names (see HAConfigMaps).
func IsHAConfigMap(cm *corev1.ConfigMap) bool {
	cluster := cm.Labels[LabelApp]
	if cluster == "" {
		return false
	}
	flinks := cm.Labels[LabelConfigMapType] == ConfigMapTypeHA || cm.Labels[LabelType] == TypeNative
	named := strings.HasPrefix(cm.Name, cluster+"-") && (strings.HasSuffix(cm.Name, "-config-map") || strings.HasSuffix(cm.Name, "-leader"))
	return flinks && named
}

// IsHAKeyRead tells the keys of HA ConfigMaps the operator reads: job graphs (execution plans)
// and checkpoint pointers, and of them only the keys, never the values (the serialized state
// handles Flink writes). The caches keep nothing else of HA ConfigMaps (pkg/cachescope).
func IsHAKeyRead(key string) bool {
	return isJobGraphKey(key) || strings.HasPrefix(key, haCheckpointKeyPrefix)
}

// DeleteHAConfigMaps deletes a cluster's HA ConfigMaps (HAConfigMaps); DeleteCluster does it
// with the cluster unless asked to keep them.
func DeleteHAConfigMaps(ctx context.Context, c client.Client, namespace, cluster string) error {
	return deleteHAConfigMaps(ctx, c, namespace, cluster)
}

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

// HAClusterConfigMapName is the HA ConfigMap holding a cluster's job graphs (Flink 1.15+).
func HAClusterConfigMapName(cluster string) string { return cluster + "-cluster-config-map" }

// DeleteJobGraphs removes the job graphs from a cluster's Kubernetes HA metadata and keeps the
// checkpoint pointers. A last-state redeploy needs it: a JobManager finding a job graph in HA
// recovers that graph, so a changed parallelism or job configuration would be silently
// dropped; without it, the application submits its new graph under the same job id and Flink
// restores the job's latest checkpoint from the HA checkpoint store. Call it only while no
// JobManager of the cluster runs (it would write the graph again). Idempotent.
//
// Flink 1.15+ keeps the graphs in "<cluster>-cluster-config-map"; every HA ConfigMap of the
// cluster is cleaned, as upstream does, so a graph left where older versions kept it (the
// dispatcher's leader ConfigMap) cannot be recovered either. Each ConfigMap is updated with
// the resourceVersion it was read at and read again on a conflict, so an entry another writer
// added meanwhile is never overwritten.
func DeleteJobGraphs(ctx context.Context, c client.Client, namespace, cluster string) error {
	list, err := HAConfigMaps(ctx, c, namespace, cluster)
	if err != nil {
		return err
	}
	for i := range list {
		if !hasJobGraph(list[i].Data) {
			continue
		}
		if err := deleteJobGraphsOf(ctx, c, client.ObjectKeyFromObject(&list[i])); err != nil {
			return err
		}
	}
	return nil
}

// deleteJobGraphsOf removes the job graph keys of one ConfigMap, reading it afresh on every
// attempt: the patch names only the keys it removes, with the resourceVersion read, so a
// concurrent writer makes it conflict and the removal is done again on what that writer left.
// A patch, not an update: the copy read may be the cache's, which keeps the keys only
// (pkg/cachescope), and an update would write its empty values back.
func deleteJobGraphsOf(ctx context.Context, c client.Client, key client.ObjectKey) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, key, cm); err != nil {
			return err
		}
		if !hasJobGraph(cm.Data) {
			return nil
		}
		patch := client.MergeFromWithOptions(cm.DeepCopy(), client.MergeFromWithOptimisticLock{})
		for k := range cm.Data {
			if isJobGraphKey(k) {
				delete(cm.Data, k)
			}
		}
		return c.Patch(ctx, cm, patch)
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove the job graphs from HA ConfigMap %s: %w", key, err)
	}
	return nil
}

// isJobGraphKey: Flink 1.x stores a job's graph under "jobGraph-<job id>", Flink 2.x its
// execution plan under "executionPlan-<job id>".
func isJobGraphKey(key string) bool {
	return strings.HasPrefix(key, haJobGraphKeyPrefix) || strings.HasPrefix(key, haExecutionPlanKeyPrefix)
}

func hasJobGraph(data map[string]string) bool {
	for k := range data {
		if isJobGraphKey(k) {
			return true
		}
	}
	return false
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
		if !cm.DeletionTimestamp.IsZero() {
			continue // going: it cannot be restored from (upstream skips it too)
		}
		for k := range cm.Data {
			if strings.HasPrefix(k, haCheckpointKeyPrefix) {
				return true, nil
			}
		}
	}
	return false, nil
}

// JobHAConfigMapName is the ConfigMap Flink's Kubernetes HA services keep a job's checkpoint
// pointers and counter in. Flink deletes it last when it cleans up after the job ends for good
// (stopped with a savepoint, cancelled, finished).
func JobHAConfigMapName(cluster, jobID string) string {
	return cluster + "-" + jobID + "-config-map"
}

// HAConfigMapExists tells whether the named HA ConfigMap of the cluster exists, as c (the
// cache) sees it: listed through the cluster's label, so a ConfigMap gone costs no request.
func HAConfigMapExists(ctx context.Context, c client.Reader, namespace, cluster, name string) (bool, error) {
	list, err := HAConfigMaps(ctx, c, namespace, cluster)
	if err != nil {
		return false, err
	}
	for i := range list {
		if list[i].Name == name && list[i].DeletionTimestamp.IsZero() {
			return true, nil
		}
	}
	return false, nil
}
