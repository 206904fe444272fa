package controllers

import (
	"fmt"

	"github.com/flink-operator/flink-operator/controllers/flinkbluegreendeployment"
	"github.com/flink-operator/flink-operator/controllers/flinkdeployment"
	"github.com/flink-operator/flink-operator/controllers/flinksessionjob"
	"github.com/flink-operator/flink-operator/controllers/flinkstatesnapshot"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/artifact"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/hastore"
	"github.com/flink-operator/flink-operator/pkg/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Setup is what the operator's reconcilers are built from: the options they share and the
// few each kind has of its own.
type Setup struct {
	reconciler.ReconcilerOptions
	Client client.Client
	// APIReader reads from the API server, not the cache (the manager's when nil).
	APIReader client.Reader
	// ClusterObjects reads the objects of a Flink cluster's names for the ownership check
	// before they are written (cachescope.Lookup); APIReader when nil.
	ClusterObjects client.Reader
	// SnapshotClient is the snapshot reconciler's client (a snapshot's job may be in another
	// shard); Client when nil.
	SnapshotClient client.Client
	Recorder       record.EventRecorder
	Flink          *clients.Factory
	Validator      *validation.Validator
	Intervals      reconciler.Intervals
	Autoscaling    *jobs.Autoscaling
	Artifacts      *artifact.Fetcher
	Shard          labels.Selector
	ZooKeeper      hastore.ZooKeeperPolicy
}

// SetupReconcilers builds the four reconcilers from s, all wired the same way (one tracker of
// their own writes, one listener, one set of secret patterns, one deadline and rate limits),
// and adds them to mgr.
func SetupReconcilers(mgr ctrl.Manager, s Setup) error {
	if s.Writes == nil {
		s.Writes = reconciler.NewOwnWrites() // resource UIDs are unique across kinds: one tracker serves all
	}
	snapshotClient := s.SnapshotClient
	if snapshotClient == nil {
		snapshotClient = s.Client
	}
	reconcilers := []struct {
		kind  string
		setup func(ctrl.Manager) error
	}{
		{"FlinkDeployment", (&flinkdeployment.FlinkDeploymentReconciler{ReconcilerOptions: s.ReconcilerOptions, Client: s.Client, APIReader: s.APIReader,
			ClusterObjects: s.ClusterObjects, Scheme: mgr.GetScheme(), Recorder: s.Recorder, Flink: s.Flink, Validator: s.Validator,
			Intervals: s.Intervals, Autoscaling: s.Autoscaling, Shard: s.Shard, ZooKeeper: s.ZooKeeper}).SetupWithManager},
		{"FlinkSessionJob", (&flinksessionjob.FlinkSessionJobReconciler{ReconcilerOptions: s.ReconcilerOptions, Client: s.Client, APIReader: s.APIReader,
			Scheme: mgr.GetScheme(), Recorder: s.Recorder, Flink: s.Flink, Validator: s.Validator, Intervals: s.Intervals,
			Autoscaling: s.Autoscaling, Artifacts: s.Artifacts, Shard: s.Shard}).SetupWithManager},
		{"FlinkStateSnapshot", (&flinkstatesnapshot.FlinkStateSnapshotReconciler{ReconcilerOptions: s.ReconcilerOptions, Client: snapshotClient,
			Scheme: mgr.GetScheme(), Recorder: s.Recorder, Flink: s.Flink, Intervals: s.Intervals}).SetupWithManager},
		{"FlinkBlueGreenDeployment", (&flinkbluegreendeployment.FlinkBlueGreenDeploymentReconciler{ReconcilerOptions: s.ReconcilerOptions, Client: s.Client,
			Scheme: mgr.GetScheme(), Recorder: s.Recorder, Validator: s.Validator, Intervals: s.Intervals}).SetupWithManager},
	}
	for _, r := range reconcilers {
		if err := r.setup(mgr); err != nil {
			return fmt.Errorf("set up %s controller: %w", r.kind, err)
		}
	}
	return nil
}
