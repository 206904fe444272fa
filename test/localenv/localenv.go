// Package localenv assembles the local cluster with real Flink: the control plane of
// package localcluster with the project's CRDs, a node agent that runs pods as Flink
// processes (and busybox containers from the busybox image, BusyboxLayout), and (optionally)
// the operator binary, run outside the cluster the way a developer runs it. `make run-local`
// and the e2e suite use it. Test and development only.
package localenv

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/flink-operator/flink-operator/test/freeport"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/flink-operator/flink-operator/test/flinkcluster"
	"github.com/flink-operator/flink-operator/test/ingressproxy"
	"github.com/flink-operator/flink-operator/test/kubeenv"
	"github.com/flink-operator/flink-operator/test/localcluster"
	"github.com/flink-operator/flink-operator/test/nodeagent"
	"github.com/flink-operator/flink-operator/test/podnet"
)

// Options configure the environment.
type Options struct {
	// Dir holds everything the environment writes; it is created when missing.
	Dir string
	// Log receives progress lines of the cluster and the agent; nil discards them.
	Log io.Writer
	// Operator starts the operator binary (built from ./cmd) against the cluster.
	Operator bool
	// OperatorArgs are extra flags for the operator.
	OperatorArgs []string
	// SkipCRDs leaves the project's CRDs out (the OLM test lets OLM install them).
	SkipCRDs bool
	// StandInImages are passed to the node agent: containers of these images look running and
	// ready without a process (nodeagent.Options.StandInImages).
	StandInImages []string
	// ProcessImages are passed to the node agent: containers of these images run a local
	// binary (nodeagent.Options.ProcessImages).
	ProcessImages map[string]nodeagent.ProcessImage
	// Pods picks the pod address range: package podnet's Namespace mode gives pods addresses
	// EndpointSlices accept, and the operator serves its admission webhooks through their
	// Service (config/webhook) as installed; with Loopback (the default) the webhook
	// configurations name a URL on loopback instead, where the operator serves them.
	Pods podnet.Mode
	// MachineHostsFile is passed to the node agent (nodeagent.Options.MachineHostsFile): a
	// hosts file that resolves Service names for processes outside pods.
	MachineHostsFile string
	// FlinkImages are passed to the node agent: job images built on the Flink image and what
	// they add to it (nodeagent.Options.FlinkImages).
	FlinkImages map[string]nodeagent.FlinkImage
	// Ingress, host:port, starts an Ingress controller serving HTTP there as ingress-nginx
	// does (package ingressproxy); empty starts none.
	Ingress string
}

// Env is a running local environment.
type Env struct {
	Cluster *localcluster.Cluster
	Agent   *nodeagent.Agent
	Client  client.Client
	Kube    kubernetes.Interface
	Dir     string
	// MetricsURL is the operator's metrics endpoint (when it runs).
	MetricsURL string

	cancel   context.CancelFunc
	agentCtx context.Context
	operator *exec.Cmd
	opDone   chan struct{}
	agentLog *os.File
	// What RestartOperator starts again: the binary built once, its arguments and probe.
	opBin   string
	opArgs  []string
	opEnv   []string
	opProbe string
	// webhookConfigs are the admission webhook configurations installed for the operator.
	webhookConfigs []*unstructured.Unstructured
}

