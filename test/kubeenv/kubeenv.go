// Package kubeenv starts a real kube-apiserver and etcd (controller-runtime envtest) with the
// project's CRDs installed, for tests. The binaries are built from the Go module proxy by
// `make envtest-assets` and found through KUBEBUILDER_ASSETS, which `make test` sets.
package kubeenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/repo"
)

// Env is a running control plane with the project's CRDs.
type Env struct {
	Environment *envtest.Environment
	Config      *rest.Config
	Client      client.Client
	Scheme      *runtime.Scheme
}

// RepoRoot returns the module root (the directory holding go.mod), found from the working directory.
func RepoRoot() (string, error) { return repo.Root() }

// BuildOperator builds the operator (./cmd of this repository) into the file out, as the
// suites that run it as a process of its own (e2e, OLM, bench) do.
func BuildOperator(ctx context.Context, out string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	// As make image builds it (static, trimmed paths): the binary the tests run is the one the
	// image ships, and it shares make's compiled packages.
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, "./cmd")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if output, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build operator: %w: %s", err, output)
	}
	return nil
}

// Scheme returns a scheme with the built-in types and the flink.apache.org types.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(flinkv1beta1.AddToScheme(s))
	return s
}

// Options tune the control plane.
type Options struct {
	// Webhooks installs the webhook configurations of config/webhook, pointing at a local
	// webhook server whose address and certificates are in Environment.WebhookInstallOptions.
	Webhooks bool
	// CRDDirs are the directories CRDs are installed from, relative to the repository root
	// (default config/crd/bases). Other objects in them are ignored.
	CRDDirs []string
	// ServiceCIDR is the API server's service-cluster-ip-range (default envtest's 10.0.0.0/24,
	// 256 ClusterIPs); the scale benchmark needs one per FlinkDeployment.
	ServiceCIDR string
}

// Start starts a control plane of the test's own and stops it when the test ends. A missing
// KUBEBUILDER_ASSETS fails the test with the command that fixes it: these tests are never
// skipped. Tests share one per package (Shared) unless they need other Options than their
// package's others.
func Start(t testing.TB, opts ...Options) *Env {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	env, err := start(o)
	if err != nil {
		t.Fatalf("start envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Environment.Stop(); err != nil {
			t.Logf("stop envtest: %v", err)
		}
	})
	return env
}

func start(o Options) (*Env, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, " +
			"which builds kube-apiserver and etcd into bin/ and sets it")
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	scheme := Scheme()
	crdDirs := []string{filepath.Join(root, "config", "crd", "bases")}
	if len(o.CRDDirs) > 0 {
		crdDirs = nil
		for _, d := range o.CRDDirs {
			crdDirs = append(crdDirs, filepath.Join(root, d))
		}
	}
	te := &envtest.Environment{
		CRDDirectoryPaths:     crdDirs,
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
		// Discovery of the large CRDs (FlinkDeployment, FlinkBlueGreenDeployment embed pod
		// templates) can exceed envtest's default 10 s on a loaded 2-core machine, and took
		// over a minute for test/monitoring's control plane at a load of 25.
		CRDInstallOptions: envtest.CRDInstallOptions{MaxTime: 3 * time.Minute},
		// So can kube-apiserver's start (envtest's default 20 s), when other suites run
		// beside this one.
		ControlPlaneStartTimeout: 2 * time.Minute,
	}
	if o.Webhooks {
		te.WebhookInstallOptions = envtest.WebhookInstallOptions{Paths: []string{filepath.Join(root, "config", "webhook", "manifests.yaml")}}
	}
	if o.ServiceCIDR != "" {
		te.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", o.ServiceCIDR)
	}
	cfg, err := te.Start()
	if err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = te.Stop()
		return nil, fmt.Errorf("create client: %w", err)
	}
	return &Env{Environment: te, Config: cfg, Client: c, Scheme: scheme}, nil
}

// Kubectl runs the kubectl found beside the control-plane binaries against the environment,
// returning its combined output.
func (e *Env) Kubectl(args ...string) (string, error) {
	admin, err := e.Environment.ControlPlane.AddUser(envtest.User{Name: "kubectl", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("kubectl user: %w", err)
	}
	kubectl, err := admin.Kubectl()
	if err != nil {
		return "", fmt.Errorf("kubectl: %w", err)
	}
	stdout, stderr, err := kubectl.Run(args...)
	out := ""
	if stdout != nil {
		b, _ := io.ReadAll(stdout)
		out += string(b)
	}
	if stderr != nil {
		b, _ := io.ReadAll(stderr)
		out += string(b)
	}
	return out, err
}

// StartMain starts a control plane for a whole test binary, from TestMain, where there is no
// testing.T to fail or clean up with: the caller runs stop after m.Run. One control plane per
// package keeps the tests fast (starting etcd and kube-apiserver takes seconds); the tests keep
// out of each other's way with namespaces of their own (see NewNamespace).
func StartMain(o Options) (env *Env, stop func(), err error) {
	e, err := start(o)
	if err != nil {
		return nil, nil, err
	}
	return e, func() {
		if err := e.Environment.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop envtest: %v\n", err)
		}
	}, nil
}

// RunWith starts a control plane for a whole test binary (for TestMain), stores it in *env,
// runs the tests and stops it. It returns the exit code for os.Exit.
func RunWith(m *testing.M, env **Env, opts ...Options) int {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	e, stop, err := StartMain(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "start envtest: %v\n", err)
		return 1
	}
	*env = e
	defer stop()
	return m.Run()
}

// Shared is the one control plane of a package's tests, started by the first test that asks
// for it (Get) and stopped by TestMain (Run) after all of them. Starting lazily keeps the
// package's pure tests runnable without the envtest binaries (`make golden`, `go test -run`
// of a table test), and a missing KUBEBUILDER_ASSETS still fails every test that needs them,
// saying how to fix it.
type Shared struct {
	// Options tune the control plane; set them before the first Get.
	Options Options

	once sync.Once
	env  *Env
	err  error
}

// Get returns the control plane, starting it on the first call; if it cannot start, t fails.
func (s *Shared) Get(t testing.TB) *Env {
	t.Helper()
	s.once.Do(func() { s.env, s.err = start(s.Options) })
	if s.err != nil {
		t.Fatalf("start envtest: %v", s.err)
	}
	return s.env
}

// Run runs the tests and then stops the control plane if one of them started it. It returns
// the exit code for os.Exit:
//
//	var shared kubeenv.Shared
//	func TestMain(m *testing.M) { os.Exit(shared.Run(m)) }
func (s *Shared) Run(m *testing.M) int {
	code := m.Run()
	if s.env != nil {
		if err := s.env.Environment.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop envtest: %v\n", err)
		}
	}
	return code
}

// namespaces numbers the namespaces NewNamespace creates in this process.
var namespaces atomic.Int64

// NewNamespace creates a namespace named after prefix that no other test of this process uses,
// and returns its name. A shared control plane keeps what earlier tests left (envtest runs no
// namespace controller, so a deleted namespace is never emptied), and `go test -count=N` runs
// the same test again against it: a fixed name would collide.
func (e *Env) NewNamespace(t testing.TB, prefix string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", prefix, namespaces.Add(1))
	if err := e.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}
