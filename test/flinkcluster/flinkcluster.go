// Package flinkcluster runs real Flink session clusters for tests: a JobManager and a
// TaskManager as plain java processes on loopback, from the distributions `make flink-dist`
// installs under bin/flink/<version> (the apache-flink-libraries sdist from PyPI, example
// jobs from Maven Central). Test-only code; the product never imports it.
package flinkcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flink-operator/flink-operator/test/logtail"

	"github.com/flink-operator/flink-operator/test/freeport"

	"github.com/flink-operator/flink-operator/test/repo"
)

// Dist is an installed Flink distribution.
type Dist struct {
	Version string
	Home    string
}

// Versions returns the Flink versions the tests run against, from FLINK_VERSIONS (set by
// `make test`). Missing versions fail the test: real-Flink tests are never skipped by
// `make test`. Only the inner loop (`make test-short`, go test -short) leaves them out.
func Versions(t testing.TB) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("real Flink: left out by -short (make test-short); make test runs it")
	}
	v := strings.Fields(os.Getenv("FLINK_VERSIONS"))
	if len(v) == 0 {
		t.Fatal("FLINK_VERSIONS is not set: run the tests with `make test`, which installs Flink into bin/flink")
	}
	return v
}

// DistFor returns the installed distribution of a version.
func DistFor(t testing.TB, version string) Dist {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "bin", "flink", version)
	d, err := DistAt(home)
	if err == nil {
		_, err = d.distJar()
	}
	if err != nil {
		t.Fatalf("Flink %s is not installed in %s (run `make flink-dist`): %v", version, home, err)
	}
	return d
}

// DistAt is the distribution installed in home (bin/flink/<version>). Its Home is absolute
// with every symbolic link resolved: a class-data sharing archive (cds.go) holds the jar
// paths it was dumped with and maps only for the same paths, however the repository was
// reached (a clone's bin/ is often a link to a shared one).
func DistAt(home string) (Dist, error) {
	abs, err := filepath.Abs(home)
	if err != nil {
		return Dist{}, err
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return Dist{}, err
	}
	return Dist{Version: filepath.Base(abs), Home: resolved}, nil
}

// Example returns the path of an example job jar (TopSpeedWindowing, WordCount).
func (d Dist) Example(name string) string { return filepath.Join(d.Home, "examples", name+".jar") }

// AtLeast reports whether the distribution is major.minor or newer.
func (d Dist) AtLeast(major, minor int) bool {
	var ma, mi int
	_, _ = fmt.Sscanf(d.Version, "%d.%d", &ma, &mi)
	return ma > major || (ma == major && mi >= minor)
}

func (d Dist) distJar() (string, error) {
	m, err := filepath.Glob(filepath.Join(d.Home, "lib", "flink-dist-*.jar"))
	if err != nil || len(m) != 1 {
		return "", fmt.Errorf("want one lib/flink-dist-*.jar, found %v", m)
	}
	return m[0], nil
}

// Installed returns the distributions `make flink-dist` installed under bin/flink.
func Installed(repoRoot string) ([]Dist, error) {
	dirs, err := filepath.Glob(filepath.Join(repoRoot, "bin", "flink", "*", ".installed"))
	if err != nil {
		return nil, err
	}
	var out []Dist
	for _, stamp := range dirs {
		d, err := DistAt(filepath.Dir(stamp))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no Flink distribution in %s (run `make flink-dist`)", filepath.Join(repoRoot, "bin", "flink"))
	}
	return out, nil
}

// Classpath is what Flink's scripts put on a JobManager's or TaskManager's classpath.
func (d Dist) Classpath() (string, error) { return d.classpath() }

// JavaModuleFlags are the JVM flags Flink's scripts add on Java 17.
func JavaModuleFlags() []string { return append([]string(nil), javaModuleFlags...) }

// classpath is lib/*.jar sorted with flink-dist last, as Flink's config.sh builds it.
func (d Dist) classpath() (string, error) {
	dist, err := d.distJar()
	if err != nil {
		return "", err
	}
	jars, err := filepath.Glob(filepath.Join(d.Home, "lib", "*.jar"))
	if err != nil {
		return "", err
	}
	sort.Strings(jars)
	var cp []string
	for _, j := range jars {
		if j != dist {
			cp = append(cp, j)
		}
	}
	return strings.Join(append(cp, dist), string(os.PathListSeparator)), nil
}

// configFile is flink-conf.yaml up to 1.18 and config.yaml from 1.19 (the only one 2.x reads).
func (d Dist) configFile() string {
	if d.AtLeast(1, 19) {
		return "config.yaml"
	}
	return "flink-conf.yaml"
}

