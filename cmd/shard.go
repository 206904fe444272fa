package main

import (
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/operatorconfig"
)

// Sharding: several operator instances split the Flink resources by label selector
// (kubernetes.operator.label.selector, --label-selector) and/or watched namespaces, each with a
// Lease of its own. An instance's caches hold only the FlinkDeployments, FlinkSessionJobs and
// FlinkStateSnapshots its selector selects, so a resource outside it is never reconciled there:
// its requests (an event of an owned Deployment, a relabelled resource leaving the shard) find
// nothing in the cache and end as a no-op, with no cleanup, and the resource's owner references
// keep its cluster alive for the instance that serves it. Kubernetes objects of the clusters
// keep the cache scope of pkg/cachescope: the selector is on the Flink resources, not on them.

// shardCache limits the caches of the three Flink kinds to sel (nil: every resource).
func shardCache(opts cache.Options, sel labels.Selector) cache.Options {
	if sel == nil {
		return opts
	}
	if opts.ByObject == nil {
		opts.ByObject = map[client.Object]cache.ByObject{}
	}
	for _, obj := range []client.Object{&flinkv1beta1.FlinkDeployment{}, &flinkv1beta1.FlinkSessionJob{}, &flinkv1beta1.FlinkStateSnapshot{}} {
		opts.ByObject[obj] = cache.ByObject{Label: sel}
	}
	return opts
}

// needsRestart says a configuration change needs new caches or a new election: the watched
// namespaces and the label selector shape the caches, the Lease is held from the start, and
// the worker count, rate limits and retry back-off are fixed when a controller is built.
func needsRestart(was, now operatorconfig.Settings) bool {
	return was.WatchNamespaces != now.WatchNamespaces || was.LabelSelector != now.LabelSelector ||
		was.LeaseName != now.LeaseName || was.ReconcileParallelism != now.ReconcileParallelism ||
		was.RateLimit != now.RateLimit || was.Retry != now.Retry
}

// watchNamespacesEnv is the watched namespaces the environment sets: OLM's WATCH_NAMESPACE
// (its OperatorGroup's target namespaces, which the operator's RBAC is granted for) wins over
// upstream's WATCH_NAMESPACES (set by its Helm chart); either wins over the ConfigMap, as
// upstream's env does, and an explicit --watch-namespaces wins over both.
func watchNamespacesEnv(getenv func(string) string) string {
	if v := getenv("WATCH_NAMESPACE"); v != "" {
		return v
	}
	return getenv("WATCH_NAMESPACES")
}