// Start brings the environment up: control plane, CRDs, node agent, operator.
func Start(ctx context.Context, opts Options) (*Env, error) {
	root, err := kubeenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	dists, err := flinkcluster.Installed(root)
	if err != nil {
		return nil, err
	}
	busybox := BusyboxLayout(root)
	if _, err := os.Stat(filepath.Join(busybox, "index.json")); err != nil {
		return nil, fmt.Errorf("busybox image (run `make busybox-image`): %w", err)
	}
	e := &Env{Dir: dir}
	clusterOpts := localcluster.Options{
		BinDir: KubeBinDir(root), Dir: filepath.Join(dir, "cluster"), Log: opts.Log}
	if opts.Operator {
		// The API server's audit log records what the operator did (AuditDir).
		user, err := OperatorUser(root)
		if err != nil {
			return nil, err
		}
		clusterOpts.AuditUsers = []string{user}
	}
	e.Cluster, err = localcluster.Start(ctx, clusterOpts)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Env, error) { e.Stop(); return nil, err }

	if !opts.SkipCRDs {
		if _, err := envtest.InstallCRDs(e.Cluster.Config, envtest.CRDInstallOptions{
			Paths: []string{filepath.Join(root, "config", "crd", "bases")}, ErrorIfPathMissing: true,
			// envtest's default of 10 s for discovery to list them is too short on a loaded machine.
			MaxTime: time.Minute}); err != nil {
			return fail(fmt.Errorf("install CRDs: %w", err))
		}
	}
	if e.Client, err = client.New(e.Cluster.Config, client.Options{Scheme: kubeenv.Scheme()}); err != nil {
		return fail(err)
	}
	if e.Kube, err = kubernetes.NewForConfig(e.Cluster.Config); err != nil {
		return fail(err)
	}
	var agentCtx context.Context
	agentCtx, e.cancel = context.WithCancel(context.Background())
	e.agentCtx = agentCtx
	agentLog := opts.Log
	if agentLog == nil {
		f, err := os.Create(filepath.Join(dir, "nodeagent.log"))
		if err != nil {
			return fail(err)
		}
		e.agentLog, agentLog = f, f
	}
	agentOpts := nodeagent.Options{Client: e.Kube, Kubeconfig: e.Cluster.Kubeconfig,
		Dir: filepath.Join(dir, "node"), Dists: dists, Log: agentLog, StandInImages: opts.StandInImages,
		ProcessImages: opts.ProcessImages, Busybox: busybox, MachineHostsFile: opts.MachineHostsFile, FlinkImages: opts.FlinkImages,
		KubeletAPI: &nodeagent.KubeletAPI{CertFile: e.Cluster.Kubelet.ServingCertFile, KeyFile: e.Cluster.Kubelet.ServingKeyFile,
			ClientCAFile: e.Cluster.Kubelet.CAFile}}
	if opts.Pods == podnet.Namespace {
		agentOpts.PodAddressPrefix = podnet.Prefix
	}
	e.Agent, err = nodeagent.Start(agentCtx, agentOpts)
	if err != nil {
		return fail(err)
	}
	if opts.Ingress != "" {
		if _, err := ingressproxy.Start(agentCtx, ingressproxy.Options{Client: e.Kube, Address: opts.Ingress, Log: agentLog}); err != nil {
			return fail(err)
		}
	}
	if opts.Operator {
		if err := e.startOperator(ctx, root, opts.Pods == podnet.Namespace, opts.OperatorArgs); err != nil {
			return fail(err)
		}
	}
	return e, nil
}

// Namespace creates a namespace with the "flink" ServiceAccount upstream's examples run as
// (upstream's Helm chart creates it in watched namespaces; a user creates it here).
func (e *Env) Namespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := e.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "flink", Namespace: name}}
	if err := e.Client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// AuditDir holds the API server's audit log of the operator's requests (audit.log and its
// rotated files), when the environment runs the operator.
func (e *Env) AuditDir() string { return e.Cluster.AuditDir }

// OperatorLog is the operator's log file.
func (e *Env) OperatorLog() string { return filepath.Join(e.Dir, "operator.log") }

// StartOperator starts the operator binary later than Start would have (Options.Operator
// false): the migration test runs another operator first. pods is the environment's
// Options.Pods (webhooks are served in podnet.Namespace mode).
func (e *Env) StartOperator(ctx context.Context, pods podnet.Mode, args []string) error {
	if e.opBin != "" {
		return fmt.Errorf("the operator was started already")
	}
	root, err := kubeenv.RepoRoot()
	if err != nil {
		return err
	}
	return e.startOperator(ctx, root, pods == podnet.Namespace, args)
}

