package nodeagent

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	corev1 "k8s.io/api/core/v1"
)

// unpackedImage is an image's file system on disk with the configuration it runs by.
type unpackedImage struct {
	rootfs string
	config v1.Config
}

// unpack returns the root file system of the only image of an OCI image layout, unpacked once
// per digest under the agent's directory and shared by every container that runs it (each
// gets a copy of hard links, see containerRootfs).
func (a *Agent) unpack(archive string) (unpackedImage, error) {
	img, err := layoutImage(archive)
	if err != nil {
		return unpackedImage{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return unpackedImage{}, fmt.Errorf("image %s: %w", archive, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return unpackedImage{}, fmt.Errorf("image %s: configuration: %w", archive, err)
	}
	dir := filepath.Join(a.opts.Dir, "images", digest.Algorithm+"-"+digest.Hex)
	rootfs := filepath.Join(dir, "rootfs")
	a.imageMu.Lock()
	defer a.imageMu.Unlock()
	if _, err := os.Stat(filepath.Join(dir, "unpacked")); err == nil {
		return unpackedImage{rootfs: rootfs, config: cf.Config}, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return unpackedImage{}, err
	}
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		return unpackedImage{}, err
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	if err := extract(tar.NewReader(rc), rootfs); err != nil {
		return unpackedImage{}, fmt.Errorf("unpack image %s (%s): %w", archive, digest, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "unpacked"), []byte(archive+"\n"), 0o644); err != nil {
		return unpackedImage{}, err
	}
	a.logf("image %s: unpacked %s to %s", archive, digest, rootfs)
	return unpackedImage{rootfs: rootfs, config: cf.Config}, nil
}

// layoutImage reads the only image of an OCI image layout directory.
func layoutImage(dir string) (v1.Image, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("OCI layout %s: holds %d images, want exactly 1", dir, len(m.Manifests))
	}
	return idx.Image(m.Manifests[0].Digest)
}

// extract writes a flattened image file system into root. Entries cannot reach outside root:
// names are cleaned against it, no entry is written through a symbolic link (a link the image
// made, say etc -> /etc, would otherwise lead onto the machine), hard links point inside, and
// setuid/setgid bits and device files are dropped, since images run as unprivileged users here.
func extract(tr *tar.Reader, root string) error {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean("/" + h.Name)
		if name == "/" {
			continue
		}
		parent, err := realDir(root, path.Dir(name))
		if err != nil {
			return fmt.Errorf("entry %s: %w", h.Name, err)
		}
		target := filepath.Join(parent, path.Base(name))
		mode := fs.FileMode(h.Mode).Perm() // setuid and setgid dropped
		if h.Mode&0o1000 != 0 {
			mode |= fs.ModeSticky
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if st, err := os.Lstat(target); err == nil && !st.IsDir() {
				return fmt.Errorf("entry %s: a directory over a %s", h.Name, st.Mode().Type())
			} else if err != nil {
				if err := os.Mkdir(target, 0o700); err != nil {
					return err
				}
			}
		case tar.TypeReg:
			if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("entry %s: %w", h.Name, err)
			}
		case tar.TypeSymlink:
			if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
			if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
				return err
			}
			continue
		case tar.TypeLink:
			src := path.Clean("/" + h.Linkname)
			srcDir, err := realDir(root, path.Dir(src))
			if err != nil {
				return fmt.Errorf("hard link %s: %w", h.Name, err)
			}
			if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			if err := os.Link(filepath.Join(srcDir, path.Base(src)), target); err != nil {
				return fmt.Errorf("hard link %s: %w", h.Name, err)
			}
			continue
		default:
			continue // devices and FIFOs: an unprivileged program has no use for them here
		}
		if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
			return err
		}
		if err := os.Chmod(target, mode); err != nil {
			return err
		}
	}
}

// realDir returns the directory dir of the image under root, creating missing directories,
// and refuses a path through a symbolic link or a file.
func realDir(root, dir string) (string, error) {
	cur := root
	for _, part := range strings.Split(strings.Trim(dir, "/"), "/") {
		if part == "" {
			continue
		}
		cur = filepath.Join(cur, part)
		st, err := os.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(cur, 0o755); err != nil {
				return "", err
			}
		case err != nil:
			return "", err
		case st.Mode()&fs.ModeSymlink != 0:
			return "", fmt.Errorf("%s is a symbolic link: no entry is written through one", strings.TrimPrefix(cur, root))
		case !st.IsDir():
			return "", fmt.Errorf("%s is not a directory", strings.TrimPrefix(cur, root))
		}
	}
	return cur, nil
}

