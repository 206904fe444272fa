package options

// The options, grouped by what they govern. Keys and defaults are upstream's
// (KubernetesOperatorConfigOptions), so a resource written for the Apache operator behaves the
// same here.

// Reconcile loop.
var (
	ReconcileInterval = DurationOption{Option{Key: "kubernetes.operator.reconcile.interval", Default: "60 s", Type: TypeDuration,
		Description: "How often a settled resource is looked at."}}
	ProgressCheckInterval = DurationOption{Option{Key: "kubernetes.operator.observer.progress-check.interval", Default: "10 s", Type: TypeDuration,
		Description: "How often a resource in motion (deploying, upgrading, snapshotting) is looked at."}}
	RESTTimeout = DurationOption{Option{Key: "kubernetes.operator.flink.client.timeout", Default: "10 s", Type: TypeDuration,
		Description: "Timeout of one call to a JobManager's REST API."}}
	ReconcileParallelism = IntOption{Option{Key: "kubernetes.operator.reconcile.parallelism", Default: "25", Type: TypeInt,
		Description: "Resources of one kind reconciled at a time (operator configuration only; -1, upstream's unbounded, is 256). Upstream's default is 200 threads; here workers are goroutines bounded by a per-reconcile deadline (--reconcile-timeout, 5 min)."}}
	RateLimiterLimit = IntOption{Option{Key: "kubernetes.operator.rate-limiter.limit", Default: "0", Type: TypeInt,
		Description: "Operator configuration only. Reconciles of one resource per refresh period at most; more are postponed to the end of the period, not dropped (a resource being deleted is never postponed). 0 or less is no limit. A change restarts the controllers in-process. Upstream's default is 5: here none, because the operator's own next steps of an upgrade are reconciles too and a budget postpones them (with 5 per 15 s, the savepoint upgrade of the controller tests took 60 s instead of 31 s); set 5 for upstream's pacing."}}
	RateLimiterRefreshPeriod = DurationOption{Option{Key: "kubernetes.operator.rate-limiter.refresh-period", Default: "15 s", Type: TypeDuration,
		Description: "Operator configuration only. The period of rate-limiter.limit, starting at a resource's first reconcile in it."}}
	RetryInitialInterval = DurationOption{Option{Key: "kubernetes.operator.retry.initial.interval", Default: "5 s", Type: TypeDuration,
		Description: "Operator configuration only. Wait before retrying a reconcile that failed with an error. A change of any retry option restarts the controllers in-process."}}
	RetryIntervalMultiplier = DoubleOption{Option{Key: "kubernetes.operator.retry.interval.multiplier", Default: "1.5", Type: TypeDouble,
		Description: "Operator configuration only. Factor of the wait after each further failure in a row (at least 1)."}}
	RetryMaxAttempts = IntOption{Option{Key: "kubernetes.operator.retry.max.attempts", Default: "15", Type: TypeInt,
		Description: "Operator configuration only. Retries on the back-off; after as many failures in a row the resource is retried every reconcile.interval (or max.interval if longer) with a log line saying so, where upstream stops retrying until the next event."}}
	RetryMaxInterval = DurationOption{Option{Key: "kubernetes.operator.retry.max.interval", Type: TypeDuration,
		Description: "Operator configuration only. Longest wait between retries; none caps it at reconcile.interval, so a failing resource is looked at at least as often as a settled one."}}
	CancelTimeout = DurationOption{Option{Key: "kubernetes.operator.flink.client.cancel.timeout", Default: "1 min", Type: TypeDuration,
		DeprecatedKey: "kubernetes.operator.reconciler.flink.cancel.job.timeout",
		Description:   "Timeout of the call asking a JobManager to cancel a job (in place of flink.client.timeout); the job is then followed until it is CANCELED. Deprecated key: kubernetes.operator.reconciler.flink.cancel.job.timeout."}}
	JobSubmissionTimeout = DurationOption{Option{Key: "kubernetes.operator.job.submission.timeout", Default: "10 min", Type: TypeDuration,
		Description: "Timeout of a session job's submission, the call that runs its uploaded jar on the session cluster (in place of flink.client.timeout): the JobManager answers once the job's main method has built the job graph."}}
	WatchedNamespaces = StringOption{Option{Key: "kubernetes.operator.watched.namespaces", Type: TypeString,
		Description: "Comma-separated namespaces the operator watches (operator configuration only); empty watches all."}}
	LabelSelector = StringOption{Option{Key: "kubernetes.operator.label.selector", Type: TypeString,
		Description: "Operator configuration only (or --label-selector). Only the FlinkDeployments, FlinkSessionJobs and FlinkStateSnapshots this label selector (kubectl -l syntax, e.g. shard=a) selects are served; empty serves all. Instances with disjoint selectors split the resources (docs/concepts/sharding.md); a change restarts the controllers in-process."}}
	LeaseName = StringOption{Option{Key: "kubernetes.operator.leader-election.lease-name", Default: "flink-operator.flink.apache.org", Type: TypeString,
		Description: "Operator configuration only (or --leader-election-id). The leader election Lease (with --leader-elect); every shard's instances need a Lease of their own. A change restarts the controllers in-process."}}
	ResourceCleanupTimeout = DurationOption{Option{Key: "kubernetes.operator.resource.cleanup.timeout", Default: "5 min", Type: TypeDuration,
		Description: "The bound of each wait of a deletion, counted from the resource's deletionTimestamp (docs/concepts/deletion.md): a savepoint on deletion, a session cluster's session jobs and unmanaged jobs, a savepoint resource still in progress, a JobManager's pods; twice this for a session job's stop and a savepoint's disposal. Past it the step is given up with a Warning event saying what was skipped (NoFinalSavepoint, SessionJobsDeleted, UnmanagedJobsStopped, JobStopUnconfirmed, SnapshotAbandonedOnDeletion, SavepointNotDisposed)."}}
	BlockOnUnmanagedJobs = BoolOption{Option{Key: "kubernetes.operator.session.deletion.block-on-unmanaged-jobs", Default: "true", Type: TypeBool,
		DeprecatedKey: "kubernetes.operator.session.block-on-unmanaged-jobs",
		Description:   "Deleting a session cluster waits (Warning CleanupFailed naming them) while its JobManager runs jobs that are not globally terminal and no FlinkSessionJob manages, e.g. submitted with the CLI or the SQL gateway; their HA metadata is kept meanwhile. Not forever: at kubernetes.operator.resource.cleanup.timeout the cluster is deleted with them (Warning UnmanagedJobsStopped). Read from the deployed spec's configuration. Deprecated key: kubernetes.operator.session.block-on-unmanaged-jobs."}}
	ManageIngress = BoolOption{Option{Key: "kubernetes.operator.ingress.manage", Default: "true", Type: TypeBool,
		Description: "Operator configuration only (a resource's value is not read, as upstream). false: the operator creates, updates and deletes no Ingress; spec.ingress is left to the user."}}
	DeletionPropagation = StringOption{Option{Key: "kubernetes.operator.resource.deletion.propagation", Default: "Foreground", Type: TypeString,
		Description: "How a cluster's JobManager Deployment is deleted: Foreground (gone once its pods are), Background or Orphan.",
		Allowed:     []string{"Foreground", "Background", "Orphan"}}}
)

