// Package hastore reads and deletes the metadata Flink's high-availability services keep for a
// cluster, wherever the cluster's configuration says they keep it: in Kubernetes ConfigMaps
// (high-availability.type: kubernetes) or in ZooKeeper (high-availability.type: zookeeper, or
// the legacy high-availability: zookeeper). The reconcilers call one Store and do not care which.
//
// What the operator needs from that metadata is what upstream's FlinkService needs: whether a
// job can be recovered from it (last-state upgrades, recovery of a lost JobManager, rollback),
// whether it points at a completed checkpoint (the last-state sentinel), removing the job graphs
// before a last-state redeploy (so the new spec's graph runs), and deleting it all when the job
// must not come back (stateless upgrade, savepoint redeploy, deletion).
package hastore

import (
	"context"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/native"
)

// Store is where a cluster's HA metadata lives.
type Store interface {
	// HasJobMetadata reports whether metadata a job can be recovered from exists: a job graph
	// or a job's checkpoint pointers. Leader election entries alone hold no job state.
	HasJobMetadata(ctx context.Context) (bool, error)
	// HasCheckpoint reports whether the metadata points at a completed checkpoint of a job.
	HasCheckpoint(ctx context.Context) (bool, error)
	// DeleteJobGraphs removes the job graphs (Flink 2.x: execution plans) and keeps the
	// checkpoint pointers. Call it only while no JobManager of the cluster runs.
	DeleteJobGraphs(ctx context.Context) error
	// Delete removes all the cluster's HA metadata. Call it only once no JobManager of the
	// cluster runs, or the JobManager writes it again.
	Delete(ctx context.Context) error
}

// Kind names a Store implementation, for logs and errors.
type Kind string

const (
	// KindKubernetes keeps the metadata in ConfigMaps of the cluster's namespace.
	KindKubernetes Kind = "kubernetes"
	// KindZooKeeper keeps it in znodes below high-availability.zookeeper.path.root.
	KindZooKeeper Kind = "zookeeper"
)

// KindOf tells where a cluster with this configuration keeps its HA metadata. Flink reads
// high-availability.type, then the deprecated high-availability; ZooKeeper is named
// "zookeeper" in any letter case. Everything else (kubernetes, a factory class) is taken as
// Kubernetes HA, as the operator always did.
func KindOf(conf flinkconf.Config) Kind {
	mode := conf.Get("high-availability.type", conf.Get("high-availability", conf.Get("recovery.mode", "")))
	if strings.EqualFold(strings.TrimSpace(mode), "zookeeper") {
		return KindZooKeeper
	}
	return KindKubernetes
}

// For returns the Store of a cluster with configuration conf (its effective Flink
// configuration: high-availability.cluster-id is set there). c reads and writes the HA
// ConfigMaps; zk is the operator's policy for ZooKeeper quorums, which the tenant names.
// jobIDs are the jobs the operator recorded for the cluster: in ZooKeeper, whose paths are not
// namespaced, only their metadata is deleted (Kubernetes HA ConfigMaps are the namespace's).
func For(conf flinkconf.Config, c client.Client, namespace, cluster string, jobIDs []string, zk ZooKeeperPolicy) (Store, error) {
	if KindOf(conf) == KindZooKeeper {
		return newZooKeeper(conf, cluster, jobIDs, zk)
	}
	return &ConfigMaps{Client: c, Namespace: namespace, Cluster: cluster}, nil
}

// ConfigMaps is Kubernetes HA: the HA ConfigMaps pkg/native finds by Flink's labels and names.
type ConfigMaps struct {
	Client    client.Client
	Namespace string
	Cluster   string
}

// HasJobMetadata implements Store.
func (s *ConfigMaps) HasJobMetadata(ctx context.Context) (bool, error) {
	return native.HasHAData(ctx, s.Client, s.Namespace, s.Cluster)
}

// HasCheckpoint implements Store.
func (s *ConfigMaps) HasCheckpoint(ctx context.Context) (bool, error) {
	return native.HasHACheckpoint(ctx, s.Client, s.Namespace, s.Cluster)
}

// DeleteJobGraphs implements Store.
func (s *ConfigMaps) DeleteJobGraphs(ctx context.Context) error {
	return native.DeleteJobGraphs(ctx, s.Client, s.Namespace, s.Cluster)
}

// Delete implements Store. native.DeleteCluster already deletes the HA ConfigMaps with the
// cluster unless asked to keep them; this is for a caller that deletes them on their own.
func (s *ConfigMaps) Delete(ctx context.Context) error {
	return native.DeleteHAConfigMaps(ctx, s.Client, s.Namespace, s.Cluster)
}
