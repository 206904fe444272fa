package kubectlflink

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// testNow is the clock of every test: ages are printed against it.
var testNow = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

// fakeCluster is what a command under test talks to.
type fakeCluster struct {
	client client.WithWatch
	kube   kubernetes.Interface
}

func newFakeCluster(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) *fakeCluster {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(objs...).WithInterceptorFuncs(funcs).Build()
	return &fakeCluster{client: c, kube: kubefake.NewClientset()}
}

// run runs kubectl flink with args in namespace ns; it returns what was printed and the error.
func (f *fakeCluster) run(t *testing.T, ns string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewCommandWith("test", genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut},
		func() (*Clients, error) { return &Clients{Client: f.client, Kube: f.kube, Namespace: ns}, nil },
		WithClock(func() time.Time { return testNow }), WithPoll(10*time.Millisecond))
	cmd.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

func mustRun(t *testing.T, f *fakeCluster, ns string, args ...string) string {
	t.Helper()
	out, err := f.run(t, ns, args...)
	require.NoError(t, err, "kubectl flink %v printed:\n%s", args, out)
	return out
}
