package nodeagent

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A Flink container's JVM is a process of this machine: the distribution, the JDK and the
// configuration the agent writes are machine paths, and the image's paths (/opt/flink/...)
// are rewritten to them. The pod's volumes mounted under the image's directory are different:
// Flink writes checkpoints and savepoints there (/opt/flink/volume/flink-sp), reports those
// paths (REST, the operator's status, a blue/green switch's savepoint), and another
// JobManager reads them back, so they must be the pod's own paths, as on a real node, not
// this machine's. Where the agent can make namespaces (root), such a container runs in a root
// of its own: the machine's file system with those volumes mounted at their mount paths
// (flinkRootScript), and its configuration keeps their paths. Volumes mounted elsewhere
// (/flink-data) keep being rewritten to their directories, as before.

// flinkImageDir is the Flink image's directory, under which volumes are mounted in place.
const flinkImageDir = "/opt/flink"

// bindMount mounts a volume's directory (or file) src at target in a container's root.
type bindMount struct {
	src, target string
	readOnly    bool
}

// flinkMounts splits a Flink container's volume mounts into the paths the process sees (a
// mount under /opt/flink is its own path; any other is rewritten to its directory) and the
// bind mounts that make the first kind visible. Without namespaces (rooted false) every mount
// is rewritten.
func (r *podRunner) flinkMounts(c corev1.Container, rooted bool) (proc []pathRewrite, binds []bindMount) {
	readOnly := map[string]bool{}
	for _, m := range c.VolumeMounts {
		readOnly[strings.TrimSuffix(m.MountPath, "/")] = m.ReadOnly
	}
	for _, m := range r.pathMap(c) {
		target := path.Clean("/" + m.from)
		if !rooted || !strings.HasPrefix(target, flinkImageDir+"/") {
			proc = append(proc, m)
			continue
		}
		proc = append(proc, pathRewrite{from: m.from, to: m.from})
		binds = append(binds, bindMount{src: m.to, target: target, readOnly: readOnly[m.from]})
	}
	return proc, binds
}

// flinkRootScript returns the shell script that, run in a new mount namespace (and PID
// namespace, for /proc), builds root as the machine's file system seen from hostRoot (each
// entry of it bound, symbolic links copied), with the binds mounted at their targets, and then
// runs its arguments there, in the working directory wd. A directory on the way to a target
// is made of its machine entries plus what leads to the target; the rest of the machine is
// bound whole. Mount points inside another volume are made in it, as a container runtime
// makes them.
func flinkRootScript(hostRoot, root, wd string, binds []bindMount) (string, error) {
	binds = slices.Clone(binds)
	slices.SortStableFunc(binds, func(a, b bindMount) int { return strings.Compare(a.target, b.target) })
	targets := map[string]bool{}
	for _, b := range binds {
		targets[b.target] = true
	}
	leadsToTarget := func(p string) bool {
		for t := range targets {
			if strings.HasPrefix(t, p+"/") {
				return true
			}
		}
		return false
	}
	lines := []string{"mkdir -p " + shellQuote(root)}
	var stage func(dir string) error
	stage = func(dir string) error { // dir: a path inside the container, staged in root
		entries, err := os.ReadDir(filepath.Join(hostRoot, dir))
		if err != nil {
			return err
		}
		for _, e := range entries {
			p := path.Join(dir, e.Name())
			host, staged := filepath.Join(hostRoot, p), filepath.Join(root, p)
			switch {
			case p == "/proc":
				lines = append(lines, "mkdir -p "+shellQuote(staged)) // mounted for the PID namespace below
			case targets[p]:
				// mounted below
			case leadsToTarget(p):
				if !e.IsDir() {
					return fmt.Errorf("%s leads to a volume's mount path but is not a directory on this machine", p)
				}
				lines = append(lines, "mkdir -p "+shellQuote(staged))
				if err := stage(p); err != nil {
					return err
				}
			case e.Type()&fs.ModeSymlink != 0:
				link, err := os.Readlink(host)
				if err != nil {
					return err
				}
				lines = append(lines, "ln -s "+shellQuote(link)+" "+shellQuote(staged))
			case e.IsDir():
				lines = append(lines, "mkdir -p "+shellQuote(staged), "mount --rbind "+shellQuote(host)+" "+shellQuote(staged))
			case e.Type().IsRegular():
				lines = append(lines, ": > "+shellQuote(staged), "mount --bind "+shellQuote(host)+" "+shellQuote(staged))
			}
		}
		return nil
	}
	if err := stage("/"); err != nil {
		return "", err
	}
	for _, b := range binds {
		st, err := os.Stat(b.src)
		if err != nil {
			return "", fmt.Errorf("volume mount %s: %w", b.target, err)
		}
		staged := filepath.Join(root, b.target)
		if st.IsDir() {
			lines = append(lines, "mkdir -p "+shellQuote(staged))
		} else {
			lines = append(lines, "mkdir -p "+shellQuote(filepath.Dir(staged)), "[ -e "+shellQuote(staged)+" ] || : > "+shellQuote(staged))
		}
		lines = append(lines, "mount --bind "+shellQuote(b.src)+" "+shellQuote(staged))
		if b.readOnly {
			lines = append(lines, "mount -o remount,bind,ro "+shellQuote(staged))
		}
	}
	lines = append(lines, "mount -t proc proc "+shellQuote(filepath.Join(root, "proc")),
		fmt.Sprintf(`exec unshare --root=%s --wd=%s -- "$@"`, shellQuote(root), shellQuote(wd)))
	return strings.Join(lines, "\n"), nil
}