// Upgrades.
var (
	LastStateFallback = BoolOption{Option{Key: "kubernetes.operator.job.upgrade.last-state-fallback.enabled", Default: "true", Type: TypeBool,
		Description: "A savepoint upgrade of a job that is not running restores its HA metadata instead of waiting."}}
	LastStateCancel = BoolOption{Option{Key: "kubernetes.operator.job.upgrade.last-state.job-cancel.enabled", Default: "false", Type: TypeBool,
		Description: "Last-state upgrades cancel the job and restore its latest checkpoint instead of keeping HA metadata."}}
	MaxCheckpointAge = DurationOption{Option{Key: "kubernetes.operator.job.upgrade.last-state.max.allowed.checkpoint.age", Type: TypeDuration,
		Description: "A last-state upgrade of a job whose latest checkpoint is older waits for one in progress, or else takes a savepoint."}}
	InPlaceScaling = BoolOption{Option{Key: "kubernetes.operator.job.upgrade.inplace-scaling.enabled", Default: "true", Type: TypeBool,
		Description: "Per-vertex parallelism overrides are applied to the running job through the adaptive scheduler (Flink 1.18+)."}}
	RestartFailed = BoolOption{Option{Key: "kubernetes.operator.job.restart.failed", Default: "false", Type: TypeBool,
		Description: "A FAILED job is redeployed, restoring what its upgrade mode keeps."}}
	SavepointOnDeletion = BoolOption{Option{Key: "kubernetes.operator.job.savepoint-on-deletion", Default: "false", Type: TypeBool,
		Description: "Deleting the resource stops its job with a savepoint first (bounded by resource.cleanup.timeout)."}}
	IgnorePendingSavepoint = BoolOption{Option{Key: "kubernetes.operator.job.upgrade.ignore-pending-savepoint", Default: "false", Type: TypeBool,
		Description: "A spec change does not wait for a manual or periodic savepoint in flight (legacy snapshot mode); the savepoint is abandoned."}}
)

