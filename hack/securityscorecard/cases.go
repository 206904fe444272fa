package main

// Class is what a hostile input would have achieved had its test failed.
type Class string

const (
	// Crash: the operator process dies, is OOM-killed, or is wedged past its deadlines.
	Crash Class = "crash"
	// Leak: a secret reaches someone who should not see it (logs, events, status, an endpoint).
	Leak Class = "leak"
	// Bypass: a policy the administrator set is not applied.
	Bypass Class = "bypass"
	// Deputy: the operator acts with its own reach on something the tenant chose (another
	// tenant's JobManager, an internal address, a znode, a file).
	Deputy Class = "deputy"
	// Starvation: one tenant takes the operator's time from the others.
	Starvation Class = "starvation"
)

// Case is one group of tests that feed hostile input to the operator. Each leaf test (and each
// fuzz seed) is one input tried.
type Case struct {
	Class   Class
	What    string
	Package string
	// Tests are the top-level test or fuzz functions, run whole with all their subtests.
	Tests []string
	// Envtest marks packages whose tests need KUBEBUILDER_ASSETS.
	Envtest bool
}

// cases lists the hostile-input tests of the repository. A test listed here that no longer
// exists fails the scorecard run (go test reports "no tests to run" as zero inputs).
var cases = []Case{
	// Crashes: inputs parsed within a budget.
	{Crash, "autoscaler state ConfigMap bombs (gzip, exponent keys, big numbers)", "./pkg/autoscaler", []string{"TestDecodeStateBombs", "FuzzDecodeState"}, false},
	{Crash, "autoscaler state bomb with the operator running", "./controllers", []string{"TestAutoscalerStateBombKeepsTheOperatorUp"}, true},
	{Crash, "crafted JKS and PKCS12 truststores", "./pkg/resttls", []string{"TestCraftedStoresAreRefusedWithinBudget", "FuzzTrustedCertificates"}, false},
	{Crash, "JobManager replies: huge, many small values, endless exceptions", "./pkg/flink", []string{"TestHugeResponseIsABoundedError", "TestManySmallValuesAreRefusedBeforeDecoding", "TestJobExceptionsAreCappedAtMax", "TestJobManagerMessagesAreTruncated", "TestSubtaskMetricsRejectAWordForANumber", "TestJobPlanRefusesIDsThatAreNotFlinkIDs"}, false},
	{Crash, "JobManager plans that are not Flink's", "./pkg/autoscaler/flinkmetrics", []string{"TestTopologyRefusesAVertexMissingFromThePlan"}, false},
	{Crash, "status.error text (unbounded recursion on quotes)", "./api/v1beta1", []string{"FuzzStatusError"}, false},
	{Crash, "any resource JSON through the validators", "./pkg/validation", []string{"FuzzValidate"}, false},
	{Crash, "numbers that wrap when cast", "./pkg/validation", []string{"TestValidateRefusesNumbersThatWrap"}, false},
	{Crash, "numbers that wrap when the cluster is built", "./pkg/native", []string{"TestBuildRefusesNumbersThatWrap"}, false},
	{Crash, "periodic snapshot intervals that overflow", "./pkg/schedule", []string{"FuzzPeriodic"}, false},
	{Crash, "slow and silent jar servers", "./pkg/artifact", []string{"TestSlowLorisHeadersTimeOut", "TestStalledBodyTimesOut"}, false},
	{Crash, "stalled uploads", "./pkg/flink", []string{"TestStalledUploadTimesOut"}, false},
	{Crash, "silent ZooKeeper quorums", "./pkg/hastore", []string{"TestSilentQuorumTimesOut"}, false},
	{Crash, "cluster-wide objects filling the caches", "./cmd", []string{"TestCacheHoldsOnlyFlinkObjects"}, true},
	{Crash, "reconciles that ignore their deadline", "./cmd", []string{"TestStuckReconcilesCheck"}, false},

	// Leaks.
	{Leak, "a secret through every message path and encoding", "./pkg/redact", []string{"FuzzRedact"}, false},
	{Leak, "metrics without an authorized token", "./cmd", []string{"TestSecureMetricsNeedAnAuthorizedToken"}, true},
	{Leak, "tenant headers sent to another host", "./pkg/artifact", []string{"TestTenantHeadersStayWithTheirHost"}, false},

	// Policy bypasses.
	{Bypass, "privileged pods through pod templates", "./pkg/validation", []string{"TestPodSecurityPolicy", "TestIngressAnnotationsPolicy"}, false},
	{Bypass, "policy at reconcile for resources admitted earlier", "./controllers", []string{"TestReconcileValidationAppliesTheOperatorPolicy"}, true},
	{Bypass, "configuration lines injected into Flink's file", "./pkg/native", []string{"FuzzRenderConfigFile", "FuzzMergePods"}, false},
	{Bypass, "a certificate or CA planted in the webhook Secret", "./pkg/webhookcert", []string{"TestEnsureReplacesWhatItCannotTrust"}, true},
	{Bypass, "snapshot intervals of seconds", "./controllers", []string{"TestPeriodicSnapshotMinimum"}, true},

	// Deputy paths.
	{Deputy, "jar hosts on internal addresses, at admission and at dial", "./pkg/artifact", []string{"TestForbiddenAddressesAreRefusedAtDial", "TestAddressPolicy", "TestRedirectToForbiddenAddressIsRefused", "TestRedirectsAreBounded", "TestLocalFilesStayInLocalDir"}, false},
	{Deputy, "jarURI forms that hide an internal host", "./pkg/validation", []string{"FuzzJarURI"}, false},
	{Deputy, "ZooKeeper quorums on internal addresses", "./pkg/hastore", []string{"TestZooKeeperQuorumAddressPolicy"}, false},
	{Deputy, "JobManagers redirecting the operator's calls", "./pkg/flink", []string{"TestRedirectsAreNotFollowed"}, false},
	{Deputy, "truststores outside the directory, another cluster's certificate", "./pkg/resttls", []string{"TestTrust"}, false},
	{Deputy, "resources named after someone else's objects", "./controllers", []string{"TestForeignObjectsAreLeftAlone"}, true},
	{Deputy, "objects of the cluster's names that are not the cluster's", "./pkg/native", []string{"TestApplyAndDeleteLeaveForeignObjects"}, false},

	// Starvation.
	{Starvation, "one JobManager that never answers", "./controllers", []string{"TestReconcileDeadline"}, true},
	{Starvation, "one resource reconciled in a tight loop", "./controllers", []string{"TestRateLimitBudgetFromOptions"}, true},
}
