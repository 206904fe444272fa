package upstreamoptions

import "github.com/flink-operator/flink-operator/pkg/options"

// The prefix of upstream's operator options. The table spells upstream's keys after it: it is
// the list of upstream's option names (testdata/upstream-keys.txt), which the tests hold against
// the registry, not a second registry.
const op = options.OperatorPrefix

// Reasons shared by several entries.
const (
	flagInstead     = "set with the operator's command-line flag "
	metricsDiffer   = "the operator's metrics are controller-runtime's Prometheus endpoint (--metrics-bind-address) with the metrics of docs/reference/metrics.md; upstream's Flink metric reporter and its scopes do not exist here"
	statusErrorHere = "status.error is upstream's JSON shape with the exception's class and message, bounded in size; no stack traces or throwable lists are recorded, so there is nothing to tune"
)

// table classifies every option of upstream's configuration reference
// (testdata/upstream-keys.txt lists them; TestTableCoversUpstream keeps the two in step).
// An honoured entry without a reason is an option pkg/options registers: its row in the
// configuration reference (docs/reference/configuration.md) says what it does.
var table = []Entry{
	// Reconcile loop, leader election, health.
	{Key: op + "reconcile.interval", Support: Honoured},
	{Key: op + "observer.progress-check.interval", Support: Honoured},
	{Key: op + "reconcile.parallelism", Support: Honoured},
	{Key: op + "rate-limiter.limit", Support: Honoured},
	{Key: op + "rate-limiter.refresh-period", Support: Honoured},
	{Key: op + "retry.initial.interval", Support: Honoured},
	{Key: op + "retry.interval.multiplier", Support: Honoured},
	{Key: op + "retry.max.attempts", Support: Honoured},
	{Key: op + "retry.max.interval", Support: Honoured},
	{Key: op + "watched.namespaces", Support: Honoured, Why: "operator configuration, --watch-namespaces, or env WATCH_NAMESPACES (upstream's name) / WATCH_NAMESPACE (OLM's); a change restarts the controllers in-process"},
	{Key: op + "label.selector", Support: Honoured, Why: "operator configuration or --label-selector: the informers' caches hold only the selected resources (docs/concepts/sharding.md)"},
	{Key: op + "leader-election.lease-name", Support: Honoured},
	{Key: op + "leader-election.enabled", Support: NotApplicable, Why: flagInstead + "--leader-elect (the Deployment of `make deploy` and the bundle turn it on)"},
	{Key: op + "leader-election.lease-duration", Support: NotApplicable, Why: flagInstead + "--leader-election-lease-duration"},
	{Key: op + "leader-election.renew-deadline", Support: NotApplicable, Why: flagInstead + "--leader-election-renew-deadline"},
	{Key: op + "leader-election.retry-period", Support: NotApplicable, Why: flagInstead + "--leader-election-retry-period"},
	{Key: op + "health.probe.enabled", Support: NotApplicable, Why: "/healthz and /readyz are always served, on --health-probe-bind-address"},
	{Key: op + "health.probe.port", Support: NotApplicable, Why: flagInstead + "--health-probe-bind-address (default :8081, upstream's 8085)"},
	{Key: op + "health.canary.resource.timeout", Support: NotApplicable, Why: "upstream's canary health check is not implemented: /healthz and /readyz do not depend on canary resources (label flink.apache.org/canary)"},
	{Key: op + "startup.stop-on-informer-error", Support: NotApplicable, Why: "the controllers start only once controller-runtime's caches have synced; an informer that cannot start stops the operator, which Kubernetes restarts"},
	{Key: op + "termination.timeout", Support: NotApplicable, Why: "shutdown waits for reconciles in flight, each bounded by --reconcile-timeout; the pod's terminationGracePeriodSeconds bounds the rest"},
	{Key: op + "dynamic.config.enabled", Support: NotApplicable, HonouredValue: "true", Why: "the operator configuration ConfigMap (--config-map) is watched and applied at once; there is no way to turn that off"},
	{Key: op + "dynamic.config.check.interval", Support: NotApplicable, Why: "the operator configuration ConfigMap is watched, not polled"},
	{Key: op + "dynamic.namespaces.enabled", Support: NotApplicable, Why: "a change of the watched namespaces always applies at once (the controllers restart in-process)"},
	{Key: op + "config.cache.size", Support: NotApplicable, Why: "a resource's effective configuration is computed once per reconcile, not cached across reconciles"},
	{Key: op + "config.cache.timeout", Support: NotApplicable, Why: "a resource's effective configuration is computed once per reconcile, not cached across reconciles"},
	{Key: op + "plugins.listeners.<listener-name>.class", Support: NotApplicable, Why: "Java plugins cannot be loaded by a Go operator"},

	// Flink REST.
	{Key: op + "flink.client.timeout", Support: Honoured},
	{Key: op + "flink.client.cancel.timeout", Support: Honoured},
	{Key: op + "job.submission.timeout", Support: Honoured},
	{Key: op + "observer.rest-ready.delay", Support: Warned, Why: "upstream marks the JobManager DEPLOYED_NOT_READY once its port accepts connections and READY this long after, unchecked, as a guess at when the REST API is up; here READY is decided by the REST API answering (GET /config), so there is no guess to tune"},

	// Cluster objects.
	{Key: op + "resource.cleanup.timeout", Support: Honoured},
	{Key: op + "resource.deletion.propagation", Support: Honoured},
	{Key: op + "jm-deployment-recovery.enabled", Support: Honoured},
	{Key: op + "jm-deployment.shutdown-ttl", Support: Honoured},
	{Key: op + "jm-deployment.startup.probe.enabled", Support: Honoured, Why: "read by pkg/native when it builds the JobManager: upstream's startup probe on the REST port's /config, unless the pod template has one"},
	{Key: op + "pod-template.merge-arrays-by-name", Support: Honoured, Why: "read by pkg/native when it merges spec.podTemplate with the JobManager's and TaskManager's templates: lists by index, or by name when true, as upstream"},
	{Key: op + "ingress.manage", Support: Honoured},
	{Key: op + "session.deletion.block-on-session-jobs", Support: Warned, HonouredValue: "true", Why: "a session cluster is never deleted while FlinkSessionJobs reference it (Warning CleanupFailed names them); past kubernetes.operator.resource.cleanup.timeout it deletes them itself (Warning SessionJobsDeleted) and goes once they are gone"},
	{Key: op + "session.deletion.block-on-unmanaged-jobs", Support: Honoured},

	// Upgrades, rollback, restarts.
	{Key: op + "job.upgrade.last-state-fallback.enabled", Support: Honoured},
	{Key: op + "job.upgrade.last-state.job-cancel.enabled", Support: Honoured},
	{Key: op + "job.upgrade.last-state.max.allowed.checkpoint.age", Support: Honoured},
	{Key: op + "job.upgrade.inplace-scaling.enabled", Support: Honoured},
	{Key: op + "job.upgrade.ignore-pending-savepoint", Support: Honoured},
	{Key: op + "job.restart.failed", Support: Honoured},
	{Key: op + "job.savepoint-on-deletion", Support: Honoured},
	{Key: op + "job.drain-on-savepoint-deletion", Support: Honoured},
	{Key: op + "deployment.rollback.enabled", Support: Honoured},
	{Key: op + "deployment.readiness.timeout", Support: Honoured},
	{Key: op + "cluster.health-check.enabled", Support: Honoured},
	{Key: op + "cluster.health-check.restarts.window", Support: Honoured},
	{Key: op + "cluster.health-check.restarts.threshold", Support: Honoured},
	{Key: op + "cluster.health-check.checkpoint-progress.enabled", Support: Honoured},
	{Key: op + "cluster.health-check.checkpoint-progress.window", Support: Honoured},
	{Key: op + "cluster.resource-view.refresh-interval", Support: NotApplicable, Why: "it feeds upstream's autoscaler the cluster's free resources; the autoscaler here has its own settings (job.autoscaler.*)"},

	// Snapshots.
	{Key: op + "snapshot.resource.enabled", Support: Honoured},
	{Key: op + "periodic.savepoint.interval", Support: Honoured},
	{Key: op + "periodic.checkpoint.interval", Support: Honoured},
	{Key: op + "savepoint.format.type", Support: Honoured},
	{Key: op + "checkpoint.type", Support: Warned, HonouredValue: "FULL", Why: "the checkpoints the operator triggers are always FULL (upstream's default)"},
	{Key: op + "savepoint.trigger.grace-period", Support: Honoured},
	{Key: op + "checkpoint.trigger.grace-period", Support: Honoured},
	{Key: op + "savepoint.history.max.count", Support: Honoured},
	{Key: op + "savepoint.history.max.age", Support: Honoured},
	{Key: op + "savepoint.history.max.count.threshold", Support: Honoured},
	{Key: op + "savepoint.history.max.age.threshold", Support: Honoured},
	{Key: op + "savepoint.cleanup.enabled", Support: Honoured},
	{Key: op + "savepoint.dispose-on-delete", Support: Honoured},

	// Events and errors.
	{Key: op + "events.exceptions.limit-per-reconciliation", Support: Honoured},
	{Key: op + "events.exceptions.stacktrace-lines", Support: Warned, Why: "JobException events carry the exception and its message, never stack-trace lines"},
	{Key: op + "exception.field.max.length", Support: NotApplicable, Why: statusErrorHere},
	{Key: op + "exception.label.mapper", Support: NotApplicable, Why: statusErrorHere},
	{Key: op + "exception.stacktrace.enabled", Support: NotApplicable, Why: statusErrorHere},
	{Key: op + "exception.stacktrace.max.length", Support: NotApplicable, Why: statusErrorHere},
	{Key: op + "exception.throwable.list.max.count", Support: NotApplicable, Why: statusErrorHere},

	// Artifacts (session jobs' jars).
	{Key: op + "user.artifacts.http.header", Support: Honoured},
	{Key: op + "user.artifacts.allowed-schemes", Support: NotApplicable, Why: flagInstead + "--allowed-jar-schemes"},
	{Key: op + "user.artifacts.base.dir", Support: NotApplicable, Why: "jars are streamed from their URI to the session cluster, never stored (bounded by --artifact-max-size); --artifact-local-dir is the directory file:// and local:// jars must be in"},
	{Key: op + "user.artifacts.disallow-restricted-hosts", Support: NotApplicable, HonouredValue: "true", Why: "restricted hosts are always refused; --artifact-allowed-networks allows chosen ranges (e.g. an in-cluster repository)"},

	// Operator metrics.
	{Key: op + "josdk.metrics.enabled", Support: NotApplicable, Why: metricsDiffer},
	{Key: op + "jvm.metrics.enabled", Support: NotApplicable, Why: metricsDiffer},
	{Key: op + "kubernetes.client.metrics.enabled", Support: NotApplicable, Why: metricsDiffer},
	{Key: op + "kubernetes.client.metrics.http.response.code.groups.enabled", Support: NotApplicable, Why: metricsDiffer},
	{Key: op + "kubernetes.client.metrics.slow.request.threshold", Support: NotApplicable, Why: metricsDiffer},
	{Key: op + "metrics.histogram.sample.size", Support: NotApplicable, Why: metricsDiffer},
	{Key: op + "metrics.scope.k8soperator.resource", Support: NotApplicable, Why: metricsDiffer},
	{Key: op + "metrics.scope.k8soperator.resourcens", Support: NotApplicable, Why: metricsDiffer},
	{Key: op + "metrics.scope.k8soperator.system", Support: NotApplicable, Why: metricsDiffer},
	{Key: op + "resource.lifecycle.metrics.enabled", Support: NotApplicable, Why: metricsDiffer},
	{Key: op + "resource.lifecycle.namespace.histograms.enabled", Support: NotApplicable, Why: metricsDiffer},
	{Key: op + "resource.metrics.enabled", Support: NotApplicable, Why: metricsDiffer},

	// The autoscaler has a table of its own; the standalone autoscaler is another program.
	{Key: options.AutoscalerPrefix + "*", Support: Honoured, Why: "read by the autoscaler, whose page (docs/concepts/autoscaler.md) lists which of its options it honours"},
	{Key: "autoscaler.standalone.*", Support: NotApplicable, Why: "options of upstream's standalone autoscaler, a separate program; the autoscaler here runs inside the operator"},
}