// Java 17 needs these for Flink's serializers (the scripts take them from env.java.opts.all).
var javaModuleFlags = []string{
	"--add-exports=java.base/sun.net.util=ALL-UNNAMED",
	"--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
	"--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
	"--add-opens=java.base/java.lang=ALL-UNNAMED",
	"--add-opens=java.base/java.net=ALL-UNNAMED",
	"--add-opens=java.base/java.io=ALL-UNNAMED",
	"--add-opens=java.base/java.nio=ALL-UNNAMED",
	"--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens=java.base/java.text=ALL-UNNAMED",
	"--add-opens=java.base/java.time=ALL-UNNAMED",
	"--add-opens=java.base/java.util=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED",
}

// Small, consistent memory settings: about 1 GiB per process. A TaskManager started without
// Flink's scripts needs its memory fully resolved (see the flink-rest reference, §3.3).
var (
	jobManagerJVM  = []string{"-Xmx448m", "-Xms448m", "-XX:MaxMetaspaceSize=256m"}
	taskManagerJVM = []string{"-Xmx320m", "-Xms320m", "-XX:MaxDirectMemorySize=192m", "-XX:MaxMetaspaceSize=256m"}
	taskManagerMem = map[string]string{
		"taskmanager.cpu.cores": "2.0", "taskmanager.memory.process.size": "1024m",
		"taskmanager.memory.framework.heap.size": "128m", "taskmanager.memory.task.heap.size": "192m",
		"taskmanager.memory.framework.off-heap.size": "128m", "taskmanager.memory.task.off-heap.size": "0m",
		"taskmanager.memory.network.min": "64m", "taskmanager.memory.network.max": "64m",
		"taskmanager.memory.managed.size": "64m", "taskmanager.memory.jvm-metaspace.size": "256m",
		"taskmanager.memory.jvm-overhead.min": "192m", "taskmanager.memory.jvm-overhead.max": "192m",
	}
	// Quick startup on 2 cores; these JVMs live for seconds to minutes.
	fastJVM = []string{"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}
)

// Options tune a session cluster.
type Options struct {
	// Slots per TaskManager; 2 when 0.
	Slots int
	// Config overrides, applied last.
	Config map[string]string
	// ConfigFile, when set, is the content of the configuration file (e.g. one the operator
	// rendered); the keys the harness needs (addresses, ports, directories) are then passed
	// as dynamic properties, which Flink applies over the file.
	ConfigFile string
	// Log4j, when set, replaces the harness's log4j-console.properties.
	Log4j string
	// RESTTLS, when set, says the REST endpoint serves https (Config turns
	// security.ssl.rest.enabled on): RESTURL is https and the harness polls with this
	// configuration (its CAs, and its client certificate for mutual TLS).
	RESTTLS *tls.Config
	// DumpSharedArchives makes the JobManager and the TaskManager write the distribution's
	// class-data sharing archives when they exit (see SharedArchiveFlags); cmd/flinkcds sets it.
	DumpSharedArchives bool
}

// Cluster is a running session cluster.
type Cluster struct {
	Dist
	// Dir holds conf/, log/, checkpoints/, savepoints/ and uploads/.
	Dir string
	// RESTURL is the JobManager REST endpoint.
	RESTURL string
	// SavepointDir and CheckpointDir are the cluster's default directories (file:// URIs).
	SavepointDir, CheckpointDir string

	t      testing.TB // nil outside a test (Start)
	classp string
	// dumpArchives: the processes write class-data sharing archives at exit (Options.DumpSharedArchives).
	dumpArchives bool
	dynamic      map[string]string
	jm, tm       *process
	jmStarts     int
	// http polls the REST endpoint.
	http *http.Client
}

// process is a started java process; done closes when it exits.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// kill signals the process group and waits up to grace for the exit, then SIGKILLs it.
func (p *process) kill(sig syscall.Signal, grace time.Duration) {
	if p == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// StartSession starts a JobManager and one TaskManager and waits until the TaskManager has
// registered. The cluster is stopped when the test ends; its logs are printed if it failed.
func StartSession(t testing.TB, d Dist, opts Options) *Cluster {
	t.Helper()
	c, err := Start(t.TempDir(), d, opts)
	if c != nil {
		c.t = t
		t.Cleanup(c.stop)
	}
	if err != nil {
		t.Fatalf("Flink %s session cluster: %v", d.Version, err)
	}
	return c
}

// Start is StartSession outside a test: the cluster lives in dir, and the caller stops it with
// Stop, also when Start fails after starting processes (then the Cluster is not nil).
func Start(dir string, d Dist, opts Options) (*Cluster, error) {
	c := &Cluster{Dist: d, Dir: dir, dumpArchives: opts.DumpSharedArchives}
	cp, err := d.classpath()
	if err != nil {
		return nil, err
	}
	c.classp = cp
	ports, err := freeport.Ports(2)
	if err != nil {
		return nil, err
	}
	restPort, rpcPort := ports[0], ports[1]
	c.RESTURL = fmt.Sprintf("http://127.0.0.1:%d", restPort)
	c.http = &http.Client{Timeout: 10 * time.Second}
	if opts.RESTTLS != nil {
		c.RESTURL = fmt.Sprintf("https://127.0.0.1:%d", restPort)
		c.http.Transport = &http.Transport{TLSClientConfig: opts.RESTTLS.Clone()}
	}
	c.SavepointDir = "file://" + filepath.Join(dir, "savepoints")
	c.CheckpointDir = "file://" + filepath.Join(dir, "checkpoints")
	slots := opts.Slots
	if slots == 0 {
		slots = 2
	}
	cfg := map[string]string{
		"jobmanager.rpc.address": "127.0.0.1", "jobmanager.rpc.port": fmt.Sprint(rpcPort),
		"jobmanager.bind-host": "127.0.0.1", "taskmanager.host": "127.0.0.1", "taskmanager.bind-host": "127.0.0.1",
		"rest.address": "127.0.0.1", "rest.bind-address": "127.0.0.1", "rest.port": fmt.Sprint(restPort),
		"taskmanager.numberOfTaskSlots": fmt.Sprint(slots), "parallelism.default": "1",
		"state.checkpoints.dir": c.CheckpointDir, "state.savepoints.dir": c.SavepointDir,
		"execution.checkpointing.interval":                          "2s",
		"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
		"restart-strategy.type":                                     "none",
		"heartbeat.timeout":                                         "15000", "slot.request.timeout": "60000",
		"metrics.fetcher.update-interval": "1000",
		"web.upload.dir":                  filepath.Join(dir, "uploads"),
	}
	for k, v := range opts.Config {
		cfg[k] = v
	}
	if opts.ConfigFile != "" {
		c.dynamic = cfg
	}
	if err := c.writeConf(cfg, opts); err != nil {
		return nil, err
	}

	if err := c.startJobManager(); err != nil {
		return c, err
	}
	tmArgs := append(append(append([]string{}, javaModuleFlags...), append(taskManagerJVM, fastJVM...)...), c.logFlags("taskmanager")...)
	tmArgs = append(tmArgs, c.archiveFlags(RoleTaskManager)...)
	tmArgs = append(tmArgs, "-cp", c.classp, "org.apache.flink.runtime.taskexecutor.TaskManagerRunner", "--configDir", c.confDir())
	for _, k := range sortedKeys(taskManagerMem) {
		tmArgs = append(tmArgs, "-D", k+"="+taskManagerMem[k])
	}
	tmArgs = append(tmArgs, c.dynamicArgs()...)
	if c.tm, err = c.start("taskmanager", tmArgs); err != nil {
		return c, err
	}
	if err := c.WaitForTaskManagers(context.Background(), 1, 120*time.Second); err != nil {
		return c, fmt.Errorf("did not come up: %w", err)
	}
	return c, nil
}

// archiveFlags are the JVM flags that map the role's class-data sharing archive, or, when
// the cluster dumps archives, write it at exit.
func (c *Cluster) archiveFlags(role Role) []string {
	if c.dumpArchives {
		return c.dumpArchiveFlags(role)
	}
	return c.SharedArchiveFlags(role)
}

func (c *Cluster) confDir() string { return filepath.Join(c.Dir, "conf") }

// dynamicArgs are the -D properties passed to every process (with a given config file).
func (c *Cluster) dynamicArgs() []string {
	var args []string
	for _, k := range sortedKeys(c.dynamic) {
		args = append(args, "-D", k+"="+c.dynamic[k])
	}
	return args
}

func (c *Cluster) writeConf(cfg map[string]string, opts Options) error {
	if err := os.MkdirAll(c.confDir(), 0o755); err != nil {
		return err
	}
	content := opts.ConfigFile
	if content == "" {
		var b strings.Builder
		for _, k := range sortedKeys(cfg) {
			fmt.Fprintf(&b, "%s: %s\n", k, cfg[k])
		}
		content = b.String()
	}
	if err := os.WriteFile(filepath.Join(c.confDir(), c.configFile()), []byte(content), 0o644); err != nil {
		return err
	}
	log4j := opts.Log4j
	if log4j == "" {
		log4j = `rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FileAppender
appender.file.name = FileAppender
appender.file.type = FILE
appender.file.fileName = ${sys:log.file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{HH:mm:ss,SSS} %-5p %-60c %x - %m%n
`
	}
	return os.WriteFile(filepath.Join(c.confDir(), "log4j-console.properties"), []byte(log4j), 0o644)
}

func (c *Cluster) logFlags(component string) []string {
	return []string{
		"-Dlog.file=" + filepath.Join(c.Dir, "log", component+".log"),
		"-Dlog4j.configurationFile=file:" + filepath.Join(c.confDir(), "log4j-console.properties"),
	}
}

func (c *Cluster) startJobManager() error {
	c.jmStarts++
	args := append(append(append([]string{}, javaModuleFlags...), append(jobManagerJVM, fastJVM...)...), c.logFlags(fmt.Sprintf("jobmanager-%d", c.jmStarts))...)
	args = append(args, c.archiveFlags(RoleJobManager)...)
	args = append(args, "-cp", c.classp, "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint", "--configDir", c.confDir())
	args = append(args, c.dynamicArgs()...)
	var err error
	c.jm, err = c.start(fmt.Sprintf("jobmanager-%d", c.jmStarts), args)
	return err
}

func (c *Cluster) start(name string, args []string) (*process, error) {
	if err := os.MkdirAll(filepath.Join(c.Dir, "log"), 0o755); err != nil {
		return nil, err
	}
	out, err := os.Create(filepath.Join(c.Dir, "log", name+".out"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("java", args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "FLINK_CONF_DIR="+c.confDir(), "FLINK_LIB_DIR="+filepath.Join(c.Home, "lib"),
		"FLINK_PLUGINS_DIR="+filepath.Join(c.Home, "plugins"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); out.Close(); close(p.done) }()
	return p, nil
}

// WaitForTaskManagers polls GET /overview until n TaskManagers are registered and their slots
// are offered (a TaskManager appears in the overview a moment before its slots do).
func (c *Cluster) WaitForTaskManagers(ctx context.Context, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-c.jm.done:
			return fmt.Errorf("the JobManager exited:\n%s", c.logTail())
		default:
		}
		if tms, slots, err := c.taskManagers(ctx); err == nil && tms >= n && slots >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("fewer than %d TaskManagers after %s:\n%s", n, timeout, c.logTail())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// WaitForREST polls GET /config until the JobManager's REST endpoint answers.
func (c *Cluster) WaitForREST(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := c.http.Get(c.RESTURL + "/config")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("REST endpoint not up after %s:\n%s", timeout, c.logTail())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (c *Cluster) taskManagers(ctx context.Context) (tms, slots int, err error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.RESTURL+"/overview", nil)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	var o struct {
		TaskManagers int `json:"taskmanagers"`
		SlotsTotal   int `json:"slots-total"`
	}
	if err := decodeJSON(resp, &o); err != nil {
		return 0, 0, err
	}
	return o.TaskManagers, o.SlotsTotal, nil
}

// RestartJobManager kills the JobManager (SIGKILL, as a crashed pod) and starts a new one
// with the same configuration, waiting for its REST endpoint. Without HA the new JobManager
// knows nothing of the old one's jobs, uploaded jars or async operations.
func (c *Cluster) RestartJobManager() {
	c.t.Helper()
	c.jm.kill(syscall.SIGKILL, 10*time.Second)
	if err := c.startJobManager(); err != nil {
		c.t.Fatalf("restart the JobManager: %v", err)
	}
	if err := c.WaitForREST(90 * time.Second); err != nil {
		c.t.Fatalf("restarted JobManager: %v", err)
	}
}

func (c *Cluster) stop() {
	if c.t.Failed() {
		c.t.Logf("Flink %s logs (%s):\n%s", c.Version, c.Dir, c.logTail())
	}
	c.Stop()
}

// Stop stops the TaskManager, then the JobManager, each with SIGTERM and up to stopGrace to
// exit, then SIGKILL.
func (c *Cluster) Stop() {
	c.tm.kill(syscall.SIGTERM, stopGrace(c.dumpArchives))
	c.jm.kill(syscall.SIGTERM, stopGrace(c.dumpArchives))
}

// stopGrace is how long a stopped JVM may take to exit. One dumping its class-data archive at
// exit writes tens of megabytes after loading every class again: a few seconds on a quiet
// machine, more than 30 s while make test-deps builds Go tools on both cores of an empty one
// (a cold run's JobManagers were killed mid-dump and wrote no archive), so it gets 5 minutes.
func stopGrace(dumping bool) time.Duration {
	if dumping {
		return 5 * time.Minute
	}
	return 30 * time.Second
}

// logTail returns the last lines of every log of the cluster, for failure messages.
func (c *Cluster) logTail() string {
	files, _ := filepath.Glob(filepath.Join(c.Dir, "log", "*"))
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "==> %s <==\n%s\n", filepath.Base(f), logtail.Lines(string(data), 40))
	}
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
