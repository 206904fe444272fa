package flinkdeployment

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/hastore"
)

// haStore is where the cluster of configuration conf keeps its HA metadata: its ConfigMaps
// (Kubernetes HA) or its ZooKeeper quorum, under the operator's ZooKeeper policy. Every read
// and deletion of HA metadata goes through it, so a ZooKeeper HA job is upgraded, recovered
// and deleted from its real metadata (upstream's isHaMetadataAvailable / deleteHAData).
// Its deletions are fenced by the leader lease (clients.Factory.Fence): a job's graphs or
// checkpoint pointers dropped by a replica that no longer leads could be those the new
// leader's JobManager is recovering from.
func (r *FlinkDeploymentReconciler) haStore(s *scope, conf flinkconf.Config) (hastore.Store, error) {
	store, err := hastore.For(conf, r.Client, s.dep.Namespace, s.dep.Name, recordedJobIDs(s), r.ZooKeeper)
	if err != nil {
		return nil, err
	}
	return fencedStore{Store: store, flink: r.Flink, cluster: s.dep.Namespace + "/" + s.dep.Name}, nil
}

// fencedStore refuses the deletions of a Store while the leader lease is not held.
type fencedStore struct {
	hastore.Store
	flink   *clients.Factory
	cluster string
}

func (f fencedStore) DeleteJobGraphs(ctx context.Context) error {
	if err := f.flink.Fenced(ctx, "delete the job graphs of the HA metadata of "+f.cluster); err != nil {
		return err
	}
	return f.Store.DeleteJobGraphs(ctx)
}

func (f fencedStore) Delete(ctx context.Context) error {
	if err := f.flink.Fenced(ctx, "delete the HA metadata of "+f.cluster); err != nil {
		return err
	}
	return f.Store.Delete(ctx)
}

// deleteHAMetadata deletes the HA metadata of a cluster that is gone, where native.DeleteCluster
// does not: ConfigMaps went with the cluster, ZooKeeper's znodes are deleted here, only now
// that no JobManager writes them again. conf is nil when no spec was ever deployed: then
// there is no metadata either.
func (r *FlinkDeploymentReconciler) deleteHAMetadata(ctx context.Context, s *scope, conf flinkconf.Config) error {
	if conf == nil || !conf.HAEnabled() || hastore.KindOf(conf) != hastore.KindZooKeeper {
		return nil
	}
	store, err := r.haStore(s, conf)
	if err != nil {
		return err
	}
	err = store.Delete(ctx)
	var refusal *hastore.Refusal
	if !errors.As(err, &refusal) {
		return err
	}
	if deleting := s.dep.DeletionTimestamp; deleting != nil && refusal.Reason == hastore.RefusedLiveJobManager &&
		time.Since(deleting.Time) < zooKeeperSessionTimeout(conf)+sessionExpiryMargin {
		// Most likely this cluster's own JobManager, killed rather than stopped: ZooKeeper
		// ends its session, and the ephemeral nodes, after the session timeout.
		return err
	}
	r.Recorder.Eventf(s.dep, corev1.EventTypeWarning, ReasonHAMetadataKept, "%s", err.Error())
	if !s.dep.DeletionTimestamp.IsZero() {
		// The resource goes: what is left is someone else's (or this JobManager's, whose
		// session had not expired) and stays, rather than holding the resource forever.
		return nil
	}
	// An upgrade would start the new JobManager on metadata that is not its cluster's.
	return err
}

// sessionExpiryMargin is how long after a JobManager's ZooKeeper session timeout the operator
// still takes a live session in the cluster's node for that JobManager's.
const sessionExpiryMargin = 30 * time.Second

// zooKeeperSessionTimeout is the session timeout of the cluster's JobManagers
// (high-availability.zookeeper.client.session-timeout, milliseconds; Flink's default 60 s).
func zooKeeperSessionTimeout(conf flinkconf.Config) time.Duration {
	ms, err := strconv.Atoi(strings.TrimSpace(conf.Get("high-availability.zookeeper.client.session-timeout", "60000")))
	if err != nil || ms <= 0 {
		return time.Minute
	}
	// Bounded: a resource being deleted waits no longer than this for the session to end.
	return min(time.Duration(ms)*time.Millisecond, 10*time.Minute)
}

// ReasonHAMetadataKept: the operator did not delete a cluster's ZooKeeper HA metadata because
// the node is not recognisably the cluster's (hastore.Refusal).
const ReasonHAMetadataKept = "HAMetadataKept"

// recordedJobIDs are the jobs the operator recorded for the cluster: in ZooKeeper only their
// metadata is deleted, since another namespace's cluster of the same name has the same node.
func recordedJobIDs(s *scope) []string {
	ids := []string{s.status().JobStatus.JobID, flinkconf.UserJobID(&s.dep.Spec)}
	if s.Deployed != nil {
		ids = append(ids, flinkconf.UserJobID(s.Deployed))
	}
	return ids
}
