//go:build e2e

package e2e

import (
	"flag"
	"fmt"
	"os"

	"github.com/flink-operator/flink-operator/test/auditcheck"
	"github.com/flink-operator/flink-operator/test/localenv"
)

// unexercised are the grants of config/rbac the suite cannot use, each with the code path that
// needs it. checkRBAC fails on any other grant the operator never used.
var unexercised = map[auditcheck.Permission]string{
	// cmd/main.go --leader-elect (set in config/manager/manager.yaml): controller-runtime's Lease
	// lock reads, creates and renews or releases the Lease. The suite runs one operator without
	// election, so TestChaos's SIGKILL restarts need not wait a Lease out.
	{Group: "coordination.k8s.io", Resource: "leases", Verb: "get"}:    "leader election (--leader-elect)",
	{Group: "coordination.k8s.io", Resource: "leases", Verb: "create"}: "leader election (--leader-elect)",
	{Group: "coordination.k8s.io", Resource: "leases", Verb: "update"}: "leader election (--leader-elect)",
	// cmd/main.go --metrics-secure (set in config/manager/manager.yaml): each scrape is
	// authenticated by a TokenReview and authorized by a SubjectAccessReview. The suite scrapes
	// the operator's metrics over plain HTTP.
	{Group: "authentication.k8s.io", Resource: "tokenreviews", Verb: "create"}:        "metrics authn (--metrics-secure)",
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews", Verb: "create"}: "metrics authz (--metrics-secure)",
	// pkg/native: the cluster's objects carry ownerReferences with blockOwnerDeletion to the
	// FlinkDeployment (objects.go ownerRef) and to the JobManager Deployment (apply.go Apply).
	// The OwnerReferencesPermissionEnforcement admission plugin, on in the suite's API server,
	// checks update on the owner's finalizers subresource: an authorization check inside another
	// request, never a request of its own, so a missing grant shows as a forbidden apply.
	{Group: "flink.apache.org", Resource: "flinkdeployments/finalizers", Verb: "update"}: "blockOwnerDeletion (admission check)",
	{Group: "apps", Resource: "deployments/finalizers", Verb: "update"}:                  "blockOwnerDeletion (admission check)",
	// The children, snapshots and ingress of a FlinkBlueGreenDeployment, owned the same way.
	{Group: "flink.apache.org", Resource: "flinkbluegreendeployments/finalizers", Verb: "update"}: "blockOwnerDeletion (admission check)",
	// pkg/native Apply (deleteIfOurs): a FlinkDeployment switched to HA no longer has the
	// JobManager's internal Service, which is deleted; no scenario turns HA on later.
	{Group: "", Resource: "services", Verb: "delete"}: "internal Service dropped when HA is turned on",
	// controllers/flinkdeployment awaitSessionJobs: a deleted session cluster deletes the
	// FlinkSessionJobs still referencing it once kubernetes.operator.resource.cleanup.timeout
	// (5 min) has passed; no scenario keeps a session job that long (envtest's
	// TestSessionDeletionDeletesItsSessionJobsAtTheBound does, with a short timeout).
	{Group: "flink.apache.org", Resource: "flinksessionjobs", Verb: "delete"}: "a session cluster's deletion past its cleanup timeout",
	// The manager's informers (client-go v0.37, WatchListClient on by default) fill their caches
	// with a streaming watch (sendInitialEvents) where the API server offers it, as the suite's
	// 1.37 does, so no list request is made here. On older API servers, down to minKubeVersion
	// 1.28, they fall back to list: the grant must stay.
	{Group: "", Resource: "configmaps", Verb: "list"}:                                "informer fallback to list (WatchList)",
	{Group: "", Resource: "services", Verb: "list"}:                                  "informer fallback to list (WatchList)",
	{Group: "", Resource: "pods", Verb: "list"}:                                      "informer fallback to list (WatchList)",
	{Group: "apps", Resource: "deployments", Verb: "list"}:                           "informer fallback to list (WatchList)",
	{Group: "flink.apache.org", Resource: "flinkdeployments", Verb: "list"}:          "informer fallback to list (WatchList)",
	{Group: "flink.apache.org", Resource: "flinksessionjobs", Verb: "list"}:          "informer fallback to list (WatchList)",
	{Group: "flink.apache.org", Resource: "flinkstatesnapshots", Verb: "list"}:       "informer fallback to list (WatchList)",
	{Group: "networking.k8s.io", Resource: "ingresses", Verb: "list"}:                "informer fallback to list (WatchList)",
	{Group: "flink.apache.org", Resource: "flinkbluegreendeployments", Verb: "list"}: "informer fallback to list (WatchList)",
}

// operatorFaultTests are the tests that stop, pause or restart the suite's operator. `make test`
// runs them in an e2e process of their own (E2E_FAULT_TESTS in the Makefile, the same pattern),
// beside the process that runs every other test with -skip of this pattern.
const operatorFaultTests = "^(TestChaos|TestWebhookOutage)$"

// lateFaultTests are the operator-fault tests `make test` runs in another lane than the rest of
// the suite (E2E_LATE_FAULT_TESTS in the Makefile, the same pattern): the e2e lane skips them.
const lateFaultTests = "^TestChaos/^suspend-resume"

// filtered tells whether the run was narrowed to some tests (-run, -skip): then grants the
// skipped tests would use look unused, and only refused requests are checked. The narrowings
// that keep the check complete skip operator-fault tests only (operatorFaultTests, or some of
// them: lateFaultTests): they use no grant the other tests do not use (a fault changes when the
// operator acts, not what it does).
func filtered() bool {
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() != "" {
		return true
	}
	f := flag.Lookup("test.skip")
	if f == nil {
		return false
	}
	switch f.Value.String() {
	case "", operatorFaultTests, lateFaultTests:
		return false
	}
	return true
}

// checkRBAC compares config/rbac with what the operator's ServiceAccount did in the run, as
// the API server's audit log tells (package auditcheck): no request refused, and with
// complete, every grant used or in unexercised. It prints the table of used and granted.
func checkRBAC(root, auditDir string, complete bool) error {
	objs, err := localenv.RBACObjects(root)
	if err != nil {
		return err
	}
	user, err := localenv.OperatorUser(root)
	if err != nil {
		return err
	}
	var sa string
	for _, o := range objs {
		if o.GetKind() == "ServiceAccount" {
			sa = o.GetName()
		}
	}
	granted, err := auditcheck.Granted(objs, localenv.OperatorNamespace, sa)
	if err != nil {
		return fmt.Errorf("config/rbac: %w", err)
	}
	requests, err := auditcheck.ReadDir(auditDir)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	report := auditcheck.Check(requests, user, granted, unexercised)
	fmt.Printf("e2e: RBAC check: %d audited requests of %s against config/rbac\n", len(requests), user)
	if err := report.WriteTable(os.Stdout, complete); err != nil {
		return err
	}
	if !complete {
		fmt.Println("e2e: RBAC check: filtered or failed run, only refused (403) requests are checked, not unused grants")
	}
	return report.Err(complete)
}
