package nodeagent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flink-operator/flink-operator/test/logtail"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flink-operator/flink-operator/test/flinkcluster"
)

var metaGet = metav1.GetOptions{}

// containerRunner runs one container's process, restarts it as the pod's restart policy
// says, and runs its probes.
type containerRunner struct {
	r    *podRunner
	spec corev1.Container
	init bool

	mu        sync.Mutex
	state     corev1.ContainerState
	lastState corev1.ContainerState
	restarts  int32
	started   bool
	ready     bool
	proc      *exec.Cmd
	exited    chan struct{}
	killed    bool
	stopped   bool

	// logs is the output of the latest run (running or exited), prevLogs the run's before:
	// what `kubectl logs` and `kubectl logs --previous` read (containerlogs.go).
	logs, prevLogs *logRun
	// nextExec is how exec runs in the process command() or processCommand() built (set by
	// them, on run's goroutine); running is that of the process while it runs.
	nextExec, running *execTarget
}

func newContainerRunner(r *podRunner, c corev1.Container, init bool) *containerRunner {
	return &containerRunner{r: r, spec: c, init: init,
		state: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
}

func (c *containerRunner) status() corev1.ContainerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	started := c.started
	return corev1.ContainerStatus{
		Name: c.spec.Name, Image: c.spec.Image, ImageID: "nodeagent://" + c.spec.Image,
		State: c.state, LastTerminationState: c.lastState, RestartCount: c.restarts,
		Ready: c.ready, Started: &started, ContainerID: c.containerID(),
	}
}

func (c *containerRunner) containerID() string {
	if c.proc == nil || c.proc.Process == nil {
		return ""
	}
	return "nodeagent://" + strconv.Itoa(c.proc.Process.Pid)
}

func (c *containerRunner) setWaiting(reason, msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
	c.ready = false
}

// runToCompletion runs an init container until it succeeds; false when it cannot.
func (c *containerRunner) runToCompletion() bool {
	for backoff := time.Second; ; backoff = min(2*backoff, 30*time.Second) {
		code, ok := c.runOnce()
		if !ok {
			return false
		}
		if code == 0 {
			return true
		}
		if c.r.pod.Spec.RestartPolicy == corev1.RestartPolicyNever || !c.sleep(backoff, "CrashLoopBackOff") {
			return false
		}
		c.mu.Lock()
		c.restarts++
		c.mu.Unlock()
	}
}

// run keeps the container running as its restart policy says.
func (c *containerRunner) run() {
	backoff := time.Duration(0)
	for {
		startedAt := time.Now()
		code, ok := c.runOnce()
		if !ok {
			return
		}
		switch c.r.pod.Spec.RestartPolicy {
		case corev1.RestartPolicyNever:
			return
		case corev1.RestartPolicyOnFailure:
			if code == 0 {
				return
			}
		}
		// kubelet's crash loop back-off, shortened: immediate, then 5 s doubling to 60 s, reset
		// after ten minutes of running.
		if time.Since(startedAt) > 10*time.Minute {
			backoff = 0
		}
		if !c.sleep(backoff, "CrashLoopBackOff") {
			return
		}
		backoff = min(max(2*backoff, 5*time.Second), time.Minute)
		c.mu.Lock()
		c.restarts++
		c.mu.Unlock()
	}
}

