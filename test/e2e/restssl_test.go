//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/test/pki"
	"github.com/flink-operator/flink-operator/test/wait"
)

// restTruststoreDir is the operator's --flink-rest-truststore-dir (TestMain): the place where,
// as in upstream's layout, the operator finds the truststore a cluster's configuration names.
func restTruststoreDir() string { return filepath.Join(env.Dir, "rest-truststores") }

// TestRESTSSLApplication is upstream's basic-secure example on real Flink: the JobManager's
// keystore comes from a Secret mounted by kubernetes.secrets at /opt/flink/tls-cert, its REST
// endpoint speaks only TLS (a plain request gets a redirect to https), the JobManager has
// upstream's startup probe, and the operator trusts the cluster through the truststore its
// configuration names. The application reaches RUNNING and a manual savepoint
// (savepointTriggerNonce) completes, as Flink itself reports over TLS. The old code mounted no
// keystore, so the JobManager could not start its REST endpoint.
func TestRESTSSLApplication(t *testing.T) {
	t.Parallel()
	const (
		ns, name = "e2e-restssl", "basic-secure"
		password = "password1234"
	)
	ctx := context.Background()
	require.NoError(t, env.Namespace(ctx, ns))

	ca := pki.NewCA(t, "FlinkCA")
	jmCert := ca.Issue(t, "FlinkDeployment", "*."+ns+".svc", "*.svc.cluster.local", name+"-rest")
	require.NoError(t, env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-cert"},
		Data: map[string][]byte{"keystore.jks": jmCert.KeystoreJKS(t, password), "truststore.jks": ca.TruststoreJKS(t, password)}}))
	// The operator reads the cluster's truststore at the path its configuration names, below
	// --flink-rest-truststore-dir (upstream's chart mounts the certificate into the operator).
	truststore := filepath.Join(restTruststoreDir(), ns, name, "truststore.jks")
	require.NoError(t, os.MkdirAll(filepath.Dir(truststore), 0o755))
	pki.Write(t, truststore, ca.TruststoreJKS(t, password))

	dep := example(t, "examples/checkpoint-ha/checkpoint-ha.yaml", ns)
	dep.Name = name
	dep.Spec.Job.UpgradeMode = flinkv1beta1.UpgradeModeStateless
	// Arguments a ';'-join would split, unquote or trim; the example job keeps its arguments as
	// its global job parameters, which Flink shows.
	dep.Spec.Job.Args = []string{"--statement", "SELECT a; SELECT b", "--quoted", `'single' "double"`, "--padded", " edge "}
	conf, err := dep.Spec.FlinkConfiguration.Flatten()
	require.NoError(t, err)
	delete(conf, "high-availability.type")
	delete(conf, "high-availability.storageDir")
	for k, v := range map[string]string{
		"security.ssl.rest.enabled":             "true",
		"security.ssl.rest.keystore":            "/opt/flink/tls-cert/keystore.jks",
		"security.ssl.rest.keystore-password":   password,
		"security.ssl.rest.key-password":        password,
		"security.ssl.rest.truststore":          truststore,
		"security.ssl.rest.truststore-password": password,
		"kubernetes.secrets":                    name + "-cert:/opt/flink/tls-cert",
	} {
		conf[k] = v
	}
	dep.Spec.FlinkConfiguration = flinkv1beta1.NewFlinkConfiguration(conf)
	key := client.ObjectKeyFromObject(dep)
	require.NoError(t, env.Client.Create(ctx, dep))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), dep) })

	d := waitFor(t, key, "Ready and RUNNING over TLS", 4*time.Minute, readyAndRunning)
	jobID := d.Status.JobStatus.JobID

	jm := &appsv1.Deployment{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: native.JobManagerDeploymentName(name)}, jm))
	// Upstream's probe, plain http on the TLS endpoint: Flink redirects it to https, which counts
	// as success, so the pod became ready.
	probe := jm.Spec.Template.Spec.Containers[0].StartupProbe
	require.NotNil(t, probe)
	require.Equal(t, "/config", probe.HTTPGet.Path)
	require.Equal(t, corev1.URISchemeHTTP, probe.HTTPGet.Scheme)
	require.Nil(t, jm.Spec.Template.Spec.Containers[0].ReadinessProbe)
	require.GreaterOrEqual(t, jm.Status.ReadyReplicas, int32(1))

	// Flink's own answers, over TLS, verified against the cluster's CA.
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	tlsConf := &tls.Config{RootCAs: roots, ServerName: name + "-rest", MinVersion: tls.VersionTLS12,
		CipherSuites: []uint16{tls.TLS_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}}
	rest, err := flink.New(flink.Options{URL: "https://" + jobManagerPod(t, key).Status.PodIP + ":8081", Timeout: 10 * time.Second, TLS: tlsConf})
	require.NoError(t, err)
	details, err := rest.JobDetails(ctx, jobID)
	require.NoError(t, err)
	require.Equal(t, flink.JobRunning, details.State)

	t.Run("the job received job.args exactly", func(t *testing.T) {
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConf.Clone()}}
		resp, err := hc.Get("https://" + jobManagerPod(t, key).Status.PodIP + ":8081/jobs/" + jobID + "/config")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var conf struct {
			ExecutionConfig struct {
				UserConfig map[string]string `json:"user-config"`
			} `json:"execution-config"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&conf))
		user := conf.ExecutionConfig.UserConfig
		require.Equal(t, "SELECT a; SELECT b", user["statement"], "%v", user)
		require.Equal(t, `'single' "double"`, user["quoted"], "%v", user)
		require.Equal(t, " edge ", user["padded"], "%v", user)
	})

	patch(t, key, func(d *flinkv1beta1.FlinkDeployment) { d.Spec.Job.SavepointTriggerNonce = ptr(int64(1)) })
	snaps := waitForSnapshots(t, ns, name, "MANUAL", 1, 2*time.Minute)
	snap := waitSnapshotState(t, client.ObjectKeyFromObject(&snaps[0]), flinkv1beta1.SnapshotCompleted)
	var stats *flink.CheckpointStatistics
	wait.For(t, time.Minute, "Flink reports the completed savepoint at "+snap.Status.Path, func() bool {
		stats, err = rest.CheckpointStatistics(ctx, jobID)
		return err == nil && stats.Latest.Savepoint != nil && localPath(stats.Latest.Savepoint.ExternalPath) == localPath(snap.Status.Path)
	}, func() string { return fmt.Sprintf("last answer %v %+v", err, stats) })
	require.FileExists(t, filepath.Join(localPath(snap.Status.Path), "_metadata"))
	d = &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, env.Client.Get(ctx, key, d))
	require.Equal(t, jobID, d.Status.JobStatus.JobID, "a manual savepoint does not restart the job")
}
