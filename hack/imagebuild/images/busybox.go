package images

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// BusyboxPath is where the busybox binary lives in the busybox image; every applet links to it.
const BusyboxPath = "/bin/busybox"

// BusyboxOptions say what goes into the busybox image.
type BusyboxOptions struct {
	// Binary is a static busybox: Debian's busybox-static package has one at bin/busybox.
	Binary string
	// Applets are the paths of busybox's applets relative to the root, as `busybox --list-full`
	// prints them (bin/sh, usr/bin/wget, ...); BusyboxApplets asks the binary for them.
	Applets []string
	Meta    Meta
}

// Busybox builds the image the local cluster runs busybox containers from (init containers
// that fetch a job's jar, the storage provisioner's helper pods): the static busybox with a
// symbolic link for each applet where `busybox --install` would put it, so `sh`, `wget` or
// `mkdir` in a container's command run as on Docker Hub's busybox. It runs as root by default,
// with sh as its command.
func Busybox(o BusyboxOptions) (v1.Image, error) {
	binary, err := readExecutable(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("busybox binary: %w", err)
	}
	if len(o.Applets) == 0 {
		return nil, fmt.Errorf("busybox %s: no applets to link", o.Binary)
	}
	var l layer
	l.add(file{Path: BusyboxPath, Mode: 0o755, Data: binary})
	for _, a := range o.Applets {
		p := path.Clean("/" + a)
		if p == BusyboxPath || p == "/" {
			continue
		}
		l.add(file{Path: p, Link: BusyboxPath})
	}
	l.add(file{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n")})
	l.add(file{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnobody:x:65534:\n")})
	l.add(file{Path: "/root", Mode: 0o700, Dir: true})
	l.add(file{Path: "/tmp", Mode: 0o1777, Dir: true})
	return assemble(v1.Config{
		Cmd:    []string{"sh"},
		Env:    []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		Labels: o.Meta.labels("busybox"),
	}, l)
}

// BusyboxApplets asks a busybox binary where its applets go (`busybox --list-full`): the
// applets are chosen when busybox is compiled, so the binary is the only complete list.
func BusyboxApplets(binary string) ([]string, error) {
	if err := requireStatic(binary); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, binary, "--list-full")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list-full: %w: %s", binary, err, stderr.String())
	}
	applets := strings.Fields(string(out))
	if len(applets) == 0 {
		return nil, fmt.Errorf("%s --list-full listed no applets", binary)
	}
	return applets, nil
}
