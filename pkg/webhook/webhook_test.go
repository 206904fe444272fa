package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flink-operator/flink-operator/test/wait"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/validation"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// startWebhooks runs a control plane with the webhook configurations installed and a manager
// serving them. It is the package's only control plane (one test uses it), and the only one
// with webhooks: the API server calls them for every object, so it is not shared with tests
// that must run without.
func startWebhooks(t *testing.T) (*kubeenv.Env, string) {
	t.Helper()
	env := kubeenv.Start(t, kubeenv.Options{Webhooks: true})
	wio := &env.Environment.WebhookInstallOptions
	// The manager caches what an operator instance serving every shard but shard=b would
	// (kubernetes.operator.label.selector: shard!=b): admission is for all shards all the same.
	sel, err := labels.Parse("shard!=b")
	require.NoError(t, err)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme: env.Scheme,
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&flinkv1beta1.FlinkDeployment{}: {Label: sel}, &flinkv1beta1.FlinkSessionJob{}: {Label: sel}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir}),
	})
	require.NoError(t, err)
	require.NoError(t, Setup(mgr, &validation.Validator{}, customValidator(t)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	addr := net.JoinHostPort(wio.LocalServingHost, fmt.Sprint(wio.LocalServingPort))
	wait.For(t, 30*time.Second, "webhook server never started", func() bool {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // test probe
		if err != nil {
			return false
		}
		conn.Close()
		return true
	})
	return env, addr
}

func namespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	require.NoError(t, client.IgnoreAlreadyExists(c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})))
}

func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
	return u
}

const invalidDeployment = `
apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata: {name: broken, namespace: webhooks}
spec:
  image: flink:1.20
  flinkConfiguration: {kubernetes.cluster-id: mine}
  logConfiguration: {log4j.properties: "x"}
  jobManager: {resource: {memory: 1g, cpu: 0}}
  taskManager: {resource: {memory: 1g, cpu: 1}}
  job: {jarURI: "local:///job.jar", parallelism: 1, upgradeMode: savepoint}
`

var invalidDeploymentErrors = []string{
	`spec.flinkVersion: Required value: one of v1_15`,
	`spec.serviceAccount: Required value: the service account of the Flink pods`,
	`spec.flinkConfiguration[kubernetes.cluster-id]: Forbidden: set by the operator from the resource's name and namespace`,
	`spec.logConfiguration[log4j.properties]: Unsupported value: "log4j.properties": supported values: "log4j-console.properties", "logback-console.xml"`,
	`spec.jobManager.resource.cpu: Invalid value: 0: must be greater than 0`,
	`spec.flinkConfiguration[execution.checkpointing.dir]: Required value: upgradeMode savepoint needs a checkpoint directory`,
	`spec.flinkConfiguration[execution.checkpointing.savepoint-dir]: Required value: upgradeMode savepoint needs a savepoint directory`,
}

