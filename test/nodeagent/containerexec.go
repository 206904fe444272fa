package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// execTarget is how `kubectl exec` runs a command in a running container. Containers here are
// processes, not images with a root file system of their own, so "in the container" means:
//
//   - Flink containers: a process in the container's PID namespace (nsenter --pid; the agent
//     makes one where it can, as root: containerInit), where the JobManager or TaskManager is
//     PID 1, so `kill 1` stops it as in a real container; with the
//     container's environment (FLINK_HOME, FLINK_CONF_DIR, JAVA_HOME, the pod's env) in the
//     container's working directory (<pod dir>/containers/<name>), its command words' container
//     paths rewritten as the container's own arguments are: /opt/flink to the distribution, the
//     volume mount paths outside /opt/flink to their directories, and two where a user looks
//     for what the image keeps there, /opt/flink/log to the pod's log directory and
//     /opt/flink/conf to the configuration the container actually read. So `kubectl exec <jm>
//     -- ls /opt/flink/log` lists the pod's logs. Where the container has a root of its own
//     (flinkroot.go), the command enters it and sees the volumes under /opt/flink at their
//     mount paths. The rest (files, the network) is the machine's.
//   - Process containers (ProcessImage): the command enters the container process's mount
//     namespace, root and working directory (nsenter), so it sees the mounts and, for image
//     layouts, the image's file system, as the program does; as the image's user for those.
type execTarget struct {
	dir   string
	env   []string
	paths *strings.Replacer // Flink containers; nil otherwise
	enter bool              // process containers
	user  *[2]int64         // uid, gid to run as after entering; nil: the agent's
	// ownPIDs: the container's process is PID 1 of a PID namespace of its own (containerInit),
	// which the command enters.
	ownPIDs bool
}

// containerExecutor runs exec requests in one container (remotecommand.Executor, whose name
// arguments the kubelet API has resolved to the container already).
type containerExecutor struct{ c *containerRunner }

// execWaitDelay bounds how long an exec waits for its output to close after the command
// exited: a background child holding stdout must not keep the session open.
const execWaitDelay = 2 * time.Second

func (e containerExecutor) ExecInContainer(ctx context.Context, _, _, _ string, argv []string, in io.Reader, out, errOut io.WriteCloser,
	tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	t, pid, err := e.c.runningExec()
	if err != nil {
		return err
	}
	if len(argv) == 0 {
		return errors.New("no command")
	}
	words := append([]string{}, argv...)
	if t.paths != nil {
		for i := range words {
			words[i] = t.paths.Replace(words[i])
		}
	}
	if !t.enter {
		// Found in the container's PATH before entering anything: the program of a Flink
		// container is a file of the machine.
		if words[0], err = lookPathIn(words[0], t.env); err != nil {
			return err
		}
	}
	var namespaces []string
	if t.enter {
		namespaces = append(namespaces, "--mount", "--root", "--wd")
	}
	if t.ownPIDs {
		// A process joins a PID namespace only through its children: nsenter forks the
		// command, which runs there beside the container's PID 1.
		namespaces = append(namespaces, "--pid")
	}
	if len(namespaces) > 0 {
		nsenter, lookErr := exec.LookPath("nsenter")
		if lookErr != nil {
			return lookErr
		}
		prefix := append([]string{nsenter, "--target", strconv.Itoa(pid)}, namespaces...)
		if t.user != nil {
			prefix = append(prefix, "--setgid", strconv.FormatInt(t.user[1], 10), "--setuid", strconv.FormatInt(t.user[0], 10))
		}
		words = append(append(prefix, "--"), words...)
	}
	cmd := exec.CommandContext(ctx, words[0], words[1:]...)
	cmd.Dir, cmd.Env = t.dir, t.env
	// A group of its own, killed whole when the client goes away; the agent's death kills it too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = execWaitDelay
	if out != nil {
		cmd.Stdout = out
	}
	switch {
	case tty && out != nil:
		// No terminal here: the command's stderr goes where a terminal would put it.
		cmd.Stderr = out
	case errOut != nil:
		cmd.Stderr = errOut
	}
	var stdin io.WriteCloser
	if in != nil {
		// Not cmd.Stdin: Wait would wait for the client to close its stdin, which a command
		// that never reads it must not need.
		if stdin, err = cmd.StdinPipe(); err != nil {
			return err
		}
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	if stdin != nil {
		go func() { _, _ = io.Copy(stdin, in); stdin.Close() }()
	}
	if resize != nil {
		// No terminal to resize: the channel is drained so that its sender never blocks.
		go func() {
			for range resize { //nolint:revive // draining is the point
			}
		}()
	}
	err = cmd.Wait()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code := exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		return utilexec.CodeExitError{Err: err, Code: code}
	}
	return err
}

// lookPathIn finds a command as a shell with env's PATH would: the container's PATH (a
// PyFlink environment's bin first, say), not the agent's.
func lookPathIn(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: executable file not found in the container's $PATH", name)
}