func (c *containerRunner) sleep(d time.Duration, reason string) bool {
	if d > 0 {
		c.mu.Lock()
		c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason,
			Message: fmt.Sprintf("back-off %s restarting failed container %s", d, c.spec.Name)}}
		c.mu.Unlock()
	}
	select {
	case <-c.r.ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// runOnce starts the process and waits for it; ok is false when it could not start or the
// pod is stopping.
func (c *containerRunner) runOnce() (exitCode int, ok bool) {
	ctx := c.r.ctx
	if c.r.a.standIn(c.spec.Image) {
		c.mu.Lock()
		c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
		c.started, c.ready = true, true
		c.mu.Unlock()
		c.r.logf("container %s: stand-in for image %s (running, ready, no process)", c.spec.Name, c.spec.Image)
		<-ctx.Done()
		return 0, false
	}
	var cmd *exec.Cmd
	var logPath string
	var err error
	if img, ok := c.r.a.processImage(c.spec.Image); ok {
		cmd, logPath, err = c.processCommand(ctx, img)
	} else {
		cmd, logPath, err = c.command(ctx)
	}
	if err != nil {
		reason := "CreateContainerConfigError"
		if strings.Contains(err.Error(), "not a Flink image") || strings.Contains(err.Error(), "entrypoints") {
			reason = "ImageNotRunnable"
		}
		c.r.logf("container %s: %v", c.spec.Name, err)
		c.setWaiting(reason, err.Error())
		if reason == "ImageNotRunnable" {
			<-ctx.Done()
			return 0, false
		}
		// As kubelet reports a container that could not start: exit code 128, StartError.
		now := metav1.Now()
		c.mu.Lock()
		c.lastState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 128, Reason: "StartError",
			Message: err.Error(), StartedAt: now, FinishedAt: now}}
		c.mu.Unlock()
		return 128, ctx.Err() == nil // retried with back-off
	}
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return 0, false
	}
	run := newLogRun(logPath) // before the process writes anything
	if err := cmd.Start(); err != nil {
		c.mu.Unlock()
		c.setWaiting("RunContainerError", err.Error())
		return 1, ctx.Err() == nil
	}
	exited := make(chan struct{})
	c.proc, c.exited, c.killed = cmd, exited, false
	c.recordStart(cmd, run)
	c.started = c.spec.StartupProbe == nil
	c.ready = false
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
	c.mu.Unlock()
	c.r.logf("container %s: started pid %d (%s)", c.spec.Name, cmd.Process.Pid, logPath)

	probeCtx, stopProbes := context.WithCancel(ctx)
	go c.probe(probeCtx)
	err = cmd.Wait()
	stopProbes()
	c.recordExit(run)
	close(exited)

	code := 0
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	}
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	if outOfMemory(logPath) {
		reason = "OOMKilled"
	}
	c.mu.Lock()
	started := c.state.Running.StartedAt
	term := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(code), Reason: reason,
		StartedAt: started, FinishedAt: metav1.Now(), ContainerID: c.containerID(), Message: exitMessage(err, logPath)}}
	c.state, c.lastState, c.ready, c.started = term, term, false, false
	stopping := c.stopped
	c.mu.Unlock()
	c.r.logf("container %s: exited with %d (%s)", c.spec.Name, code, reason)
	return code, !stopping && ctx.Err() == nil
}

// recordStart makes a started process's output the container's latest run and its way of
// exec the current one. The caller holds c.mu.
func (c *containerRunner) recordStart(cmd *exec.Cmd, run *logRun) {
	c.logs, c.prevLogs = run, c.logs
	c.running = c.nextExec
	if c.running != nil {
		c.running.dir, c.running.env = cmd.Dir, cmd.Env
	}
}

// recordExit ends the run of a process that has exited.
func (c *containerRunner) recordExit(run *logRun) {
	run.finish()
	c.mu.Lock()
	c.running = nil
	c.mu.Unlock()
}

// kill stops the container: SIGTERM, then SIGKILL after grace; it is not restarted.
func (c *containerRunner) kill(grace time.Duration) {
	c.mu.Lock()
	c.stopped = true
	proc, exited := c.proc, c.exited
	c.mu.Unlock()
	if proc == nil || proc.Process == nil {
		return
	}
	signalGroup(proc, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		signalGroup(proc, syscall.SIGKILL)
		<-exited
	}
}

// restartForLiveness kills a process whose liveness probe failed; run restarts it.
func (c *containerRunner) restartForLiveness() {
	c.mu.Lock()
	proc, exited := c.proc, c.exited
	c.mu.Unlock()
	signalGroup(proc, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		signalGroup(proc, syscall.SIGKILL)
	}
}

func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd != nil && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, sig)
	}
}