func TestWebhooks(t *testing.T) {
	env, addr := startWebhooks(t)
	ctx := context.Background()
	c := env.Client
	namespace(t, c, "webhooks")

	t.Run("all errors of a resource are reported at once", func(t *testing.T) {
		err := c.Create(ctx, object(t, invalidDeployment))
		require.Error(t, err)
		assert.True(t, apierrors.IsForbidden(err) || apierrors.IsInvalid(err), "%v", err)
		assert.Contains(t, err.Error(), `admission webhook "vflinkdeployment-v1beta1.flink.apache.org" denied the request: FlinkDeployment.flink.apache.org "broken" is invalid`)
		for _, want := range invalidDeploymentErrors {
			assert.Contains(t, err.Error(), want)
		}
	})

	t.Run("kubectl apply shows every error, and warnings", func(t *testing.T) {
		// Not t.TempDir(): its name holds the subtest's comma, and kubectl -f splits at commas.
		dir, err := os.MkdirTemp("", "kubectl-apply")
		require.NoError(t, err)
		t.Cleanup(func() { os.RemoveAll(dir) })
		file := filepath.Join(dir, "broken.yaml")
		require.NoError(t, os.WriteFile(file, []byte(invalidDeployment), 0o600))
		out, err := env.Kubectl("apply", "-f", file)
		require.Error(t, err)
		for _, want := range invalidDeploymentErrors {
			assert.Contains(t, out, want)
		}
		t.Logf("kubectl apply:\n%s", out)

		old := strings.NewReplacer("name: broken", "name: old-version", "flinkConfiguration: {kubernetes.cluster-id: mine}",
			"flinkConfiguration: {state.checkpoints.dir: file:///cp, state.savepoints.dir: file:///sp}",
			"logConfiguration: {log4j.properties: \"x\"}", "flinkVersion: v1_16\n  serviceAccount: flink",
			"cpu: 0", "cpu: 1").Replace(invalidDeployment)
		require.NoError(t, os.WriteFile(file, []byte(old), 0o600))
		out, err = env.Kubectl("apply", "-f", file)
		require.NoError(t, err, out)
		assert.Contains(t, out, "Warning: spec.flinkVersion v1_16 is deprecated")
		assert.Contains(t, out, "Warning: spec.jobManager.resource is deprecated; use spec.jobManager.resources")
	})

	t.Run("updates are checked against what was deployed", func(t *testing.T) {
		dep := &flinkv1beta1.FlinkDeployment{}
		require.NoError(t, yaml.UnmarshalStrict([]byte(`
metadata: {name: running, namespace: webhooks}
spec:
  image: flink:1.20
  flinkVersion: v1_20
  serviceAccount: flink
  jobManager: {resource: {memory: 1g, cpu: 1}}
  taskManager: {resource: {memory: 1g, cpu: 1}}
  job: {jarURI: "local:///job.jar", parallelism: 1}
`), dep))
		require.NoError(t, c.Create(ctx, dep))
		// The operator records what it deployed (status writes bypass the webhooks).
		deployed, err := flinkv1beta1.EncodeReconciledSpec(dep.Spec, true)
		require.NoError(t, err)
		dep.Status.ReconciliationStatus.LastReconciledSpec = deployed
		require.NoError(t, c.Status().Update(ctx, dep))

		dep.Spec.Mode = flinkv1beta1.DeploymentModeStandalone
		dep.Spec.Job = nil
		err = c.Update(ctx, dep)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `spec.job: Forbidden: cannot turn an application cluster into a session cluster`)
		assert.Contains(t, err.Error(), `spec.mode: Forbidden: cannot change from native to standalone after the first deployment`)

		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(dep), dep))
		dep.Spec.Job.Parallelism = 4
		require.NoError(t, c.Update(ctx, dep), "an ordinary change passes")
	})

	t.Run("session jobs get target.session and keep their deployment", func(t *testing.T) {
		job := object(t, `
apiVersion: flink.apache.org/v1beta1
kind: FlinkSessionJob
metadata: {name: wordcount, namespace: webhooks}
spec:
  deploymentName: session
  job: {jarURI: "https://repo.example.com/job.jar", parallelism: 1}
`)
		require.NoError(t, c.Create(ctx, job))
		assert.Equal(t, "session", job.GetLabels()[LabelTargetSession])

		require.NoError(t, unstructured.SetNestedField(job.Object, "other", "spec", "deploymentName"))
		err := c.Update(ctx, job)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `spec.deploymentName: Forbidden: cannot move a job from "session" to "other"`)

		onApp := object(t, `
apiVersion: flink.apache.org/v1beta1
kind: FlinkSessionJob
metadata: {name: misplaced, namespace: webhooks}
spec:
  deploymentName: running
  job: {jarURI: "https://repo.example.com/job.jar", parallelism: 1}
`)
		err = c.Create(ctx, onApp)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `spec.deploymentName: Invalid value: "running": names an application cluster`)
	})

	t.Run("snapshots must reference an existing job", func(t *testing.T) {
		snap := object(t, `
apiVersion: flink.apache.org/v1beta1
kind: FlinkStateSnapshot
metadata: {name: sp, namespace: webhooks}
spec:
  jobReference: {kind: FlinkDeployment, name: nowhere}
  savepoint: {}
`)
		err := c.Create(ctx, snap)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `spec.jobReference.name: Not found: "FlinkDeployment nowhere"`)
		require.NoError(t, unstructured.SetNestedField(snap.Object, "running", "spec", "jobReference", "name"))
		require.NoError(t, c.Create(ctx, snap))
	})

	t.Run("references to another shard's resources are found", func(t *testing.T) {
		dep := &flinkv1beta1.FlinkDeployment{}
		require.NoError(t, yaml.UnmarshalStrict([]byte(`
metadata: {name: elsewhere, namespace: webhooks, labels: {shard: b}}
spec:
  image: flink:1.20
  flinkVersion: v1_20
  serviceAccount: flink
  jobManager: {resource: {memory: 1g, cpu: 1}}
  taskManager: {resource: {memory: 1g, cpu: 1}}
  job: {jarURI: "local:///job.jar", parallelism: 1}
`), dep))
		require.NoError(t, c.Create(ctx, dep))
		snap := object(t, `
apiVersion: flink.apache.org/v1beta1
kind: FlinkStateSnapshot
metadata: {name: sp-elsewhere, namespace: webhooks}
spec:
  jobReference: {kind: FlinkDeployment, name: elsewhere}
  savepoint: {}
`)
		require.NoError(t, c.Create(ctx, snap), "a snapshot of another shard's FlinkDeployment is admitted")
		onApp := object(t, `
apiVersion: flink.apache.org/v1beta1
kind: FlinkSessionJob
metadata: {name: misplaced-elsewhere, namespace: webhooks}
spec:
  deploymentName: elsewhere
  job: {jarURI: "https://repo.example.com/job.jar", parallelism: 1}
`)
		err := c.Create(ctx, onApp)
		require.Error(t, err, "the session job's cluster is found, and it is an application cluster")
		assert.Contains(t, err.Error(), `spec.deploymentName: Invalid value: "elsewhere": names an application cluster`)
	})

	t.Run("upstream examples are all admitted", func(t *testing.T) {
		admitUpstreamExamples(t, c)
	})

	t.Run("a blue/green template is validated as a FlinkDeployment", func(t *testing.T) {
		testBlueGreenWebhook(t, c)
	})

	t.Run("a rotated certificate is served without a restart", func(t *testing.T) {
		dir := env.Environment.WebhookInstallOptions.LocalServingCertDir
		before := servedCertificate(t, addr)
		certPEM, keyPEM := selfSignedCert(t, "rotated.webhook.test")
		// Write the key first and the certificate last, as a rotation would.
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600))
		wait.For(t, 30*time.Second, fmt.Sprintf("the new certificate was never served (was %s)", before.Subject.CommonName), func() bool {
			return servedCertificate(t, addr).Subject.CommonName == "rotated.webhook.test"
		})
	})
}

