package nodeagent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFlinkRootScriptStagesOnlyTheWayToTheVolumes(t *testing.T) {
	host := t.TempDir()
	for _, d := range []string{"usr/bin", "opt/other", "proc", "tmp"} {
		require.NoError(t, os.MkdirAll(filepath.Join(host, d), 0o755))
	}
	require.NoError(t, os.Symlink("usr/bin", filepath.Join(host, "bin")))
	require.NoError(t, os.WriteFile(filepath.Join(host, "marker"), nil, 0o644))
	vol, usrlib, scripts := t.TempDir(), t.TempDir(), t.TempDir()
	conf := filepath.Join(t.TempDir(), "x.properties")
	require.NoError(t, os.WriteFile(conf, []byte("a=b"), 0o644))

	root := "/r"
	script, err := flinkRootScript(host, root, "/wd", []bindMount{
		{src: scripts, target: "/opt/flink/usrlib/sql"},
		{src: vol, target: "/opt/flink/volume"},
		{src: usrlib, target: "/opt/flink/usrlib"},
		{src: conf, target: "/opt/flink/conf/x.properties", readOnly: true},
	})
	require.NoError(t, err)
	lines := strings.Split(script, "\n")
	q := shellQuote
	for _, want := range []string{
		"mkdir -p " + q("/r/usr"), "mount --rbind " + q(host+"/usr") + " " + q("/r/usr"),
		"mount --rbind " + q(host+"/tmp") + " " + q("/r/tmp"),
		"ln -s " + q("usr/bin") + " " + q("/r/bin"),
		"mount --bind " + q(host+"/marker") + " " + q("/r/marker"),
		"mkdir -p " + q("/r/opt"), "mount --rbind " + q(host+"/opt/other") + " " + q("/r/opt/other"),
		"mkdir -p " + q("/r/proc"),
	} {
		assert.Contains(t, lines, want)
	}
	for _, unwanted := range []string{"mount --rbind " + q(host+"/opt") + " " + q("/r/opt"), "mount --rbind " + q(host+"/proc") + " " + q("/r/proc")} {
		assert.NotContains(t, lines, unwanted, "a directory on the way to a volume is staged, /proc mounted afresh")
	}
	// The volumes after the machine's entries, a volume before the volumes mounted in it.
	tail := strings.Join(lines[len(lines)-12:], "\n")
	assert.Equal(t, strings.Join([]string{
		"mkdir -p " + q("/r/opt/flink/conf"), "[ -e " + q("/r/opt/flink/conf/x.properties") + " ] || : > " + q("/r/opt/flink/conf/x.properties"),
		"mount --bind " + q(conf) + " " + q("/r/opt/flink/conf/x.properties"),
		"mount -o remount,bind,ro " + q("/r/opt/flink/conf/x.properties"),
		"mkdir -p " + q("/r/opt/flink/usrlib"), "mount --bind " + q(usrlib) + " " + q("/r/opt/flink/usrlib"),
		"mkdir -p " + q("/r/opt/flink/usrlib/sql"), "mount --bind " + q(scripts) + " " + q("/r/opt/flink/usrlib/sql"),
		"mkdir -p " + q("/r/opt/flink/volume"), "mount --bind " + q(vol) + " " + q("/r/opt/flink/volume"),
		"mount -t proc proc " + q("/r/proc"),
		`exec unshare --root=` + q("/r") + ` --wd=` + q("/wd") + ` -- "$@"`,
	}, "\n"), tail)
}

func TestFlinkRootScriptRefusesAVolumeBehindAFile(t *testing.T) {
	host := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(host, "opt"), nil, 0o644))
	_, err := flinkRootScript(host, "/r", "/", []bindMount{{src: t.TempDir(), target: "/opt/flink/volume"}})
	require.ErrorContains(t, err, "/opt leads to a volume's mount path but is not a directory")
}

// TestFlinkRootShowsVolumesAtTheirMountPaths runs the script for real: in the root it builds,
// a program sees the volume at its mount path, the machine's files where they are, and its
// own PID namespace in /proc; the machine gets no /opt/flink.
func TestFlinkRootShowsVolumesAtTheirMountPaths(t *testing.T) {
	if err := pidNamespaces(); err != nil {
		t.Skipf("no namespaces here: %v", err)
	}
	_, statErr := os.Stat(flinkImageDir)
	hadImageDir := statErr == nil
	vol := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(vol, "hello"), []byte("from the volume\n"), 0o644))
	machine := filepath.Join(t.TempDir(), "machine-file")
	require.NoError(t, os.WriteFile(machine, []byte("from the machine\n"), 0o644))
	wd := t.TempDir()
	root := filepath.Join(t.TempDir(), "root")

	script, err := flinkRootScript("/", root, wd, []bindMount{{src: vol, target: "/opt/flink/volume", readOnly: true}})
	require.NoError(t, err)
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--",
		"/bin/sh", "-ec", script, "sh", "/bin/sh", "-c",
		`cat /opt/flink/volume/hello "$1"; pwd; echo $$; touch /opt/flink/volume/x 2>/dev/null || echo read-only`, "sh", machine)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "from the volume\nfrom the machine\n"+wd+"\n1\nread-only\n", string(out))
	if !hadImageDir {
		assert.NoDirExists(t, flinkImageDir, "the mount path exists in the container's root only")
	}
}
