// Package localcluster runs a Kubernetes control plane as local processes: etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler, all built from the Go module
// proxy by `make cluster-assets`, with a dynamic storage provisioner and a default
// StorageClass (storage.go). With a node agent (package nodeagent) it behaves like a real
// one-node cluster: Deployments become ReplicaSets and Pods, pods are scheduled, garbage is
// collected, EndpointSlices follow pod readiness and PersistentVolumeClaims are bound to
// volumes made for them. Test and development tool only.
package localcluster

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/flink-operator/flink-operator/test/logtail"

	"github.com/flink-operator/flink-operator/test/freeport"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options say where the binaries are and where the cluster keeps its state.
type Options struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the
	// storage provisioner (local-path-provisioner-<LocalPathProvisionerVersion>).
	BinDir string
	// Dir holds the cluster's data, certificates, kubeconfig and process logs.
	Dir string
	// Log receives one line per lifecycle step; nil discards them.
	Log io.Writer
	// AuditUsers turns on the API server's audit log (Cluster.AuditDir) for the requests of
	// these users, at Metadata level: who did which verb on which resource, and the answer.
	AuditUsers []string
}

// Cluster is a running control plane.
type Cluster struct {
	// Kubeconfig is the path of an admin kubeconfig.
	Kubeconfig string
	// Config is the admin REST config.
	Config *rest.Config
	// AuditDir holds the audit log, audit.log and its rotated files (when Options.AuditUsers
	// is set; empty otherwise).
	AuditDir string
	// Kubelet are the certificates a node agent serves its kubelet API with, which the API
	// server proxies `kubectl logs` and `kubectl exec` to (nodeagent.Options.KubeletAPI).
	Kubelet KubeletCerts

	opts  Options
	mu    sync.Mutex
	procs []*process
}

type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts the control plane and waits until the API server is ready. Stop it with Stop;
// its processes also die with the calling process (they get SIGKILL when it exits).
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	c := &Cluster{opts: opts}
	var err error
	// An API server or etcd that exits before the API server is ready lost its port to another
	// process (see package freeport) or its data directory to a crash: a fresh start on new
	// ports and a new directory is what a person would do, up to three times.
	for attempt := 1; attempt <= 3; attempt++ {
		if err = c.start(ctx); err == nil {
			return c, nil
		}
		c.Stop()
		var exited *exitedEarly
		if !errors.As(err, &exited) || attempt == 3 {
			return nil, err
		}
		c.logf("attempt %d: %v; starting again on new ports", attempt, err)
		if rmErr := os.RemoveAll(filepath.Join(c.opts.Dir, "etcd")); rmErr != nil {
			return nil, errors.Join(err, rmErr)
		}
	}
	return nil, err
}

// exitedEarly is a control-plane process that exited before the API server was ready.
type exitedEarly struct {
	name string
	log  string
	tail string
}

func (e *exitedEarly) Error() string {
	return fmt.Sprintf("%s exited before the API server was ready (log: %s):\n%s", e.name, e.log, e.tail)
}

// earlyExit reports the first started process that has exited, nil while all run.
func (c *Cluster) earlyExit() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		select {
		case <-p.done:
			log := filepath.Join(c.opts.Dir, "logs", p.name+".log")
			return &exitedEarly{name: p.name, log: log, tail: logtail.File(log, 10)}
		default:
		}
	}
	return nil
}

func (c *Cluster) logf(format string, args ...any) {
	if c.opts.Log != nil {
		fmt.Fprintf(c.opts.Log, "localcluster: "+format+"\n", args...)
	}
}