func admitUpstreamExamples(t *testing.T, c client.Client) {
	ctx := context.Background()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	base := filepath.Join(root, "test", "testdata", "upstream", "examples")
	var deployments, others []*unstructured.Unstructured
	require.NoError(t, filepath.WalkDir(base, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") || strings.Contains(path, "kustomize") || strings.HasSuffix(path, "pre-install.yaml") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			if u.GroupVersionKind().Group != "flink.apache.org" || u.GetKind() == "FlinkBlueGreenDeployment" {
				continue
			}
			u.SetNamespace("examples")
			if u.GetKind() == "FlinkDeployment" {
				deployments = append(deployments, u)
			} else {
				others = append(others, u)
			}
		}
	}))
	namespace(t, c, "examples")
	admitted := 0
	// Deployments first: session jobs and snapshots refer to them.
	for _, u := range append(deployments, others...) {
		err := c.Create(ctx, u)
		if apierrors.IsAlreadyExists(err) {
			continue // examples reuse names across files
		}
		require.NoError(t, err, "%s %s", u.GetKind(), u.GetName())
		admitted++
	}
	assert.GreaterOrEqual(t, admitted, 20)
}

func servedCertificate(t *testing.T, addr string) *x509.Certificate {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // inspecting the served certificate
	require.NoError(t, err)
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

func selfSignedCert(t *testing.T, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}
