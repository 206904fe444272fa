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
func (r *FlinkDeploymentReconciler) haStore(s *scope, conf native.Config) (hastore.Store, error) {
	return hastore.For(conf, r.Client, s.dep.Namespace, s.dep.Name, r.ZooKeeper)
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
