//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/podnet"
	"github.com/flink-operator/flink-operator/test/wait"
)

// webhookTimeout is the webhooks' timeoutSeconds (pkg/webhook's markers): how long the API
// server waits for a hung operator before it refuses a write.
const webhookTimeout = 5 * time.Second

// holdFinalizer keeps a deleted FlinkDeployment in place whatever the operator does, as the
// operator's own finalizer does while it is down.
const holdFinalizer = "e2e.flink-operator.test/hold"

// TestWebhookOutage: with the operator hung (SIGSTOPped: the webhook port takes
// connections and never answers) and then stopped (the port refuses them), the installed
// webhooks (config/webhook, failurePolicy Fail) must (a) let the finalizers of a FlinkDeployment
// that is being deleted be removed, so the object goes away, and (b) refuse an update of a live
// one within timeoutSeconds, with an error naming the webhook.
func TestWebhookOutage(t *testing.T) {
	require.Equal(t, podnet.Namespace, podnet.Current(),
		"the webhooks are served through their Service only in a network namespace (run the suite as root)")
	ctx := context.Background()
	const namespace = "webhook-outage"
	hung := outageDeployment(t, namespace, "hung")
	down := outageDeployment(t, namespace, "down")
	t.Cleanup(func() {
		// Whatever failed, the suites after this one get a running operator back.
		_ = env.ResumeOperator()
		_ = env.RestartOperator(context.Background())
	})

	require.NoError(t, env.PauseOperator())
	logf(t, "operator paused (SIGSTOP)")
	t.Run("hung operator: a spec update is refused within timeoutSeconds", func(t *testing.T) {
		elapsed, err := updateParallelism(ctx, hung)
		require.Error(t, err, "the webhooks fail closed")
		logf(t, "refused in %s: %v", elapsed.Round(time.Millisecond), err)
		assert.Contains(t, err.Error(), `failed calling webhook "vflinkdeployment-v1beta1.flink.apache.org"`)
		assert.GreaterOrEqual(t, elapsed, webhookTimeout-time.Second, "the API server waited for the hung webhook: %v", err)
		assert.Less(t, elapsed, webhookTimeout+2*time.Second, "refused after timeoutSeconds, not the API server's 10 s default: %v", err)
	})
	t.Run("hung operator: the finalizers of a deleted resource can be removed", func(t *testing.T) {
		removeFinalizersOfDeleted(t, hung)
	})

	require.NoError(t, env.ResumeOperator())
	env.StopOperator()
	logf(t, "operator stopped")
	t.Run("stopped operator: a spec update is refused", func(t *testing.T) {
		elapsed, err := updateParallelism(ctx, down)
		require.Error(t, err, "the webhooks fail closed")
		assert.Contains(t, err.Error(), `failed calling webhook "vflinkdeployment-v1beta1.flink.apache.org"`)
		assert.Less(t, elapsed, webhookTimeout+2*time.Second, "%v", err)
	})
	t.Run("stopped operator: the finalizers of a deleted resource can be removed", func(t *testing.T) {
		removeFinalizersOfDeleted(t, down)
	})
	// The match condition skips only objects being deleted: creates still go through every
	// webhook (a condition that skipped them would let invalid resources in silently).
	t.Run("stopped operator: creates are refused", func(t *testing.T) {
		dep := example(t, "examples/basic/basic.yaml", namespace)
		dep.Name = "created-while-down"
		err := env.Client.Create(ctx, dep)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `failed calling webhook "vflinkdeployment-v1beta1.flink.apache.org"`)
		job := &flinkv1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "created-while-down"},
			Spec: flinkv1beta1.FlinkSessionJobSpec{DeploymentName: "session", Job: &flinkv1beta1.JobSpec{JarURI: "https://example.com/job.jar"}}}
		err = env.Client.Create(ctx, job)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `failed calling webhook "mflinksessionjob-v1beta1.flink.apache.org"`)
	})
}

// outageDeployment creates a suspended FlinkDeployment (nothing runs) that holds holdFinalizer,
// and waits until the operator added its own finalizer.
func outageDeployment(t *testing.T, namespace, name string) client.ObjectKey {
	t.Helper()
	dep := example(t, "examples/basic/basic.yaml", namespace)
	dep.Name = name
	dep.Spec.Job.State = flinkv1beta1.JobStateSuspended
	dep.Finalizers = []string{holdFinalizer}
	require.NoError(t, env.Client.Create(context.Background(), dep))
	key := client.ObjectKeyFromObject(dep)
	waitFor(t, key, "operator finalizer added", time.Minute, func(d *flinkv1beta1.FlinkDeployment) bool {
		return len(d.Finalizers) > 1
	})
	return key
}

// updateParallelism changes the spec of a live FlinkDeployment and says how long the API server
// took to answer.
func updateParallelism(ctx context.Context, key client.ObjectKey) (time.Duration, error) {
	dep := &flinkv1beta1.FlinkDeployment{}
	if err := env.Client.Get(ctx, key, dep); err != nil {
		return 0, err
	}
	before := dep.DeepCopy()
	dep.Spec.Job.Parallelism++
	start := time.Now()
	err := env.Client.Patch(ctx, dep, client.MergeFrom(before))
	return time.Since(start), err
}

// removeFinalizersOfDeleted deletes the FlinkDeployment, which its finalizers keep, removes
// them as an administrator does when the operator cannot, and waits until it is gone.
func removeFinalizersOfDeleted(t *testing.T, key client.ObjectKey) {
	t.Helper()
	ctx := context.Background()
	dep := &flinkv1beta1.FlinkDeployment{}
	require.NoError(t, env.Client.Get(ctx, key, dep))
	require.NoError(t, env.Client.Delete(ctx, dep))
	require.NoError(t, env.Client.Get(ctx, key, dep))
	require.NotNil(t, dep.DeletionTimestamp, "the finalizers keep it")
	require.NotEmpty(t, dep.Finalizers)

	start := time.Now()
	err := env.Client.Patch(ctx, dep, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	require.NoError(t, err, "finalizer removal must not need the webhooks (took %s)", time.Since(start).Round(time.Millisecond))
	logf(t, "%s: finalizers removed in %s", key.Name, time.Since(start).Round(time.Millisecond))
	wait.For(t, 10*time.Second, fmt.Sprintf("%s is gone once its finalizers are", key.Name), func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, key, &flinkv1beta1.FlinkDeployment{}))
	})
}
