//go:build e2e

package deploy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/pkg/webhookcert"
	"github.com/flink-operator/flink-operator/test/kubeenv"
	"github.com/flink-operator/flink-operator/test/localenv"
	"github.com/flink-operator/flink-operator/test/operatorinstall"
	"github.com/flink-operator/flink-operator/test/podnet"
	"github.com/flink-operator/flink-operator/test/wait"
)

func TestMain(m *testing.M) {
	// The test's own clients print API warnings through controller-runtime's logger.
	ctrllog.SetLogger(logr.Discard())
	// The API server calls the operator's webhooks through their Service, which needs pod
	// addresses EndpointSlices accept: a network namespace of its own (package podnet).
	podnet.Enter("deploy", true)
	os.Exit(m.Run())
}

const jobsNS = "flink-jobs"

// TestMakeDeploy installs what `make deploy` applies (kustomize build config/default, applied
// server-side by kubectl) on the local cluster, nothing else: the operator's pods run the
// manager built from ./cmd in place of its image, with the Deployment's arguments, under the
// install's ServiceAccount and RBAC. The operator issues its webhook certificate and injects
// its CA, the webhooks refuse a bad FlinkDeployment naming the field, and the shipped sample
// FlinkDeployment runs on real Flink.
//
// The one addition is the node agent's (operatorinstall.Install.ProcessImages): processes cannot
// resolve Service names (no cluster DNS on this machine), so the operator addresses JobManagers
// by pod IP.
func TestMakeDeploy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	dir := t.TempDir()
	in := build(t, "default")

	manager := filepath.Join(dir, "manager")
	require.NoError(t, kubeenv.BuildOperator(ctx, manager))
	env, err := localenv.Start(ctx, localenv.Options{Dir: dir, SkipCRDs: true, Pods: podnet.Current(),
		ProcessImages: in.ProcessImages(manager)})
	require.NoError(t, err)
	t.Cleanup(env.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			printOperatorLogs(t, dir, in.Namespace())
		}
	})
	logf(t, "local cluster up after %s", time.Since(start).Round(time.Second))

	// make deploy: kustomize build config/default | kubectl apply --server-side -f -
	require.NoError(t, operatorinstall.Apply(ctx, filepath.Join(localenv.KubeBinDir(root), "kubectl"), env.Cluster.Kubeconfig, in.Objects))

	c := env.Client
	wait.Until(t, ctx, 3*time.Minute, "both operator replicas ready (certificate issued, webhooks served)", func() (bool, error) {
		return in.Ready(ctx, c)
	})
	logf(t, "operator ready after %s", time.Since(start).Round(time.Second))

	t.Run("certificate issued and its CA injected", func(t *testing.T) {
		var secret corev1.Secret
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: in.Namespace(), Name: in.Flags["webhook-cert-secret"]}, &secret))
		bundle := secret.Data[webhookcert.KeyCABundle]
		require.NotEmpty(t, bundle)
		require.NotEmpty(t, secret.Data[webhookcert.KeyServingCert])
		targets, err := webhookcert.ParseTargets(in.Flags["webhook-ca-targets"])
		require.NoError(t, err)
		for _, tg := range targets {
			switch tg.Kind {
			case webhookcert.ValidatingWebhookConfiguration:
				var v admissionregistrationv1.ValidatingWebhookConfiguration
				require.NoError(t, c.Get(ctx, client.ObjectKey{Name: tg.Name}, &v))
				for _, w := range v.Webhooks {
					assert.Equal(t, bundle, w.ClientConfig.CABundle, w.Name)
				}
			case webhookcert.MutatingWebhookConfiguration:
				var m admissionregistrationv1.MutatingWebhookConfiguration
				require.NoError(t, c.Get(ctx, client.ObjectKey{Name: tg.Name}, &m))
				for _, w := range m.Webhooks {
					assert.Equal(t, bundle, w.ClientConfig.CABundle, w.Name)
				}
			}
		}
	})

	require.NoError(t, env.Namespace(ctx, jobsNS))
	t.Run("webhook refuses a bad FlinkDeployment naming the field", func(t *testing.T) {
		bad := sample(t, root)
		bad.Name = "two-jobmanagers-without-ha"
		bad.Spec.JobManager.Replicas = 2
		err := c.Create(ctx, bad)
		require.Error(t, err, "two JobManagers without HA must be refused")
		assert.Contains(t, err.Error(), `admission webhook "vflinkdeployment-v1beta1.flink.apache.org" denied the request`)
		assert.Contains(t, err.Error(), "spec.jobManager.replicas")
	})

	t.Run("sample reaches RUNNING on Flink", func(t *testing.T) {
		dep := sample(t, root)
		require.NoError(t, c.Create(ctx, dep), "the webhooks admit the shipped sample")
		key := client.ObjectKeyFromObject(dep)
		var got flinkv1beta1.FlinkDeployment
		wait.Until(t, ctx, 3*time.Minute, "the sample's job RUNNING", func() (bool, error) {
			if err := c.Get(ctx, key, &got); err != nil {
				return false, err
			}
			return got.Status.JobStatus.State == flinkv1beta1.JobStatusRunning, nil
		})
		logf(t, "sample RUNNING after %s", time.Since(start).Round(time.Second))
		rest := flinkREST(t, ctx, c, key)
		jobs, err := rest.JobsOverview(ctx)
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		assert.Equal(t, got.Status.JobStatus.JobID, jobs[0].ID, "Flink runs the job the status names")
		assert.Equal(t, "RUNNING", string(jobs[0].State))
	})

	t.Run("no request of the operator was refused", func(t *testing.T) {
		logs := operatorLogs(t, dir, in.Namespace())
		require.Len(t, logs, int(*in.Deployment.Spec.Replicas), "a log per replica")
		for path, content := range logs {
			assert.Contains(t, content, "webhook serving certificate in place", path)
			for _, line := range strings.Split(content, "\n") {
				assert.NotContains(t, strings.ToLower(line), "forbidden", path)
			}
		}
	})
}

