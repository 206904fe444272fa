package images

import (
	"archive/tar"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeBusybox builds a static program that answers --list-full as busybox does, with three
// applets, one of them busybox itself.
func fakeBusybox(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := `package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--list-full" {
		fmt.Print("bin/busybox\nbin/sh\nusr/bin/wget\n")
		return
	}
	os.Exit(1)
}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644))
	out := filepath.Join(dir, "busybox")
	cmd := exec.CommandContext(context.Background(), "go", "build", "-o", out, "main.go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "build the stand-in busybox: %s", b)
	return out
}

// The busybox image is the binary with a link per applet it lists, runs sh as root by
// default, and builds to the same digest twice.
func TestBusyboxImage(t *testing.T) {
	binary := fakeBusybox(t)
	applets, err := BusyboxApplets(binary)
	require.NoError(t, err)
	assert.Equal(t, []string{"bin/busybox", "bin/sh", "usr/bin/wget"}, applets)

	img, err := Busybox(BusyboxOptions{Binary: binary, Applets: applets})
	require.NoError(t, err)
	again, err := Busybox(BusyboxOptions{Binary: binary, Applets: applets})
	require.NoError(t, err)
	assertSameDigest(t, img, again)

	fs := files(t, img)
	data, err := os.ReadFile(binary)
	require.NoError(t, err)
	bb := fs[BusyboxPath]
	require.NotNil(t, bb.hdr, "the image holds %s", BusyboxPath)
	assert.Equal(t, byte(tar.TypeReg), bb.hdr.Typeflag)
	assert.Equal(t, int64(0o755), bb.hdr.Mode)
	assert.Equal(t, data, bb.data)
	for _, applet := range []string{"/bin/sh", "/usr/bin/wget"} {
		e := fs[applet]
		require.NotNil(t, e.hdr, "applet %s", applet)
		assert.Equal(t, byte(tar.TypeSymlink), e.hdr.Typeflag, applet)
		assert.Equal(t, BusyboxPath, e.hdr.Linkname, applet)
	}
	assert.Equal(t, int64(0o1777), fs["/tmp"].hdr.Mode)

	cf, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, []string{"sh"}, cf.Config.Cmd)
	assert.Empty(t, cf.Config.User, "root, as Docker Hub's busybox")
	assert.Empty(t, cf.Config.Entrypoint)
}

func TestBusyboxNeedsAStaticBinaryAndApplets(t *testing.T) {
	// /bin/sh is a dynamically linked program, as in TestDynamicBinaryRefused.
	_, err := BusyboxApplets("/bin/sh")
	require.ErrorContains(t, err, "dynamically linked")
	_, err = Busybox(BusyboxOptions{Binary: fakeBusybox(t)})
	require.ErrorContains(t, err, "no applets")
}
