package nodeagent

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/flink-operator/flink-operator/test/freeport"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// ProcessImage is a container image whose entrypoint is a locally built binary, so that a
// non-Flink pod (an operator installed by OLM) runs its real program without an image.
//
// The process sees what a container sees where it matters to a Kubernetes client: its own
// mount namespace (unshare --mount) in which the pod's volumes are bind-mounted at their mount
// paths under /tmp and /run (so /var/run/secrets/kubernetes.io/serviceaccount holds a token of
// the pod's ServiceAccount from the TokenRequest API, ca.crt and namespace, and a webhook
// serving certificate is where the program looks by default), KUBERNETES_SERVICE_HOST/PORT for
// in-cluster configuration, and the container's env with downward-API values. Mount paths
// elsewhere (/apiserver.local.config) are not visible: the machine's root is not a pod's.
//
// Processes share the agent's network namespace, so ports are kept apart per pod: arguments
// that bind all addresses (--x-address=:8081, 0.0.0.0:8081) bind the pod's address instead,
// and PortFlags moves ports a program binds on all addresses without such an argument.
type ProcessImage struct {
	// Binary stands for the image's entrypoint (the container's command[0], or the image's
	// default entrypoint when the container has no command).
	Binary string
	// Archive, instead of Binary, is the image itself as an OCI image layout directory (`make
	// image` writes bin/images/flink-operator). The agent unpacks it once per digest and runs
	// the container in a root of its own made from it (unshare --root): the image's entrypoint
	// and cmd combined with the container's command and args as Kubernetes does, the image's
	// env under the container's, the image's user unless the security context names one, and
	// every volume mounted at its mount path (not only under /tmp and /run), with the pod's
	// hosts file as /etc/hosts. The network is still the agent's: PortFlags apply as for Binary.
	Archive string
	// PortFlags maps a container port the program binds on all addresses to the argument that
	// moves it, with %d for the port (9443: "--webhook-port=%d"; appended, so it wins over the
	// container's own): the process gets a free port, and the agent forwards the pod address's
	// port to it. A port that a process outside the pods holds on all addresses (a test's OLM
	// operators) cannot be forwarded; the program then serves on the moved port only.
	PortFlags map[int32]string
	// Args are appended to the container's arguments (after PortFlags'): what the program needs
	// on this machine that a cluster gives a pod otherwise, e.g. --flink-rest-address=pod-ip for
	// an operator, since a process cannot resolve Service names (the machine has no cluster DNS).
	Args []string
}

// processImage returns how a container image runs as a process, if it does: as the longest
// prefix of Options.ProcessImages says, else busybox from Options.Busybox.
func (a *Agent) processImage(image string) (ProcessImage, bool) {
	best := ""
	for prefix := range a.opts.ProcessImages {
		if strings.HasPrefix(image, prefix) && len(prefix) > len(best) {
			best = prefix
		}
	}
	if best != "" {
		return a.opts.ProcessImages[best], true
	}
	if a.opts.Busybox != "" && isBusybox(image) {
		return ProcessImage{Archive: a.opts.Busybox}, true
	}
	return ProcessImage{}, false
}

// runsProcesses reports whether any container of the pod runs as a process.
func (r *podRunner) runsProcesses() bool {
	for _, c := range append(append([]corev1.Container{}, r.pod.Spec.InitContainers...), r.pod.Spec.Containers...) {
		if _, ok := r.a.processImage(c.Image); ok {
			return true
		}
	}
	return false
}

// wildcardBind matches a flag that binds a port on all addresses.
var wildcardBind = regexp.MustCompile(`^(-{1,2}[A-Za-z0-9_.-]+=)(0\.0\.0\.0|\[::\])?:([0-9]+)$`)

