package options

import "strings"

// Key prefixes, spelled here once (a lint rule, hack/optionkeys, refuses a string literal
// starting with either prefix anywhere else in product code).
const (
	// OperatorPrefix starts every option of the operator (upstream's KubernetesOperatorConfigOptions).
	OperatorPrefix = "kubernetes.operator."
	// AutoscalerPrefix starts the autoscaler's options (upstream's AutoScalerOptions since FLIP-334).
	AutoscalerPrefix = "job.autoscaler."
	// LegacyAutoscalerPrefix is the autoscaler's prefix before FLIP-334, which upstream still
	// reads as a fallback.
	LegacyAutoscalerPrefix = OperatorPrefix + AutoscalerPrefix
	// NamespaceDefaultsPrefix carries default Flink configuration of one namespace in the
	// operator's configuration: kubernetes.operator.default-configuration.namespace.<ns>.<key>.
	NamespaceDefaultsPrefix = OperatorPrefix + "default-configuration.namespace."
	// VersionDefaultsPrefix carries default Flink configuration of Flink versions:
	// kubernetes.operator.default-configuration.flink-version.<v1_20>[+].<key>.
	VersionDefaultsPrefix = OperatorPrefix + "default-configuration.flink-version."
)

// IsOperatorKey says whether key configures the operator or the autoscaler, never Flink: such
// keys are not passed on to the cluster and do not change what is deployed.
func IsOperatorKey(key string) bool {
	return strings.HasPrefix(key, OperatorPrefix) || strings.HasPrefix(key, AutoscalerPrefix)
}

// Options named here so that their key is spelled once, but documented on their own pages of
// docs/ (pod templates, blue/green deployments) rather than in the configuration reference, and
// checked by their readers (pkg/native, pkg/bluegreen) with errors in their own terms. They are
// not in the registry's list: All, Lookup and admission's type check do not see them.
var (
	// JMStartupProbe (default true) gives the JobManager upstream's startup probe.
	JMStartupProbe = BoolOption{Option{Key: OperatorPrefix + "jm-deployment.startup.probe.enabled", Default: "true", Type: TypeBool,
		Description: "The JobManager gets upstream's startup probe on the REST port."}}
	// PodTemplateMergeArraysByName (default false) merges the pod templates' arrays by name
	// instead of by index.
	PodTemplateMergeArraysByName = BoolOption{Option{Key: OperatorPrefix + "pod-template.merge-arrays-by-name", Default: "false", Type: TypeBool,
		Description: "The pod templates' lists are merged by name instead of by index."}}

	BlueGreenAbortGracePeriod = DurationOption{Option{Key: OperatorPrefix + "bluegreen.abort.grace-period", Type: TypeDuration,
		Description: "How long a blue/green transition waits for the new deployment before aborting."}}
	BlueGreenRescheduleInterval = DurationOption{Option{Key: OperatorPrefix + "bluegreen.reconciliation.reschedule-interval", Type: TypeDuration,
		Description: "How often a blue/green deployment in transition is looked at."}}
	BlueGreenDeletionDelay = DurationOption{Option{Key: OperatorPrefix + "bluegreen.deployment-deletion.delay", Type: TypeDuration,
		Description: "How long the old deployment of a blue/green transition is kept once the new one is running."}}
)