// command builds the java process a Flink container runs.
func (c *containerRunner) command(ctx context.Context) (*exec.Cmd, string, error) {
	r := c.r
	dist, err := distForImage(c.spec.Image, r.a.opts.Dists)
	if err != nil {
		return nil, "", err
	}
	env, order, err := r.containerEnv(ctx, c.spec)
	if err != nil {
		return nil, "", err
	}
	var words []string
	for _, w := range append(append([]string{}, c.spec.Command...), c.spec.Args...) {
		words = append(words, expandVars(w, env))
	}
	ep, err := flinkEntrypoint(words)
	if err != nil {
		return nil, "", err
	}
	layer, err := r.a.flinkImageLayer(c.spec.Image, dist)
	if err != nil {
		return nil, "", err
	}
	// The pod's mounts first: of two equal paths the first wins, and a mount hides the image.
	// hostRW is where the agent finds a container path's files; rw is what the process is
	// told, in which the volumes under /opt/flink keep their paths (flinkroot.go).
	rooted := pidNamespaces() == nil
	procMounts, binds := r.flinkMounts(c.spec, rooted)
	hostRW := rewriter(append(r.pathMap(c.spec), layer.rewrites...))
	rw := rewriter(append(procMounts, layer.rewrites...))

	dir := filepath.Join(r.dir, "containers", c.spec.Name)
	confDir := filepath.Join(dir, "conf")
	// exec sees the image's log and configuration directories where the process keeps them,
	// and enters the process's root when it has one of its own.
	c.nextExec = &execTarget{enter: rooted, paths: rewriter(append([]pathRewrite{
		{from: "/opt/flink/log", to: filepath.Join(r.dir, "logs")}, {from: "/opt/flink/conf", to: confDir}},
		append(procMounts, layer.rewrites...)...))}
	if err := os.RemoveAll(confDir); err != nil {
		return nil, "", err
	}
	confSource := env["FLINK_CONF_DIR"]
	if confSource == "" {
		confSource = "/opt/flink/conf"
	}
	overrides := map[string]string{}
	for _, line := range strings.Split(env["FLINK_PROPERTIES"], "\n") { // the image entrypoint appends these
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) != "" {
			overrides[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	for _, k := range []string{"jobmanager.bind-host", "taskmanager.bind-host", "rest.bind-address", "taskmanager.host"} {
		overrides[k] = r.ip
	}
	if r.a.opts.Kubeconfig != "" {
		overrides["kubernetes.config.file"] = r.a.opts.Kubeconfig
	}
	if err := writeConfig(hostRW.Replace(confSource), confDir, rw, overrides); err != nil {
		return nil, "", err
	}
	args := make([]string, len(ep.args))
	for i, a := range ep.args {
		args[i] = rw.Replace(a)
	}

	classpath, err := dist.Classpath()
	if err != nil {
		return nil, "", err
	}
	plugins, err := enabledPlugins(filepath.Join(dist.Home, "plugins"), filepath.Join(dir, "plugins"), env["ENABLE_BUILT_IN_PLUGINS"],
		func(jar string) string { return hostRW.Replace(path.Join("/opt/flink/opt", jar)) })
	if err != nil {
		return nil, "", err
	}
	procEnv := []string{pathWith(layer.binDir, os.Getenv("PATH")), "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8",
		"HOSTNAME=" + r.pod.Name, "FLINK_HOME=" + dist.Home, "FLINK_CONF_DIR=" + confDir,
		"FLINK_LIB_DIR=" + filepath.Join(dist.Home, "lib"), "FLINK_PLUGINS_DIR=" + plugins,
		"FLINK_BIN_DIR=" + filepath.Join(dist.Home, "bin"), "FLINK_OPT_DIR=" + layer.optDir,
		"FLINK_LOG_DIR=" + filepath.Join(r.dir, "logs")}
	if jh := os.Getenv("JAVA_HOME"); jh != "" {
		procEnv = append(procEnv, "JAVA_HOME="+jh)
	}
	if r.a.opts.Kubeconfig != "" {
		procEnv = append(procEnv, "KUBECONFIG="+r.a.opts.Kubeconfig)
	}
	for _, k := range order {
		if k != "FLINK_CONF_DIR" && k != "FLINK_HOME" {
			procEnv = append(procEnv, k+"="+rw.Replace(env[k]))
		}
	}

	java, err := exec.LookPath("java")
	if err != nil {
		return nil, "", err
	}
	calculator, err := memoryCalculator(java, dist, ep.role, confDir, dynamicProperties(args))
	if err != nil {
		return nil, "", err
	}
	logPath := filepath.Join(r.dir, "logs", c.spec.Name+".log")
	javaArgs := append([]string{java}, flinkcluster.JavaModuleFlags()...)
	javaArgs = append(javaArgs, jvmMemoryMarker)
	// Serial GC and C1 only: fewer threads and less compilation on a 2-core machine.
	javaArgs = append(javaArgs, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
	// Every container's JVM is PID 1 and they share the machine's /tmp: performance data files
	// (/tmp/hsperfdata_<user>/<pid>) would collide, and a JVM would delete those of JVMs whose
	// pids its namespace cannot see.
	javaArgs = append(javaArgs, "-XX:+PerfDisableSharedMem")
	// The distribution's classes already parsed (package flinkcluster, cds.go): a third less
	// CPU per start.
	javaArgs = append(javaArgs, dist.SharedArchiveFlags(flinkcluster.Role(ep.role))...)
	javaArgs = append(javaArgs, strings.Fields(readConfigValue(confDir, "env.java.opts.all"))...)
	javaArgs = append(javaArgs, strings.Fields(readConfigValue(confDir, "env.java.opts."+ep.role))...)
	javaArgs = append(javaArgs,
		"-Djdk.net.hosts.file="+r.hostsPath(), "-Dsun.net.inetaddr.ttl=1", "-Dsun.net.inetaddr.negative.ttl=0",
		"-Dlog.file="+logPath,
		"-Dlog4j.configurationFile=file:"+filepath.Join(confDir, "log4j-console.properties"),
		"-cp", classpath, ep.mainClass, "--configDir", confDir)
	javaArgs = append(append(javaArgs, dynamicPropertiesMarker), args...)

	out, err := os.OpenFile(filepath.Join(r.dir, "logs", c.spec.Name+".out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, "", err
	}
	// bash runs the launcher, which execs the JVM: the container's process is the one that
	// runs Flink's memory calculator and becomes the JVM, as in a Flink image.
	bash, err := exec.LookPath("bash")
	if err != nil {
		out.Close()
		return nil, "", err
	}
	program, programArgs := bash, launcherArgs(calculator, javaArgs)
	if rooted {
		root := filepath.Join(dir, "root")
		if err := os.RemoveAll(root); err != nil { // what an earlier run staged; its mounts ended with it
			out.Close()
			return nil, "", err
		}
		script, err := flinkRootScript("/", root, dir, binds)
		if err != nil {
			out.Close()
			return nil, "", err
		}
		program = "unshare"
		programArgs = append([]string{"--mount", "--propagation", "private", "--", "/bin/sh", "-ec", script, "sh", bash}, programArgs...)
	}
	cmd, err := c.initCommand(program, programArgs...)
	if err != nil {
		out.Close()
		return nil, "", err
	}
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, procEnv, out, out
	go func() { <-ctx.Done(); out.Close() }()
	return cmd, filepath.Join(r.dir, "logs", c.spec.Name+".out"), nil
}

// initCommand is containerInit for this container: exec is told whether the program has a
// PID namespace of its own, and the pod's log says when it has not.
func (c *containerRunner) initCommand(program string, args ...string) (*exec.Cmd, error) {
	cmd, ownPIDs, err := containerInit(program, args...)
	if err != nil {
		return nil, err
	}
	c.nextExec.ownPIDs = ownPIDs
	if !ownPIDs {
		c.r.logf("container %s: runs in the machine's PID namespace: %v", c.spec.Name, pidNamespaces())
	}
	return cmd, nil
}

// containerInit is the command of a container's program that runs, as in a container, as PID 1
// of a PID namespace of its own (ownPIDs): `kill 1` in `kubectl exec` (which enters the
// namespace) signals the program, not the machine's init, and when the program exits the kernel
// kills whatever it left running there. Being PID 1, it gets only the signals it handles,
// SIGKILL aside (Java handles SIGTERM: shutdown hooks, then exit 143). Its pid in the agent's
// namespace, the one the agent and tests signal and the ContainerID names, leads a process
// group of its own. Where no PID namespace can be made (not root), it runs as a plain process.
//
// setpriv sets the parent-death signal and then executes the program, which stays PID 1. Go's
// own Pdeathsig cannot be combined with CLONE_NEWPID: the child compares getppid(), which is 0
// across the namespace boundary, with the agent's pid and kills itself.
func containerInit(program string, args ...string) (cmd *exec.Cmd, ownPIDs bool, err error) {
	path, err := exec.LookPath(program)
	if err != nil {
		return nil, false, fmt.Errorf("container program: %w", err)
	}
	if pidNamespaces() != nil {
		cmd = exec.Command(path, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		return cmd, false, nil
	}
	cmd = exec.Command("setpriv", append([]string{"--pdeathsig", "KILL", "--", path}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Cloneflags: syscall.CLONE_NEWPID}
	return cmd, true, nil
}

// pidNamespaces tells, once, why containers cannot have PID namespaces of their own here (nil:
// they can): making one takes CAP_SYS_ADMIN, and setpriv of util-linux.
var pidNamespaces = sync.OnceValue(func() error {
	cmd := exec.Command("setpriv", "--pdeathsig", "KILL", "--", "true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("no PID namespace for containers: %w: %s", err, out)
	}
	return nil
})

// probe runs the startup probe, then liveness and readiness, as kubelet does.
func (c *containerRunner) probe(ctx context.Context) {
	spec := c.spec
	if p := spec.StartupProbe; p != nil {
		if !c.waitFor(ctx, p) {
			if ctx.Err() == nil {
				c.r.logf("container %s: startup probe failed; restarting", spec.Name)
				c.restartForLiveness()
			}
			return
		}
		c.mu.Lock()
		c.started = true
		c.mu.Unlock()
	}
	if spec.ReadinessProbe == nil {
		c.mu.Lock()
		c.ready = true
		c.mu.Unlock()
	} else {
		go c.loop(ctx, spec.ReadinessProbe, func(ok bool) {
			c.mu.Lock()
			c.ready = ok
			c.mu.Unlock()
		})
	}
	if spec.LivenessProbe != nil {
		c.loop(ctx, spec.LivenessProbe, func(ok bool) {
			if !ok {
				c.r.logf("container %s: liveness probe failed; restarting", spec.Name)
				c.restartForLiveness()
			}
		})
	}
}

// waitFor runs a probe until it succeeds once or fails failureThreshold times in a row.
func (c *containerRunner) waitFor(ctx context.Context, p *corev1.Probe) bool {
	period, failures := probeTimes(p)
	if !sleepCtx(ctx, time.Duration(p.InitialDelaySeconds)*time.Second) {
		return false
	}
	for n := 0; n < failures; {
		if c.check(ctx, p) {
			return true
		}
		n++
		if !sleepCtx(ctx, period) {
			return false
		}
	}
	return false
}

// loop reports a probe's verdict after successThreshold successes or failureThreshold failures.
func (c *containerRunner) loop(ctx context.Context, p *corev1.Probe, verdict func(bool)) {
	period, failures := probeTimes(p)
	successes := max(int(p.SuccessThreshold), 1)
	if !sleepCtx(ctx, time.Duration(p.InitialDelaySeconds)*time.Second) {
		return
	}
	okRun, failRun := 0, 0
	for {
		if c.check(ctx, p) {
			okRun, failRun = okRun+1, 0
			if okRun >= successes {
				verdict(true)
			}
		} else {
			okRun, failRun = 0, failRun+1
			if failRun >= failures {
				verdict(false)
				failRun = 0
			}
		}
		if !sleepCtx(ctx, period) {
			return
		}
	}
}

func probeTimes(p *corev1.Probe) (time.Duration, int) {
	period := time.Duration(max(p.PeriodSeconds, 1)) * time.Second
	// Probe faster than asked during tests' short lives, but never slower.
	period = min(period, 2*time.Second)
	failures := int(max(p.FailureThreshold, 1))
	if p.PeriodSeconds > 2 {
		failures = failures * int(p.PeriodSeconds) / 2
	}
	return period, failures
}

func (c *containerRunner) check(ctx context.Context, p *corev1.Probe) bool {
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	switch {
	case p.HTTPGet != nil:
		port, err := c.port(p.HTTPGet.Port)
		if err != nil {
			return false
		}
		scheme := "http"
		if p.HTTPGet.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s://%s:%d%s", scheme, c.r.ip, port, p.HTTPGet.Path), nil)
		if err != nil {
			return false
		}
		resp, err := kubeletProbeClient(timeout).Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode >= 200 && resp.StatusCode < 400
	case p.TCPSocket != nil:
		port, err := c.port(p.TCPSocket.Port)
		if err != nil {
			return false
		}
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(c.r.ip, strconv.Itoa(port)), timeout)
		if err != nil {
			return false
		}
		conn.Close()
		return true
	}
	// exec and gRPC probes need the container's filesystem; they count as passing here.
	return true
}

// kubeletProbeClient asks as kubelet's HTTP prober does: https without verifying the
// certificate, and a redirect to another host is not followed but answered by the redirect
// itself (a 3xx counts as success, with a warning). Flink's REST endpoint with SSL answers a
// plain http probe so, redirecting it to https://<rest.address>.
func kubeletProbeClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // kubelet's probes do not verify
			DisableKeepAlives: true,
			Proxy:             nil,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Hostname() != via[0].URL.Hostname() {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}
}

func (c *containerRunner) port(p intstr.IntOrString) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.spec.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("no port named %q", p.StrVal)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// outOfMemory reports whether the process log ends with a Java out-of-memory error.
func outOfMemory(logPath string) bool {
	tail := readTail(logPath, 64<<10)
	return strings.Contains(tail, "java.lang.OutOfMemoryError")
}

func exitMessage(err error, logPath string) string {
	if err == nil {
		return ""
	}
	return logtail.Lines(readTail(logPath, 8<<10), 3)
}

func readTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(st.Size()-n, 0)
	buf := make([]byte, st.Size()-off)
	_, _ = f.ReadAt(buf, off)
	return string(buf)
}