// processArgs are the arguments of the program: the container's command after the program
// itself, then its args, with $(VAR) expanded and all-address binds moved to the pod's address.
func processArgs(c corev1.Container, env map[string]string, podIP string) []string {
	words := append(append([]string{}, c.Command...), c.Args...)
	if len(c.Command) > 0 {
		words = words[1:] // command[0] is the image's program, which Binary stands for
	}
	args := []string{}
	for _, w := range words {
		args = append(args, rewriteWord(w, env, podIP))
	}
	return args
}

// rewriteWord expands $(VAR) in a word of the container's command or args and moves an
// all-address bind to the pod's address.
func rewriteWord(w string, env map[string]string, podIP string) string {
	w = expandVars(w, env)
	if m := wildcardBind.FindStringSubmatch(w); m != nil {
		w = m[1] + podIP + ":" + m[3]
	}
	return w
}

// processCommand builds the command of a container that runs as a process.
func (c *containerRunner) processCommand(ctx context.Context, img ProcessImage) (*exec.Cmd, string, error) {
	r := c.r
	env, order, err := r.containerEnv(ctx, c.spec)
	if err != nil {
		return nil, "", err
	}
	dir := filepath.Join(r.dir, "containers", c.spec.Name)
	var args, imageEnv []string
	var script string
	if img.Archive != "" {
		unpacked, err := r.a.unpack(img.Archive)
		if err != nil {
			return nil, "", err
		}
		if args, err = imageCommand(c.spec, unpacked.config, env, r.ip); err != nil {
			return nil, "", err
		}
		uid, gid, err := imageUser(r.pod, c.spec, unpacked.config)
		if err != nil {
			return nil, "", err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, "", err
		}
		root, err := containerRootfs(unpacked, dir)
		if err != nil {
			return nil, "", err
		}
		workDir := unpacked.config.WorkingDir
		if c.spec.WorkingDir != "" {
			workDir = c.spec.WorkingDir
		}
		if script, err = r.rootfsScript(c.spec, root, workDir, uid, gid); err != nil {
			return nil, "", err
		}
		imageEnv = unpacked.config.Env
		c.nextExec = &execTarget{enter: true, user: &[2]int64{uid, gid}}
	} else {
		c.nextExec = &execTarget{enter: true}
		args = processArgs(c.spec, env, r.ip)
		if script, err = r.mountScript(c.spec, dir, img.Binary); err != nil {
			return nil, "", err
		}
	}
	ports := make([]int32, 0, len(img.PortFlags))
	for port := range img.PortFlags {
		ports = append(ports, port)
	}
	slices.Sort(ports)
	for _, port := range ports {
		local, err := r.forward(c.spec.Name, port)
		if err != nil {
			return nil, "", fmt.Errorf("port %d: %w", port, err)
		}
		args = append(args, fmt.Sprintf(img.PortFlags[port], local))
	}
	args = append(args, img.Args...)

	host, port, err := apiServerAddress(r.a.opts.Kubeconfig)
	if err != nil {
		return nil, "", err
	}
	// Later entries win: the image's env over the defaults, the container's over the image's.
	procEnv := append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/"}, imageEnv...)
	procEnv = append(procEnv, "HOSTNAME="+r.pod.Name, "KUBERNETES_SERVICE_HOST="+host, "KUBERNETES_SERVICE_PORT="+port)
	for _, k := range order {
		procEnv = append(procEnv, k+"="+env[k])
	}

	logPath := filepath.Join(r.dir, "logs", c.spec.Name+".out")
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, "", err
	}
	// The shell sets up the mounts in the new mount namespace and then becomes the program,
	// PID 1 of its own PID namespace as a Flink container's JVM is (containerInit): `kill 1`
	// through kubectl exec reaches the program, never the machine's init.
	cmd, err := c.initCommand("unshare", append([]string{"--mount", "--propagation", "private", "--", "/bin/sh", "-ec", script, "sh"}, args...)...)
	if err != nil {
		out.Close()
		return nil, "", err
	}
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, procEnv, out, out
	go func() { <-ctx.Done(); out.Close() }()
	return cmd, logPath, nil
}