// Rollback.
var (
	RollbackEnabled = BoolOption{Option{Key: "kubernetes.operator.deployment.rollback.enabled", Default: "false", Type: TypeBool,
		Description: "A change not healthy within the readiness timeout is rolled back to the last stable spec: a FlinkDeployment through its HA metadata (needs HA), a FlinkSessionJob (beyond upstream) from the savepoint or checkpoint its job left."}}
	ReadinessTimeout = DurationOption{Option{Key: "kubernetes.operator.deployment.readiness.timeout", Default: "5 min", Type: TypeDuration,
		Description: "How long a change may take to become healthy before it is rolled back."}}
)

// Savepoints the operator takes.
var (
	SavepointFormat = StringOption{Option{Key: "kubernetes.operator.savepoint.format.type", Default: "CANONICAL", Type: TypeString,
		Description: "Format of the savepoints the operator takes: CANONICAL or NATIVE.", Allowed: []string{"CANONICAL", "NATIVE"}}}
	DrainOnSavepointDeletion = BoolOption{Option{Key: "kubernetes.operator.job.drain-on-savepoint-deletion", Default: "false", Type: TypeBool,
		Description: "The stop-with-savepoint on deletion drains the job (emits MAX_WATERMARK first)."}}
)

// Recovery and health.
var (
	JMDeploymentRecovery = BoolOption{Option{Key: "kubernetes.operator.jm-deployment-recovery.enabled", Default: "true", Type: TypeBool,
		Description: "A missing JobManager Deployment is deployed again, resuming from HA metadata."}}
	JMShutdownTTL = DurationOption{Option{Key: "kubernetes.operator.jm-deployment.shutdown-ttl", Default: "1 d", Type: TypeDuration,
		Description: "How long the JobManager of an ended application job is kept."}}
	HealthCheck = BoolOption{Option{Key: "kubernetes.operator.cluster.health-check.enabled", Default: "false", Type: TypeBool,
		Description: "Jobs that restart too often or stop checkpointing are restarted from HA metadata."}}
	HealthRestartsWindow = DurationOption{Option{Key: "kubernetes.operator.cluster.health-check.restarts.window", Default: "2 min", Type: TypeDuration,
		Description: "The window the restart threshold counts in."}}
	HealthRestartsThreshold = IntOption{Option{Key: "kubernetes.operator.cluster.health-check.restarts.threshold", Default: "64", Type: TypeInt,
		Description: "Restarts within the window that make a job unhealthy."}}
	HealthCheckpointProgress = BoolOption{Option{Key: "kubernetes.operator.cluster.health-check.checkpoint-progress.enabled", Default: "true", Type: TypeBool,
		Description: "A job with no completed checkpoint within the window is unhealthy."}}
	HealthCheckpointWindow = DurationOption{Option{Key: "kubernetes.operator.cluster.health-check.checkpoint-progress.window", Type: TypeDuration,
		Description: "Default: max(checkpoint interval, timeout) x (tolerable failures + 2)."}}
)

