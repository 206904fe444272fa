package controllers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers/flinksessionjob"
	"github.com/flink-operator/flink-operator/controllers/internal/fixtures"
	"github.com/flink-operator/flink-operator/pkg/artifact"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/validation"
	"github.com/flink-operator/flink-operator/test/fakeflink"
	"github.com/flink-operator/flink-operator/test/wait"
)

// TestJarURIPasswordNeverShown: a session job whose jarURI carries a password in its user
// info, and whose download fails (HTTP 404): status.error, the events and the operator's log
// lines (where controller-runtime writes the errors a reconcile returns) show the URI without
// the password.
func TestJarURIPasswordNeverShown(t *testing.T) {
	t.Parallel()
	const password = "s3cr3t-pass"
	repo := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(repo.Close)
	jarURI := strings.Replace(repo.URL, "http://", "http://deploy:"+password+"@", 1) + "/job.jar"

	flink := fakeflink.New(t)
	c := testEnv(t).Client
	ctx := context.Background()
	ns := testEnv(t).NewNamespace(t, "jaruri-password")
	session := fixtures.NewDeployment(t, ns, "session")
	session.Spec.Job = nil
	require.NoError(t, c.Create(ctx, session))
	session.Status.JobManagerDeploymentStatus = flinkv1beta1.JobManagerReady
	require.NoError(t, c.Status().Update(ctx, session))

	var mu sync.Mutex
	var logs []string
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, prefix+" "+args)
	}, funcr.Options{Verbosity: 10})
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} // the test's repository
	events, _ := startManager(t, managerOptions{namespaces: []string{ns}, logger: logger,
		setup: func(mgr ctrl.Manager, rec record.EventRecorder) error {
			return (&flinksessionjob.FlinkSessionJobReconciler{
				Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: rec,
				Flink:     &clients.Factory{URLTemplate: flink.URL, Timeout: 2 * time.Second},
				Artifacts: &artifact.Fetcher{MaxSize: 1 << 20, AllowedNetworks: loopback},
				Validator: &validation.Validator{AllowedJarSchemes: []string{"http"}, AllowedNetworks: loopback},
				Intervals: fixtures.FastIntervals(),
			}).SetupWithManager(mgr)
		}})

	job := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "job"},
		Spec: flinkv1beta1.FlinkSessionJobSpec{DeploymentName: "session", Job: &flinkv1beta1.JobSpec{JarURI: jarURI,
			UpgradeMode: flinkv1beta1.UpgradeModeStateless, State: flinkv1beta1.JobStateRunning}}}
	require.NoError(t, c.Create(ctx, job))
	got := &flinkv1beta1.FlinkSessionJob{}
	wait.For(t, 20*time.Second, "the download error in the status", func() bool {
		return c.Get(ctx, client.ObjectKeyFromObject(job), got) == nil && strings.Contains(got.Status.Error, "404")
	}, func() string { return "status.error is " + got.Status.Error })
	events.seen(t, "404")

	require.NotContains(t, got.Status.Error, password)
	require.Contains(t, got.Status.Error, "deploy:", "the URI is shown, without its password")
	events.mu.Lock()
	allEvents := strings.Join(events.events, "\n")
	events.mu.Unlock()
	require.NotContains(t, allEvents, password)
	mu.Lock()
	allLogs := strings.Join(logs, "\n")
	mu.Unlock()
	require.NotEmpty(t, allLogs)
	require.NotContains(t, allLogs, password)
}