// sample is the shipped sample FlinkDeployment (config/samples) in the jobs namespace.
func sample(t *testing.T, root string) *flinkv1beta1.FlinkDeployment {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "config", "samples", "flink_v1beta1_flinkdeployment.yaml"))
	require.NoError(t, err)
	dep := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, yaml.UnmarshalStrict(data, dep))
	dep.Namespace = jobsNS
	return dep
}

// flinkREST is a client of the cluster's JobManager, as Flink itself answers.
func flinkREST(t *testing.T, ctx context.Context, c client.Client, key client.ObjectKey) *flink.Client {
	t.Helper()
	var pods corev1.PodList
	require.NoError(t, c.List(ctx, &pods, client.InNamespace(key.Namespace),
		client.MatchingLabels{native.LabelApp: key.Name, native.LabelComponent: native.ComponentJobManager}))
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" {
			cl, err := flink.New(flink.Options{URL: "http://" + p.Status.PodIP + ":8081", Timeout: 5 * time.Second})
			require.NoError(t, err)
			return cl
		}
	}
	t.Fatalf("%s: no JobManager pod", key)
	return nil
}

// operatorLogs are the operator pods' logs, by path.
func operatorLogs(t *testing.T, dir, namespace string) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "node", "pods", namespace+"_*", "logs", "manager.out"))
	require.NoError(t, err)
	out := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		out[p] = string(b)
	}
	return out
}

func printOperatorLogs(t *testing.T, dir, namespace string) {
	for path, content := range operatorLogs(t, dir, namespace) {
		lines := strings.Split(strings.TrimSpace(content), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		t.Logf("%s (last %d lines):\n%s", path, len(lines), strings.Join(lines, "\n"))
	}
}

func logf(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf(time.Now().Format("15:04:05")+" "+format, args...)
}