// Snapshots.
var (
	SnapshotResources = BoolOption{Option{Key: "kubernetes.operator.snapshot.resource.enabled", Default: "true", Type: TypeBool,
		Description: "Snapshots are FlinkStateSnapshot resources; false keeps upstream's legacy status fields."}}
	PeriodicSavepoint = StringOption{Option{Key: "kubernetes.operator.periodic.savepoint.interval", Type: TypeSchedule,
		Description: "Periodic savepoints: a duration or a Quartz cron expression; 0 or empty is off."}}
	PeriodicCheckpoint = StringOption{Option{Key: "kubernetes.operator.periodic.checkpoint.interval", Type: TypeSchedule,
		Description: "Periodic checkpoints: a duration or a Quartz cron expression; 0 or empty is off."}}
	SavepointTriggerGracePeriod = DurationOption{Option{Key: "kubernetes.operator.savepoint.trigger.grace-period", Default: "1 min", Type: TypeDuration,
		DeprecatedKey: "kubernetes.operator.observer.savepoint.trigger.grace-period",
		Description:   "Legacy snapshot mode: a manual savepoint that fails within this period after its trigger is triggered again; one failing later is reported and not retried (a new nonce asks again). FlinkStateSnapshot resources retry by their backoffLimit instead. Deprecated key: kubernetes.operator.observer.savepoint.trigger.grace-period."}}
	CheckpointTriggerGracePeriod = DurationOption{Option{Key: "kubernetes.operator.checkpoint.trigger.grace-period", Default: "1 min", Type: TypeDuration,
		Description: "Legacy snapshot mode: a manual checkpoint that fails within this period after its trigger is triggered again; one failing later is reported and not retried (a new nonce asks again)."}}
	SavepointHistoryMaxCount = IntOption{Option{Key: "kubernetes.operator.savepoint.history.max.count", Default: "10", Type: TypeInt,
		Description: "Periodic and upgrade savepoints kept; manual and user-created ones are never trimmed (legacy snapshot mode: every savepointHistory entry counts)."}}
	SavepointHistoryMaxAge = DurationOption{Option{Key: "kubernetes.operator.savepoint.history.max.age", Default: "1 d", Type: TypeDuration,
		Description: "Age beyond which periodic and upgrade savepoints are trimmed (legacy snapshot mode: every savepointHistory entry but the newest)."}}
	SavepointHistoryMaxCountThreshold = IntOption{Option{Key: "kubernetes.operator.savepoint.history.max.count.threshold", Type: TypeInt,
		Description: "Upper bound of max.count a resource may set (operator configuration)."}}
	SavepointHistoryMaxAgeThreshold = DurationOption{Option{Key: "kubernetes.operator.savepoint.history.max.age.threshold", Type: TypeDuration,
		Description: "Upper bound of max.age a resource may set (operator configuration)."}}
	SavepointCleanup = BoolOption{Option{Key: "kubernetes.operator.savepoint.cleanup.enabled", Default: "true", Type: TypeBool,
		Description: "Savepoint history trimming."}}
	DisposeOnDelete = BoolOption{Option{Key: "kubernetes.operator.savepoint.dispose-on-delete", Default: "false", Type: TypeBool,
		Description: "Operator-created savepoint resources dispose of their data when deleted."}}
)

// Events and artifacts.
var (
	ExceptionEventsLimit = IntOption{Option{Key: "kubernetes.operator.events.exceptions.limit-per-reconciliation", Default: "10", Type: TypeInt,
		Description: "Job exception events emitted per reconcile at most."}}
	ArtifactHeaders = StringOption{Option{Key: "kubernetes.operator.user.artifacts.http.header", Type: TypeString,
		Description: "HTTP headers (key:value,...) sent when fetching a session job's jar."}}
)