func (e *Env) startOperator(ctx context.Context, root string, throughService bool, extra []string) error {
	bin := filepath.Join(e.Dir, "manager")
	if err := kubeenv.BuildOperator(ctx, bin); err != nil {
		return err
	}
	ports, err := localcluster.FreePorts(2)
	if err != nil {
		return err
	}
	e.opBin = bin
	e.opProbe = "127.0.0.1:" + strconv.Itoa(ports[1])
	e.MetricsURL = "http://127.0.0.1:" + strconv.Itoa(ports[0]) + "/metrics"
	// The operator runs as its own ServiceAccount with the RBAC of config/rbac, as installed.
	kubeconfig, err := e.operatorIdentity(ctx, root)
	if err != nil {
		return fmt.Errorf("operator identity: %w", err)
	}
	e.opEnv = []string{"KUBECONFIG=" + kubeconfig, "POD_NAMESPACE=" + OperatorNamespace}
	// The admission webhooks are always on, as installed: through their Service in a network
	// namespace of pods, on a loopback URL otherwise.
	loopbackPort := 0
	if !throughService {
		if loopbackPort, err = freeport.Port(); err != nil {
			return err
		}
	}
	certDir, err := e.installWebhooks(ctx, root, loopbackPort)
	if err != nil {
		return fmt.Errorf("webhooks: %w", err)
	}
	args := []string{"--enable-webhooks=true", "--webhook-cert-dir=" + certDir}
	if loopbackPort != 0 {
		args = append(args, "--webhook-bind-address=127.0.0.1", "--webhook-port="+strconv.Itoa(loopbackPort))
	}
	e.opArgs = append(append(args, "--flink-rest-address=pod-ip",
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(ports[0]), "--health-probe-bind-address="+e.opProbe), extra...)
	logFile, err := os.Create(e.OperatorLog())
	if err != nil {
		return err
	}
	return e.launchOperator(ctx, logFile)
}

// launchOperator starts the built operator with its arguments, writing to logFile (closed when
// the process ends), and waits until it reports ready.
func (e *Env) launchOperator(ctx context.Context, logFile *os.File) error {
	cmd := exec.Command(e.opBin, e.opArgs...)
	cmd.Env = append(os.Environ(), e.opEnv...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start operator: %w", err)
	}
	done := make(chan struct{})
	e.operator, e.opDone = cmd, done
	go func() { _ = cmd.Wait(); logFile.Close(); close(done) }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + e.opProbe + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-done:
			return fmt.Errorf("operator exited; log: %s", e.OperatorLog())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
	return fmt.Errorf("operator not ready after 60s; log: %s", e.OperatorLog())
}

// KillOperator SIGKILLs the operator's process group, with no grace: what a node crash or an
// OOM kill does to it. It returns once the process is gone, so nothing of it runs any more.
func (e *Env) KillOperator() {
	if e.operator == nil {
		return
	}
	_ = syscall.Kill(-e.operator.Process.Pid, syscall.SIGKILL)
	<-e.opDone
	e.operator = nil
}

// RestartOperator starts the operator again after KillOperator or StopOperator: the same
// binary (not rebuilt), arguments and ports, its output appended to the same log, so one file
// tells the story across restarts. It returns once the new process is ready.
func (e *Env) RestartOperator(ctx context.Context) error {
	if e.opBin == "" {
		return fmt.Errorf("the operator was never started")
	}
	if e.operator != nil {
		return fmt.Errorf("the operator is running")
	}
	logFile, err := os.OpenFile(e.OperatorLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logFile, "--- operator restarted at %s ---\n", time.Now().Format(time.RFC3339Nano))
	return e.launchOperator(ctx, logFile)
}

// StopOperator stops the operator process (SIGTERM, then SIGKILL after 10 s).
func (e *Env) StopOperator() {
	if e.operator == nil {
		return
	}
	_ = syscall.Kill(-e.operator.Process.Pid, syscall.SIGTERM)
	select {
	case <-e.opDone:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-e.operator.Process.Pid, syscall.SIGKILL)
		<-e.opDone
	}
	e.operator = nil
}

// Stop stops the operator, the node agent (killing every Flink process) and the control plane.
func (e *Env) Stop() {
	e.StopOperator()
	if e.cancel != nil {
		e.cancel()
		if e.Agent != nil {
			e.Agent.Wait()
		}
	}
	if e.Cluster != nil {
		e.Cluster.Stop()
	}
	if e.agentLog != nil {
		e.agentLog.Close()
	}
}

// BusyboxLayout is the busybox image `make busybox-image` writes (an OCI image layout): the
// node agent runs every busybox container from it (nodeagent.Options.Busybox), such as init
// containers that fetch a job's jar and the storage provisioner's helper pods.
func BusyboxLayout(root string) string {
	return filepath.Join(root, "bin", "images", "busybox")
}

// KubeBinDir is where make cluster-assets puts the control plane's binaries and kubectl
// (K8S_VERSION in the Makefile).
func KubeBinDir(root string) string {
	return filepath.Join(root, "bin", "k8s", "1.37.2-linux-amd64")
}