// entrypointPath is where the program is bind-mounted in the process's view: the machine's
// /tmp, where it was built, is replaced by the container's own.
const entrypointPath = "/run/nodeagent/entrypoint"

// mountScript returns the shell script that mounts the container's volumes in its mount
// namespace and executes the program. Mount paths under /tmp, /run and /var/run are staged
// in dir/root and bind-mounted over the machine's /tmp and /run; others are left out.
func (r *podRunner) mountScript(c corev1.Container, dir, binary string) (string, error) {
	root := filepath.Join(dir, "root")
	if err := os.RemoveAll(root); err != nil {
		return "", err
	}
	for _, top := range []string{"tmp", "run"} {
		if err := os.MkdirAll(filepath.Join(root, top), 0o1777); err != nil {
			return "", err
		}
	}
	var lines []string
	bind := func(src, target string) error {
		staged := filepath.Join(root, target)
		st, err := os.Stat(src)
		if err != nil {
			return err
		}
		if st.IsDir() {
			err = os.MkdirAll(staged, 0o755)
		} else if err = os.MkdirAll(filepath.Dir(staged), 0o755); err == nil {
			err = os.WriteFile(staged, nil, 0o644)
		}
		if err != nil {
			return err
		}
		lines = append(lines, "mount --bind "+shellQuote(src)+" "+shellQuote(staged))
		return nil
	}
	mounts := map[string]string{}
	for _, m := range r.pathMap(c) {
		mounts[m.from] = m.to
	}
	for _, m := range c.VolumeMounts {
		target := filepath.Clean("/" + m.MountPath)
		if target == "/var/run" || strings.HasPrefix(target, "/var/run/") {
			target = strings.TrimPrefix(target, "/var")
		}
		if !strings.HasPrefix(target, "/tmp/") && !strings.HasPrefix(target, "/run/") {
			r.logf("container %s: volume %s at %s is not visible to the process (only mounts under /tmp and /run are)", c.Name, m.Name, m.MountPath)
			continue
		}
		src, ok := mounts[strings.TrimSuffix(m.MountPath, "/")]
		if !ok {
			return "", fmt.Errorf("volume mount %s: no volume %q", m.MountPath, m.Name)
		}
		if err := bind(src, target); err != nil {
			return "", fmt.Errorf("volume mount %s: %w", m.MountPath, err)
		}
	}
	if err := bind(binary, entrypointPath); err != nil {
		return "", fmt.Errorf("program %s: %w", binary, err)
	}
	lines = append(lines,
		// /tmp last: the staged trees (under the agent's directory, in /tmp in tests) must
		// stay reachable until both are mounted.
		"mount --rbind "+shellQuote(filepath.Join(root, "run"))+" /run",
		"mount --rbind "+shellQuote(filepath.Join(root, "tmp"))+" /tmp",
		"cd /",
		`exec `+entrypointPath+` "$@"`)
	return strings.Join(lines, "\n"), nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// apiServerAddress is the host and port of the API server in the agent's kubeconfig, which
// processes reach as in-cluster clients do (KUBERNETES_SERVICE_HOST/PORT).
func apiServerAddress(kubeconfig string) (host, port string, err error) {
	if kubeconfig == "" {
		return "", "", fmt.Errorf("the node agent has no kubeconfig to tell processes where the API server is")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return "", "", fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return "", "", fmt.Errorf("API server address %q: %w", cfg.Host, err)
	}
	host, port = u.Hostname(), u.Port()
	if port == "" {
		port = "443"
	}
	return host, port, nil
}

// forward makes the pod's address answer on port by forwarding to a free local port, which it
// returns; the same container keeps its port across restarts. Forwarders stop with the pod.
func (r *podRunner) forward(container string, port int32) (int, error) {
	key := container + "/" + strconv.Itoa(int(port))
	r.mu.Lock()
	defer r.mu.Unlock()
	if local, ok := r.forwards[key]; ok {
		return local, nil
	}
	// The container binds the port itself, later: one below the ephemeral range, which no
	// client connection can take meanwhile.
	local, err := freeport.Port()
	if err != nil {
		return 0, err
	}
	if r.forwards == nil {
		r.forwards = map[string]int{}
	}
	r.forwards[key] = local
	ln, err := net.Listen("tcp", net.JoinHostPort(r.ip, strconv.Itoa(int(port))))
	if err != nil {
		r.a.logf("pod %s/%s: container %s: port %d is served on %d only: %v", r.pod.Namespace, r.pod.Name, container, port, local, err)
		return local, nil
	}
	go func() { <-r.ctx.Done(); ln.Close() }()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go pipe(conn, "127.0.0.1:"+strconv.Itoa(local))
		}
	}()
	return local, nil
}

