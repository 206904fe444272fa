//go:build migration

package migration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/flink-operator/flink-operator/test/flinkcluster"
	"github.com/flink-operator/flink-operator/test/localcluster"
	"github.com/flink-operator/flink-operator/test/localenv"
)

// apacheOperator is the Apache Flink Kubernetes Operator run as a plain java process against
// the local cluster, with the identity and configuration testdata/ describes.
type apacheOperator struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

const (
	apacheNamespace      = "apache-flink-operator"
	apacheServiceAccount = "flink-operator"
)

// startApacheOperator installs the Apache operator's RBAC (testdata/apache-operator-rbac.yaml),
// writes its configuration and starts it from home (hack/install-apache-operator.sh's
// directory). It returns once the operator's health probe answers.
func startApacheOperator(ctx context.Context, env *localenv.Env, home, dir, hostsFile string) (*apacheOperator, error) {
	jars, err := filepath.Glob(filepath.Join(home, "lib", "*.jar"))
	if err != nil || len(jars) == 0 {
		return nil, fmt.Errorf("no Apache operator jars in %s/lib (run `make migration-test`, which installs them)", home)
	}
	if err := createAll(ctx, env, "testdata/apache-operator-rbac.yaml"); err != nil {
		return nil, fmt.Errorf("install the Apache operator's RBAC: %w", err)
	}
	kubeconfig, err := env.ServiceAccountKubeconfig(ctx, apacheNamespace, apacheServiceAccount, filepath.Join(dir, "apache-operator.kubeconfig"))
	if err != nil {
		return nil, err
	}
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		return nil, err
	}
	confDir := filepath.Join(dir, "apache-operator-conf")
	artifacts := filepath.Join(dir, "apache-operator-artifacts")
	for _, d := range []string{confDir, artifacts} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	conf, err := os.ReadFile("testdata/apache-operator-flink-conf.yaml")
	if err != nil {
		return nil, err
	}
	conf = []byte(strings.NewReplacer("HEALTH_PORT", strconv.Itoa(ports[0]), "ARTIFACTS_DIR", artifacts).Replace(string(conf)))
	if err := os.WriteFile(filepath.Join(confDir, "flink-conf.yaml"), conf, 0o644); err != nil {
		return nil, err
	}
	api, err := url.Parse(env.Cluster.Config.Host)
	if err != nil {
		return nil, err
	}
	op := &apacheOperator{done: make(chan struct{}), log: filepath.Join(dir, "apache-operator.log")}
	logFile, err := os.Create(op.log)
	if err != nil {
		return nil, err
	}
	args := append(flinkcluster.JavaModuleFlags(),
		"-cp", filepath.Join(home, "lib", "*"),
		// Service names (<name>-rest.<namespace>) resolve to the pods' addresses through the
		// node agent's machine hosts file; no caching, so a redeployed JobManager is found.
		"-Djdk.net.hosts.file="+hostsFile, "-Dsun.net.inetaddr.ttl=0", "-Dsun.net.inetaddr.negative.ttl=0",
		"org.apache.flink.kubernetes.operator.FlinkOperator")
	cmd := exec.Command("java", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+kubeconfig, "FLINK_CONF_DIR="+confDir,
		"OPERATOR_NAMESPACE="+apacheNamespace, "OPERATOR_NAME=flink-kubernetes-operator",
		"HOST_IP=127.0.0.1", "POD_IP=127.0.0.1", "POD_NAME=flink-kubernetes-operator-migration",
		// Without these the operator decides it runs outside Kubernetes and sends every Flink
		// REST call to localhost:8081; with them it uses http://<name>-rest.<namespace>:8081.
		// The kube client still prefers KUBECONFIG.
		"KUBERNETES_SERVICE_HOST="+api.Hostname(), "KUBERNETES_SERVICE_PORT="+api.Port())
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start the Apache operator: %w", err)
	}
	op.cmd = cmd
	go func() { _ = cmd.Wait(); logFile.Close(); close(op.done) }()

	probe := "http://127.0.0.1:" + strconv.Itoa(ports[0]) + "/"
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(probe); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return op, nil
			}
		}
		select {
		case <-op.done:
			return nil, fmt.Errorf("the Apache operator exited; log: %s", op.log)
		case <-ctx.Done():
			op.stop()
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	op.stop()
	return nil, fmt.Errorf("the Apache operator's health probe %s did not answer 200 in 90s; log: %s", probe, op.log)
}

// stop ends the operator as Kubernetes would end its pod: SIGTERM, SIGKILL after 20 s.
func (op *apacheOperator) stop() {
	if op == nil || op.cmd == nil {
		return
	}
	_ = syscall.Kill(-op.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-op.done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-op.cmd.Process.Pid, syscall.SIGKILL)
		<-op.done
	}
	op.cmd = nil
}

// createAll creates every object of a multi-document YAML file.
func createAll(ctx context.Context, env *localenv.Env, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		o := &unstructured.Unstructured{}
		if err := dec.Decode(&o.Object); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(o.Object) == 0 {
			continue
		}
		if err := env.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
}