// inRoot resolves p in the file system under root as the program there would see it:
// symbolic links are followed with root as "/", and ".." stops at root. Components that do not
// exist are kept as they are. The result is always under root.
func inRoot(root, p string) (string, error) {
	rest := strings.Split(strings.Trim(path.Clean("/"+p), "/"), "/")
	cur := "/"
	for hops := 0; len(rest) > 0; {
		part := rest[0]
		rest = rest[1:]
		if part == "" {
			continue
		}
		next := path.Join(cur, part)
		st, err := os.Lstat(filepath.Join(root, next))
		if errors.Is(err, fs.ErrNotExist) {
			return filepath.Join(root, path.Join(append([]string{next}, rest...)...)), nil
		} else if err != nil {
			return "", err
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return "", fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		link, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if path.IsAbs(link) {
			cur = "/"
		}
		rest = append(strings.Split(strings.Trim(path.Clean(link), "/"), "/"), rest...)
	}
	return filepath.Join(root, cur), nil
}

// imageUser is the numeric user and group the container runs as: the container's security
// context, else the pod's, else the image's USER (numeric uid[:gid]), else root.
func imageUser(pod *corev1.Pod, c corev1.Container, cfg v1.Config) (uid, gid int64, err error) {
	if cfg.User != "" {
		u, g, hasGroup := strings.Cut(cfg.User, ":")
		if uid, err = strconv.ParseInt(u, 10, 32); err != nil {
			return 0, 0, fmt.Errorf("image user %q: only numeric uid[:gid] is supported by the local node agent", cfg.User)
		}
		if hasGroup {
			if gid, err = strconv.ParseInt(g, 10, 32); err != nil {
				return 0, 0, fmt.Errorf("image user %q: only numeric uid[:gid] is supported by the local node agent", cfg.User)
			}
		}
	}
	for _, sc := range []*corev1.SecurityContext{podSecurityContext(pod), c.SecurityContext} {
		if sc == nil {
			continue
		}
		if sc.RunAsUser != nil {
			uid = *sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			gid = *sc.RunAsGroup
		}
	}
	return uid, gid, nil
}

func podSecurityContext(pod *corev1.Pod) *corev1.SecurityContext {
	if pod.Spec.SecurityContext == nil {
		return nil
	}
	return &corev1.SecurityContext{RunAsUser: pod.Spec.SecurityContext.RunAsUser, RunAsGroup: pod.Spec.SecurityContext.RunAsGroup}
}

// containerRootfs gives the container its own root: a copy of the unpacked image made of hard
// links (files are shared, owned by the image's users and not writable by the program; the
// directories are the container's, so mount points can be made in them).
func containerRootfs(img unpackedImage, dir string) (string, error) {
	root := filepath.Join(dir, "rootfs")
	if err := os.RemoveAll(root); err != nil {
		return "", err
	}
	if out, err := exec.Command("cp", "-a", "-l", img.rootfs, root).CombinedOutput(); err != nil {
		return "", fmt.Errorf("copy the image's root file system: %w: %s", err, out)
	}
	return root, nil
}

// devices are the device files a container gets, bound from the machine.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// rootfsScript returns the shell script that, in the process's own mount namespace, mounts the
// container's volumes, the pod's hosts file, /proc and the basic devices into root and then
// runs the program there (unshare --root) as uid:gid. The program and its arguments are the
// script's arguments.
func (r *podRunner) rootfsScript(c corev1.Container, root, workDir string, uid, gid int64) (string, error) {
	var lines []string
	mountPoint := func(target string, dir bool) (string, error) {
		staged, err := inRoot(root, target)
		if err != nil {
			return "", err
		}
		if dir {
			err = os.MkdirAll(staged, 0o755)
		} else if err = os.MkdirAll(filepath.Dir(staged), 0o755); err == nil {
			if _, serr := os.Lstat(staged); errors.Is(serr, fs.ErrNotExist) {
				err = os.WriteFile(staged, nil, 0o644)
			}
		}
		return staged, err
	}
	bind := func(src, target string, readOnly bool) error {
		st, err := os.Stat(src)
		if err != nil {
			return err
		}
		staged, err := mountPoint(target, st.IsDir())
		if err != nil {
			return err
		}
		lines = append(lines, "mount --bind "+shellQuote(src)+" "+shellQuote(staged))
		if readOnly {
			lines = append(lines, "mount -o remount,bind,ro "+shellQuote(staged))
		}
		return nil
	}
	mounts := map[string]string{}
	for _, m := range r.pathMap(c) {
		mounts[m.from] = m.to
	}
	for _, m := range c.VolumeMounts {
		src, ok := mounts[strings.TrimSuffix(m.MountPath, "/")]
		if !ok {
			return "", fmt.Errorf("volume mount %s: no volume %q", m.MountPath, m.Name)
		}
		if err := bind(src, m.MountPath, m.ReadOnly); err != nil {
			return "", fmt.Errorf("volume mount %s: %w", m.MountPath, err)
		}
	}
	if err := bind(r.hostsPath(), "/etc/hosts", true); err != nil {
		return "", fmt.Errorf("hosts file: %w", err)
	}
	for _, d := range devices {
		if err := bind(d, d, false); err != nil {
			return "", fmt.Errorf("device %s: %w", d, err)
		}
	}
	proc, err := mountPoint("/proc", true)
	if err != nil {
		return "", err
	}
	lines = append(lines, "mount -t proc proc "+shellQuote(proc))
	if workDir == "" {
		workDir = "/"
	}
	lines = append(lines, fmt.Sprintf(`exec unshare --root=%s --wd=%s --setgid=%d --setuid=%d -- "$@"`,
		shellQuote(root), shellQuote(workDir), gid, uid))
	return strings.Join(lines, "\n"), nil
}

// imageCommand is what the container runs, as Kubernetes combines the container's command and
// args with the image's entrypoint and cmd; $(VAR) and all-address binds are rewritten in the
// container's words only.
func imageCommand(c corev1.Container, cfg v1.Config, env map[string]string, podIP string) ([]string, error) {
	own := func(words []string) []string {
		out := make([]string, 0, len(words))
		for _, w := range words {
			out = append(out, rewriteWord(w, env, podIP))
		}
		return out
	}
	var argv []string
	switch {
	case len(c.Command) > 0:
		argv = append(own(c.Command), own(c.Args)...)
	case len(c.Args) > 0:
		argv = append(append([]string{}, cfg.Entrypoint...), own(c.Args)...)
	default:
		argv = append(append([]string{}, cfg.Entrypoint...), cfg.Cmd...)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("the image has no entrypoint and the container no command")
	}
	return argv, nil
}