func pipe(conn net.Conn, target string) {
	defer conn.Close()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, conn); done <- struct{}{} }()
	go func() { _, _ = io.Copy(conn, up); done <- struct{}{} }()
	<-done
}

// writeProjected fills a projected volume of a process pod: ServiceAccount tokens from the
// TokenRequest API (bound to the pod, as kubelet requests them), ConfigMap and Secret keys and
// downward-API fields. Flink pods do not read theirs, and keep the empty directory.
func (r *podRunner) writeProjected(ctx context.Context, dir string, v *corev1.ProjectedVolumeSource) error {
	files := map[string][]byte{}
	for _, src := range v.Sources {
		switch {
		case src.ServiceAccountToken != nil:
			t := src.ServiceAccountToken
			req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
				ExpirationSeconds: t.ExpirationSeconds,
				BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: r.pod.Name, UID: r.pod.UID},
			}}
			if t.Audience != "" {
				req.Spec.Audiences = []string{t.Audience}
			}
			sa := r.pod.Spec.ServiceAccountName
			if sa == "" {
				sa = "default"
			}
			tok, err := r.a.client.CoreV1().ServiceAccounts(r.pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("token of service account %s: %w", sa, err)
			}
			files[t.Path] = []byte(tok.Status.Token)
		case src.ConfigMap != nil:
			cm, err := r.a.client.CoreV1().ConfigMaps(r.pod.Namespace).Get(ctx, src.ConfigMap.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && src.ConfigMap.Optional != nil && *src.ConfigMap.Optional {
				continue
			} else if err != nil {
				return fmt.Errorf("configmap %q: %w", src.ConfigMap.Name, err)
			}
			data := map[string][]byte{}
			for k, val := range cm.Data {
				data[k] = []byte(val)
			}
			for k, val := range cm.BinaryData {
				data[k] = val
			}
			project(files, data, src.ConfigMap.Items)
		case src.Secret != nil:
			s, err := r.a.client.CoreV1().Secrets(r.pod.Namespace).Get(ctx, src.Secret.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && src.Secret.Optional != nil && *src.Secret.Optional {
				continue
			} else if err != nil {
				return fmt.Errorf("secret %q: %w", src.Secret.Name, err)
			}
			project(files, s.Data, src.Secret.Items)
		case src.DownwardAPI != nil:
			for _, it := range src.DownwardAPI.Items {
				if it.FieldRef == nil {
					return fmt.Errorf("downward API file %s: only fieldRef is supported by the local node agent", it.Path)
				}
				val, err := r.fieldValue(it.FieldRef.FieldPath)
				if err != nil {
					return fmt.Errorf("downward API file %s: %w", it.Path, err)
				}
				files[it.Path] = []byte(val)
			}
		}
	}
	return writeVolumeFiles(dir, files, nil)
}

// project adds the selected keys of data to files (all keys when items is empty).
func project(files, data map[string][]byte, items []corev1.KeyToPath) {
	if len(items) == 0 {
		for k, v := range data {
			files[k] = v
		}
		return
	}
	for _, it := range items {
		if v, ok := data[it.Key]; ok {
			files[it.Path] = v
		}
	}
}
