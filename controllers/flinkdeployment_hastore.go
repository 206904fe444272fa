package controllers

import (
	"context"

	"github.com/flink-operator/flink-operator/pkg/hastore"
	"github.com/flink-operator/flink-operator/pkg/native"
)

// haStore is where the cluster of configuration conf keeps its HA metadata: its ConfigMaps
// (Kubernetes HA) or its ZooKeeper quorum, under the operator's ZooKeeper policy. Every read
// and deletion of HA metadata goes through it, so a ZooKeeper HA job is upgraded, recovered
// and deleted from its real metadata (upstream's isHaMetadataAvailable / deleteHAData).
// Its deletions are fenced by the leader lease (FlinkClients.Fence): a job's graphs or
// checkpoint pointers dropped by a replica that no longer leads could be those the new
// leader's JobManager is recovering from.
func (r *FlinkDeploymentReconciler) haStore(s *scope, conf native.Config) (hastore.Store, error) {
	store, err := hastore.For(conf, r.Client, s.dep.Namespace, s.dep.Name, r.ZooKeeper)
	if err != nil {
		return nil, err
	}
	return fencedStore{Store: store, flink: r.Flink, cluster: s.dep.Namespace + "/" + s.dep.Name}, nil
}

// fencedStore refuses the deletions of a Store while the leader lease is not held.
type fencedStore struct {
	hastore.Store
	flink   *FlinkClients
	cluster string
}

func (f fencedStore) DeleteJobGraphs(ctx context.Context) error {
	if err := f.flink.fenced(ctx, "delete the job graphs of the HA metadata of "+f.cluster); err != nil {
		return err
	}
	return f.Store.DeleteJobGraphs(ctx)
}

func (f fencedStore) Delete(ctx context.Context) error {
	if err := f.flink.fenced(ctx, "delete the HA metadata of "+f.cluster); err != nil {
		return err
	}
	return f.Store.Delete(ctx)
}

// deleteHAMetadata deletes the HA metadata of a cluster that is gone, where native.DeleteCluster
// does not: ConfigMaps went with the cluster, ZooKeeper's znodes are deleted here, only now
// that no JobManager writes them again. conf is nil when no spec was ever deployed: then
// there is no metadata either.
func (r *FlinkDeploymentReconciler) deleteHAMetadata(ctx context.Context, s *scope, conf native.Config) error {
	if conf == nil || !conf.HAEnabled() || hastore.KindOf(conf) != hastore.KindZooKeeper {
		return nil
	}
	store, err := r.haStore(s, conf)
	if err != nil {
		return err
	}
	return store.Delete(ctx)
}
