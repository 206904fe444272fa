// Package zkserver starts a real Apache ZooKeeper server for tests: the server jars `make
// zookeeper` puts in bin/zookeeper, run by java in standalone mode on a loopback port with a
// temporary data directory. Test code only.
package zkserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// Server is a running ZooKeeper server.
type Server struct {
	// Addr is host:port of its client port.
	Addr string
	cmd  *exec.Cmd
}

// Start runs a standalone ZooKeeper server on host (an address of this machine: 127.0.0.1, or
// an address pods reach) and a free port, waits until it answers, and stops it when t ends.
// The server's output goes to <t.TempDir()>/zookeeper.log.
func Start(t testing.TB, host string) *Server {
	t.Helper()
	root, err := kubeenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	jars := filepath.Join(root, "bin", "zookeeper")
	if _, err := os.Stat(filepath.Join(jars, ".installed")); err != nil {
		t.Fatalf("no ZooKeeper server in %s (run `make zookeeper`): %v", jars, err)
	}
	port, err := freePort(host)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "zoo.cfg")
	conf := strings.Join([]string{
		"tickTime=500",
		"dataDir=" + filepath.Join(dir, "data"),
		fmt.Sprintf("clientPort=%d", port),
		"clientPortAddress=" + host,
		"maxClientCnxns=0",
		"admin.enableServer=false",
		// Sessions of killed JobManagers expire within seconds rather than Flink's minute.
		"maxSessionTimeout=20000",
	}, "\n") + "\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "zookeeper.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("java", "-Xmx128m", "-cp", filepath.Join(jars, "*"),
		"org.apache.zookeeper.server.ZooKeeperServerMain", cfg)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start ZooKeeper: %v", err)
	}
	s := &Server{Addr: net.JoinHostPort(host, fmt.Sprint(port)), cmd: cmd}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		_ = logFile.Close()
	})
	if err := s.waitReady(exited, 60*time.Second); err != nil {
		log, _ := os.ReadFile(logFile.Name())
		t.Fatalf("ZooKeeper at %s: %v\n%s", s.Addr, err, log)
	}
	return s
}

// Client connects a test client to the server, closed when t ends.
func (s *Server) Client(t testing.TB) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{s.Addr}, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// waitReady waits until a client's session can read the root ("ruok" answers "imok" before
// the server serves sessions).
func (s *Server) waitReady(exited <-chan struct{}, within time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		select {
		case <-exited:
			return fmt.Errorf("the server exited: %s", s.cmd.ProcessState)
		default:
		}
		if last = s.ping(); last == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("not ready within %s: %w", within, last)
}

func (s *Server) ping() error {
	conn, _, err := zk.Connect([]string{s.Addr}, 5*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		return err
	}
	defer conn.Close()
	done := make(chan error, 1)
	go func() { _, _, err := conn.Exists("/"); done <- err }()
	select {
	case err := <-done:
		return err
	case <-time.After(3 * time.Second):
		return fmt.Errorf("no answer")
	}
}

func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}