func (c *Cluster) start(ctx context.Context) error {
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", localPathProvisioner} {
		if _, err := os.Stat(filepath.Join(c.opts.BinDir, b)); err != nil {
			return fmt.Errorf("%s is missing in %s (run `make cluster-assets`): %w", b, c.opts.BinDir, err)
		}
	}
	dir := c.opts.Dir
	for _, d := range []string{"etcd", "certs", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	saKey := filepath.Join(dir, "sa.key")
	saPub := filepath.Join(dir, "sa.pub")
	if err := writeServiceAccountKeys(saKey, saPub); err != nil {
		return fmt.Errorf("service account keys: %w", err)
	}
	token := randomToken()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(token+",admin,admin,system:masters\n"), 0o600); err != nil {
		return err
	}
	ports, err := freeport.Ports(3)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]

	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	if err := c.run("etcd", "--name=default", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--listen-metrics-urls=http://127.0.0.1:0", "--unsafe-no-fsync"); err != nil {
		return err
	}
	certDir := filepath.Join(dir, "certs")
	if c.Kubelet, err = writeKubeletCerts(certDir); err != nil {
		return fmt.Errorf("kubelet certificates: %w", err)
	}
	auditFlags, err := c.audit()
	if err != nil {
		return fmt.Errorf("audit policy: %w", err)
	}
	apiserverFlags := append([]string{"--etcd-servers=" + etcdURL, "--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(apiPort), "--cert-dir=" + certDir,
		"--token-auth-file=" + tokens, "--authorization-mode=Node,RBAC", "--service-cluster-ip-range=10.96.0.0/24",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file=" + saPub,
		"--service-account-signing-key-file=" + saKey, "--allow-privileged=true",
		// Services are reached through their EndpointSlices (no kube-proxy here): admission
		// webhooks served by pods on package podnet's addresses.
		"--enable-aggregator-routing=true",
		// 1.37 refuses a loopback advertise address for the kubernetes Service's endpoints;
		// nothing here reaches the API server through that Service.
		"--endpoint-reconciler-type=none",
		// As OpenShift does: setting an ownerReference needs delete on the object, and
		// blockOwnerDeletion needs update on the owner's finalizers subresource, so a client
		// missing those grants is refused here too.
		"--enable-admission-plugins=OwnerReferencesPermissionEnforcement",
		// `kubectl logs` and `kubectl exec` go through the node agent's kubelet API on the
		// Node's InternalIP (127.0.0.1), each side verifying the other with the kubelet CA.
		"--kubelet-client-certificate=" + c.Kubelet.ClientCertFile, "--kubelet-client-key=" + c.Kubelet.ClientKeyFile,
		"--kubelet-certificate-authority=" + c.Kubelet.CAFile, "--kubelet-preferred-address-types=InternalIP"}, auditFlags...)
	if err := c.run("kube-apiserver", apiserverFlags...); err != nil {
		return err
	}

	server := "https://127.0.0.1:" + strconv.Itoa(apiPort)
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, server, token); err != nil {
		return err
	}
	c.Config = &rest.Config{Host: server, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS: 100, Burst: 200}
	// An idle machine has the API server ready in about 5 s; two minutes cover one whose
	// cores are all busy with other suites.
	if err := waitReady(ctx, server, token, 2*time.Minute, c.earlyExit); err != nil {
		var exited *exitedEarly
		if errors.As(err, &exited) {
			return err
		}
		log := filepath.Join(dir, "logs", "kube-apiserver.log")
		return fmt.Errorf("kube-apiserver: %w (log: %s):\n%s", err, log, logtail.File(log, 10))
	}
	c.logf("kube-apiserver ready at %s", server)

	k := "--kubeconfig=" + c.Kubeconfig
	if err := c.run("kube-controller-manager", k, "--authentication-kubeconfig="+c.Kubeconfig,
		"--authorization-kubeconfig="+c.Kubeconfig, "--bind-address=127.0.0.1", "--secure-port=0",
		"--leader-elect=false", "--use-service-account-credentials=false",
		"--service-account-private-key-file="+saKey, "--root-ca-file="+filepath.Join(certDir, "apiserver.crt"),
		// Quick garbage collection and endpoint updates keep tests short. Quotas are recomputed
		// every 10 s (5 min by default), so a quota on a kind whose CRD was just installed gets
		// its usage without waiting for an object of that kind to change.
		"--concurrent-gc-syncs=5", "--endpointslice-updates-batch-period=0s", "--resource-quota-sync-period=10s"); err != nil {
		return err
	}
	if err := c.run("kube-scheduler", k, "--authentication-kubeconfig="+c.Kubeconfig,
		"--authorization-kubeconfig="+c.Kubeconfig, "--bind-address=127.0.0.1", "--secure-port=0",
		"--leader-elect=false"); err != nil {
		return err
	}
	if err := c.startStorage(ctx); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	c.logf("controller manager, scheduler and storage provisioner started (default StorageClass %s); kubeconfig %s",
		StorageClassName, c.Kubeconfig)
	return nil
}

// auditPolicy logs the requests of the listed users at Metadata level (no bodies) once, when
// their response is complete or, for a watch, has started; nothing else is logged.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: %s
- level: None
`

// audit writes the audit policy for Options.AuditUsers and returns the API server's flags
// for it; none when no user is audited. The log rotates at 100 MB and keeps 20 files, far more
// than a full e2e run writes, so a reader of AuditDir sees every request.
func (c *Cluster) audit() ([]string, error) {
	if len(c.opts.AuditUsers) == 0 {
		return nil, nil
	}
	users, err := json.Marshal(c.opts.AuditUsers)
	if err != nil {
		return nil, err
	}
	c.AuditDir = filepath.Join(c.opts.Dir, "audit")
	if err := os.MkdirAll(c.AuditDir, 0o755); err != nil {
		return nil, err
	}
	policy := filepath.Join(c.opts.Dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, fmt.Appendf(nil, auditPolicy, users), 0o644); err != nil {
		return nil, err
	}
	return []string{"--audit-policy-file=" + policy, "--audit-log-path=" + filepath.Join(c.AuditDir, "audit.log"),
		"--audit-log-format=json", "--audit-log-maxsize=100", "--audit-log-maxbackup=20", "--audit-log-maxage=7"}, nil
}

func (c *Cluster) run(name string, args ...string) error {
	logFile, err := os.Create(filepath.Join(c.opts.Dir, "logs", name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(c.opts.BinDir, name), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Own process group, and SIGKILL when the starter dies: Ctrl-C never leaves a process behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logFile.Close(); close(p.done) }()
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return nil
}

// Stop stops the processes in reverse start order. The API server shuts down gracefully
// for up to 15 s (it can take 20 s), then it is killed.
func (c *Cluster) Stop() {
	c.mu.Lock()
	procs := c.procs
	c.procs = nil
	c.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
}

// waitReady polls /readyz until it answers 200, the timeout passes, or exited reports a
// process that died, which no waiting mends.
func waitReady(ctx context.Context, server, token string, timeout time.Duration, exited func() error) error {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, server+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/readyz: %s", resp.Status)
		}
		last = err
		if err := exited(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("not ready after %s: %w", timeout, last)
}

func writeKubeconfig(path, server, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "local"
	return clientcmd.WriteToFile(*cfg, path)
}

func writeServiceAccountKeys(keyPath, pubPath string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// FreePorts returns n distinct free loopback ports for processes that bind them themselves,
// chosen where no client connection takes its source port (package freeport).
func FreePorts(n int) ([]int, error) {
	return freeport.Ports(n)
}
