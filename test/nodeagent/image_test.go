package nodeagent

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// tarOf writes the headers (with data for regular files) as a tar stream.
func tarOf(t *testing.T, entries ...tar.Header) *tar.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		data := []byte("content of " + h.Name)
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(data))
		}
		require.NoError(t, tw.WriteHeader(&h))
		if h.Typeflag == tar.TypeReg {
			_, err := tw.Write(data)
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	return tar.NewReader(&buf)
}

func TestExtractStaysInRoot(t *testing.T) {
	outside := t.TempDir()
	tests := []struct {
		name    string
		entries []tar.Header
		err     string
	}{
		{name: "dot-dot names are cleaned against the root", entries: []tar.Header{
			{Name: "../../" + filepath.Base(outside) + "/escaped", Typeflag: tar.TypeReg, Mode: 0o644}}},
		{name: "no file through a symbolic link to the machine", entries: []tar.Header{
			{Name: "etc", Typeflag: tar.TypeSymlink, Linkname: outside},
			{Name: "etc/escaped", Typeflag: tar.TypeReg, Mode: 0o644}}, err: "/etc is a symbolic link"},
		{name: "no hard link through a symbolic link", entries: []tar.Header{
			{Name: "host", Typeflag: tar.TypeSymlink, Linkname: outside},
			{Name: "stolen", Typeflag: tar.TypeLink, Linkname: "host/secret"}}, err: "/host is a symbolic link"},
		{name: "no directory over a file", entries: []tar.Header{
			{Name: "a", Typeflag: tar.TypeReg, Mode: 0o644},
			{Name: "a/b", Typeflag: tar.TypeReg, Mode: 0o644}}, err: "/a is not a directory"},
	}
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			err := extract(tarOf(t, tt.entries...), root)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
			} else {
				require.NoError(t, err)
			}
			entries, err := os.ReadDir(outside)
			require.NoError(t, err)
			require.Len(t, entries, 1, "nothing written outside the root")
		})
	}
	t.Run("dot-dot entry lands inside", func(t *testing.T) {
		root := t.TempDir()
		require.NoError(t, extract(tarOf(t, tar.Header{Name: "../x/escaped", Typeflag: tar.TypeReg, Mode: 0o644}), root))
		assert.FileExists(t, filepath.Join(root, "x", "escaped"))
	})
	t.Run("setuid dropped, sticky kept", func(t *testing.T) {
		root := t.TempDir()
		require.NoError(t, extract(tarOf(t,
			tar.Header{Name: "bin/su", Typeflag: tar.TypeReg, Mode: 0o4755},
			tar.Header{Name: "tmp", Typeflag: tar.TypeDir, Mode: 0o1777}), root))
		st, err := os.Stat(filepath.Join(root, "bin", "su"))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o755), st.Mode())
		st, err = os.Stat(filepath.Join(root, "tmp"))
		require.NoError(t, err)
		assert.Equal(t, os.ModeDir|os.ModeSticky|0o777, st.Mode())
	})
}

func TestInRoot(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "run"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "var"), 0o755))
	require.NoError(t, os.Symlink("/run", filepath.Join(root, "var", "run")))
	require.NoError(t, os.Symlink("/", filepath.Join(root, "up")))
	require.NoError(t, os.Symlink("../../../..", filepath.Join(root, "run", "rel")))
	require.NoError(t, os.Symlink("loop", filepath.Join(root, "loop")))
	for p, want := range map[string]string{
		"/var/run/secrets/token": "/run/secrets/token", // an image's /var/run -> /run, as many have
		"/up/etc/passwd":         "/etc/passwd",        // an absolute link means the image's root
		"/run/rel/etc":           "/etc",               // .. stops at the root
		"/../../etc":             "/etc",
	} {
		got, err := inRoot(root, p)
		require.NoError(t, err, p)
		assert.Equal(t, filepath.Join(root, want), got, p)
	}
	_, err := inRoot(root, "/loop/x")
	assert.ErrorContains(t, err, "too many levels of symbolic links")
}

func TestImageCommand(t *testing.T) {
	cfg := v1.Config{Entrypoint: []string{"/manager"}, Cmd: []string{"--default"}}
	env := map[string]string{"NS": "jobs"}
	tests := []struct {
		name string
		c    corev1.Container
		want []string
	}{
		{name: "image entrypoint and cmd", want: []string{"/manager", "--default"}},
		{name: "args replace cmd", c: corev1.Container{Args: []string{"--ns=$(NS)", "--probe=:8081"}},
			want: []string{"/manager", "--ns=jobs", "--probe=127.1.0.9:8081"}},
		{name: "command replaces entrypoint and cmd", c: corev1.Container{Command: []string{"/manager"}, Args: []string{"--leader-elect"}},
			want: []string{"/manager", "--leader-elect"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := imageCommand(tt.c, cfg, env, "127.1.0.9")
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	_, err := imageCommand(corev1.Container{}, v1.Config{}, env, "127.1.0.9")
	assert.ErrorContains(t, err, "no entrypoint")
}

func TestImageUser(t *testing.T) {
	pod := &corev1.Pod{}
	uid, gid, err := imageUser(pod, corev1.Container{}, v1.Config{User: "65532:65532"})
	require.NoError(t, err)
	assert.Equal(t, []int64{65532, 65532}, []int64{uid, gid})
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}
	uid, gid, err = imageUser(pod, corev1.Container{SecurityContext: &corev1.SecurityContext{RunAsGroup: ptr.To[int64](2000)}}, v1.Config{User: "65532:65532"})
	require.NoError(t, err)
	assert.Equal(t, []int64{1000, 2000}, []int64{uid, gid}, "the security contexts win over the image")
	_, _, err = imageUser(&corev1.Pod{}, corev1.Container{}, v1.Config{User: "nonroot"})
	assert.ErrorContains(t, err, "only numeric uid[:gid]")
	uid, gid, err = imageUser(&corev1.Pod{}, corev1.Container{}, v1.Config{})
	require.NoError(t, err)
	assert.Equal(t, []int64{0, 0}, []int64{uid, gid})
}