// Admission policy: operator configuration only (a resource setting them is refused), checked
// by the webhook and again at every reconcile. Our own options, not upstream's.
var (
	PodSecurityLevel = StringOption{Option{Key: "kubernetes.operator.pod-security.level", Default: "privileged", Type: TypeString,
		Description: "Operator configuration only. The Kubernetes Pod Security Standard the JobManager and TaskManager pods of every FlinkDeployment must meet (pod templates merged as deployed): privileged allows anything (upstream's behaviour), baseline refuses e.g. privileged containers, hostPath volumes and host namespaces, restricted also requires a hardened securityContext.",
		Allowed:     []string{"privileged", "baseline", "restricted"}}}
	IngressAnnotationsAllowed = StringOption{Option{Key: "kubernetes.operator.ingress.annotations.allowed", Type: TypeString,
		Description: "Operator configuration only. Comma-separated spec.ingress.annotations keys a FlinkDeployment or FlinkBlueGreenDeployment may set; an entry ending in * allows every key with that prefix. Unset allows all (upstream's behaviour)."}}
	IngressHostsAllowed = StringOption{Option{Key: "kubernetes.operator.ingress.hosts.allowed", Type: TypeString,
		Description: "Operator configuration only. Comma-separated DNS domains the Ingress hosts (rule and TLS) of a FlinkDeployment or FlinkBlueGreenDeployment may be, or be subdomains of; {{namespace}} in an entry is the resource's namespace (e.g. {{namespace}}.apps.example.com). When set, an Ingress without a host is refused. Unset allows any host (upstream's behaviour)."}}
)

// Extension points (pkg/extension): operator configuration only, our own options.
// docs/concepts/extensions.md shows the endpoint lists' fields.
var (
	ExtensionValidators = StringOption{Option{Key: "kubernetes.operator.extension.validators", Type: TypeString,
		Description: "Operator configuration only. Custom validators: a YAML or JSON list of endpoints (name, url, timeout (default 2 s, at most 3 s), failurePolicy Fail (default) or Ignore, kinds, caFile) called at admission and before each new generation is reconciled; their field errors refuse the resource."}}
	ExtensionListeners = StringOption{Option{Key: "kubernetes.operator.extension.listeners", Type: TypeString,
		Description: "Operator configuration only. Resource listeners: a YAML or JSON list of endpoints (name, url, timeout, caFile, maxAttempts, initialBackoff, maxBackoff, queueSize, queueBytes) that receive status changes and events as CloudEvents."}}
	ExtensionAllowedHosts = StringOption{Option{Key: "kubernetes.operator.extension.allowed-hosts", Type: TypeString,
		Description: "Operator configuration only. Comma-separated hosts (or *.suffix) extension endpoints may be on; plain http only to these. Unset: https to any host, no plain http."}}
)

var registry = []Option{
	ReconcileInterval.Option, ProgressCheckInterval.Option, RESTTimeout.Option, CancelTimeout.Option, JobSubmissionTimeout.Option, WatchedNamespaces.Option, ReconcileParallelism.Option, ResourceCleanupTimeout.Option,
	LabelSelector.Option, LeaseName.Option,
	RateLimiterLimit.Option, RateLimiterRefreshPeriod.Option, RetryInitialInterval.Option, RetryIntervalMultiplier.Option,
	RetryMaxAttempts.Option, RetryMaxInterval.Option,
	DeletionPropagation.Option, BlockOnUnmanagedJobs.Option, ManageIngress.Option,
	LastStateFallback.Option, LastStateCancel.Option, MaxCheckpointAge.Option, InPlaceScaling.Option, RestartFailed.Option, SavepointOnDeletion.Option,
	IgnorePendingSavepoint.Option,
	RollbackEnabled.Option, ReadinessTimeout.Option, SavepointFormat.Option, DrainOnSavepointDeletion.Option,
	JMDeploymentRecovery.Option, JMShutdownTTL.Option, HealthCheck.Option, HealthRestartsWindow.Option, HealthRestartsThreshold.Option,
	HealthCheckpointProgress.Option, HealthCheckpointWindow.Option,
	SnapshotResources.Option, SavepointTriggerGracePeriod.Option, CheckpointTriggerGracePeriod.Option, PeriodicSavepoint.Option, PeriodicCheckpoint.Option, SavepointHistoryMaxCount.Option, SavepointHistoryMaxAge.Option,
	SavepointHistoryMaxCountThreshold.Option, SavepointHistoryMaxAgeThreshold.Option, SavepointCleanup.Option, DisposeOnDelete.Option,
	ExceptionEventsLimit.Option, ArtifactHeaders.Option,
	PodSecurityLevel.Option, IngressAnnotationsAllowed.Option, IngressHostsAllowed.Option,
	ExtensionValidators.Option, ExtensionListeners.Option, ExtensionAllowedHosts.Option,
}
