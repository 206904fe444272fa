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
	// TwoLeaders: a replica that lost its lease still changes clusters.
	TwoLeaders Class = "two leaders"
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
	{Bypass, "policy at reconcile for resources admitted earlier", "./controllers/flinkdeployment", []string{"TestReconcileValidationAppliesTheOperatorPolicy"}, false},
	{Bypass, "configuration lines injected into Flink's file", "./pkg/flinkconf", []string{"FuzzRenderConfigFile"}, false},
	{Bypass, "pod templates merged into the cluster's pods", "./pkg/native", []string{"FuzzMergePods"}, false},
	{Bypass, "a certificate or CA planted in the webhook Secret", "./pkg/webhookcert", []string{"TestEnsureReplacesWhatItCannotTrust"}, true},
	{Bypass, "snapshot intervals of seconds", "./controllers/jobs", []string{"TestPeriodicSnapshotMinimum"}, false},

	// Deputy paths.
	{Deputy, "jar hosts on internal addresses, at admission and at dial", "./pkg/artifact", []string{"TestForbiddenAddressesAreRefusedAtDial", "TestAddressPolicy", "TestRedirectToForbiddenAddressIsRefused", "TestRedirectsAreBounded", "TestLocalFilesStayInLocalDir"}, false},
	{Deputy, "jarURI forms that hide an internal host", "./pkg/validation", []string{"FuzzJarURI"}, false},
	{Deputy, "ZooKeeper quorums on internal addresses", "./pkg/hastore", []string{"TestZooKeeperQuorumAddressPolicy"}, false},
	{Deputy, "JobManagers redirecting the operator's calls", "./pkg/flink", []string{"TestRedirectsAreNotFollowed"}, false},
	{Deputy, "truststores outside the directory, another cluster's certificate", "./pkg/resttls", []string{"TestTrust"}, false},
	{Deputy, "resources named after someone else's objects", "./controllers", []string{"TestForeignObjectsAreLeftAlone"}, true},
	{Deputy, "objects of the cluster's names that are not the cluster's", "./pkg/native", []string{"TestApplyAndDeleteLeaveForeignObjects"}, false},

	// Starvation.
	{Starvation, "one JobManager that never answers", "./controllers/reconciler", []string{"TestReconcileDeadline"}, true},
	{Starvation, "one resource reconciled in a tight loop", "./controllers", []string{"TestRateLimitBudgetFromOptions"}, true},
	// Third round.
	{Crash, "JSON replies of a million members", "./pkg/flink", []string{"TestManyMapEntriesAreRefusedBeforeDecoding"}, false},
	{Crash, "PKCS12 stores with a valid MAC and 2^31 rounds inside", "./pkg/resttls", []string{"TestCraftedStoresPassTheMAC"}, false},
	{Crash, "endless answers from validators and listeners", "./pkg/extension/endpoint", []string{"TestEndlessAnswersAreCut"}, false},
	{Crash, "tenant objects labelled into the caches", "./pkg/cachescope", []string{"TestTransformsDropWhatIsNeverRead", "FuzzTrimConfigMap"}, false},
	{Crash, "a slow listener and a large flapping tenant", "./pkg/extension/listener", []string{"TestListenerQueueBoundedByBytes", "TestStatusEventLeavesOutRecordedSpecs"}, false},
	{Leak, "env values, download headers and URL passwords sent to validators", "./pkg/extension/validator", []string{"TestCustomValidatorGetsNoSecrets"}, false},
	{Leak, "URL passwords in any message", "./pkg/redact", []string{"TestRedactorMasksURLPasswords", "TestJSONMasksByPlace"}, false},
	{Leak, "jarURI passwords in download errors", "./pkg/artifact", []string{"TestErrorsNeverShowTheJarURIPassword"}, false},
	{Leak, "jarURI passwords in admission errors", "./pkg/validation", []string{"TestJarURIErrorsHideThePassword"}, false},
	{Leak, "jarURI passwords in status, events and logs", "./controllers", []string{"TestJarURIPasswordNeverShown"}, true},
	{Bypass, "secrets chosen to hide fields from validators or break the document", "./pkg/extension/validator", []string{"TestCustomValidatorSeesEveryFieldWhateverTheSecret"}, false},
	{Bypass, "secrets chosen to hide fields from listeners", "./controllers", []string{"TestStatusEventsMaskSecretsByPlace"}, true},
	{Bypass, "blue/green Ingress annotations, hosts and pods past the policy", "./pkg/validation", []string{"TestBlueGreenIngressAnnotationsPolicy", "TestIngressHostsPolicy", "TestBlueGreenChildIngressHosts", "TestBlueGreenPodSecurityPolicy"}, false},
	{Bypass, "blue/green resources admitted before the policy", "./controllers", []string{"TestBlueGreenPolicyAtReconcile"}, true},
	{Bypass, "a foreign CA appended to the webhook Secret, a stale bundle injected", "./pkg/webhookcert", []string{"TestEnsureDropsCAsItDidNotIssue", "TestRotatorDropsAForeignCA", "TestRotatorDoesNotInjectAStaleBundle"}, true},
	{Bypass, "the operator ConfigMap deleted to drop the policy", "./pkg/operatorconfig", []string{"TestDeletedConfigMapKeepsTheLastGoodConfiguration"}, true},
	{Bypass, "the hardened profile's policy", "./test/deploy", []string{"TestMultiTenantProfile"}, false},
	{Starvation, "one namespace's events evicting the others'", "./pkg/extension/listener", []string{"TestListenerQueueFairAcrossNamespaces"}, false},
	{TwoLeaders, "a leader paused past its lease", "./controllers", []string{"TestPausedLeaderDoesNotActAfterTakeover"}, true},
	{Deputy, "ZooKeeper paths of other tenants and other applications", "./pkg/hastore", []string{"TestZooKeeperDeletionIsConfined", "TestZooKeeperConfigErrors"}, false},
	{Deputy, "a REST Service pointed at another JobManager", "./controllers", []string{"TestRESTServiceDecidesNothing"}, true},
	{Deputy, "a REST Service pointed at another JobManager, at the client factory", "./pkg/flink/clients", []string{"TestRESTServiceChecked"}, true},
	{Deputy, "REST Services that are not the one the operator renders", "./pkg/native", []string{"TestRESTServiceProblem"}, false},
	{Starvation, "25 tarpit jar servers in one namespace", "./controllers", []string{"TestTarpitJarsInOneNamespaceDoNotStarveAnother"}, true},
	{Starvation, "trickling jar servers", "./pkg/artifact", []string{"TestTricklingDownloadIsCut", "TestTricklingDownloadIsCutWithinTheIdleTimeout"}, false},
	{Starvation, "one namespace's reconciles", "./pkg/nsshare", []string{"TestReconcilerKeepsOneNamespaceToItsShare"}, false},
	{Starvation, "a slow jar server and one worker", "./controllers", []string{"TestSessionJobSlowJarDoesNotHoldTheWorker"}, true},
}
