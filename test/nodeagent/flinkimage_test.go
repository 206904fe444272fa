package nodeagent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-operator/flink-operator/test/flinkcluster"
)

// fakeVenv lays out what flinkImageLayer reads of a PyFlink virtual environment.
func fakeVenv(t *testing.T, pyflinkVersion string) string {
	t.Helper()
	venv := t.TempDir()
	pkg := filepath.Join(venv, "lib", "python3.11", "site-packages", "pyflink")
	require.NoError(t, os.MkdirAll(filepath.Join(pkg, "opt"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(venv, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(venv, "bin", "python"), nil, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "version.py"), []byte("\"\"\"doc\"\"\"\n__version__ = \""+pyflinkVersion+"\"\n"), 0o644))
	return venv
}

func TestFlinkImageLayer(t *testing.T) {
	dist := flinkcluster.Dist{Version: "1.20.3", Home: "/dists/1.20.3"}
	venv := fakeVenv(t, "1.20.3")
	opt := filepath.Join(venv, "lib", "python3.11", "site-packages", "pyflink", "opt")
	a := &Agent{opts: Options{FlinkImages: map[string]FlinkImage{
		"sql-runner:":            {Dirs: map[string]string{"/opt/flink/usrlib/": "/built/usrlib"}},
		"registry/python-job:":   {PythonEnv: venv},
		"registry/python-job:v2": {PythonEnv: fakeVenv(t, "2.3.0")},
	}}}

	l, err := a.flinkImageLayer("flink:1.20", dist)
	require.NoError(t, err)
	assert.Equal(t, imageLayer{rewrites: []pathRewrite{{"/opt/flink", "/dists/1.20.3"}}, optDir: "/dists/1.20.3/opt"}, l,
		"a plain Flink image is the distribution, without Python")

	l, err = a.flinkImageLayer("sql-runner:1.20", dist)
	require.NoError(t, err)
	rw := rewriter(l.rewrites)
	assert.Equal(t, "/built/usrlib/sql-runner.jar /dists/1.20.3/lib", rw.Replace("/opt/flink/usrlib/sql-runner.jar /opt/flink/lib"))
	assert.Empty(t, l.binDir)

	l, err = a.flinkImageLayer("registry/python-job:1.20", dist)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(venv, "bin"), l.binDir)
	assert.Equal(t, opt, l.optDir)
	assert.Equal(t, opt+"/flink-python-1.20.3.jar", rewriter(l.rewrites).Replace("/opt/flink/opt/flink-python-1.20.3.jar"),
		"the PythonDriver's jar is where the image has it")
	assert.Equal(t, "PATH="+filepath.Join(venv, "bin")+":/usr/bin", pathWith(l.binDir, "/usr/bin"))

	_, err = a.flinkImageLayer("registry/python-job:v2-1.20", dist)
	require.ErrorContains(t, err, "has PyFlink 2.3.0, the image runs Flink 1.20.3", "the longest prefix wins, and its PyFlink must match")
}

func TestPathRewritesMountsHideTheImage(t *testing.T) {
	// The pod's mounts come first; an equal path of the image loses, a longer one of the mount wins.
	rw := rewriter(append([]pathRewrite{{"/opt/flink/usrlib", "/volume"}, {"/opt/flink/usrlib/sql", "/scripts"}},
		pathRewrite{"/opt/flink", "/dist"}, pathRewrite{"/opt/flink/usrlib", "/image-usrlib"}))
	assert.Equal(t, "/volume/a.jar /scripts/x.sql /dist/lib", rw.Replace("/opt/flink/usrlib/a.jar /opt/flink/usrlib/sql/x.sql /opt/flink/lib"))
}

// TestEnabledPluginsLinksTheImagesOptJars: ENABLE_BUILT_IN_PLUGINS gives the JVM a plugins
// directory with the distribution's plugins and each named opt jar in a directory named after
// it, as the Flink image's entrypoint makes; a jar the image lacks fails the container; without
// the variable the distribution's directory is used as it is.
func TestEnabledPluginsLinksTheImagesOptJars(t *testing.T) {
	root := t.TempDir()
	distPlugins := filepath.Join(root, "dist", "plugins")
	require.NoError(t, os.MkdirAll(filepath.Join(distPlugins, "metrics-jmx"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(distPlugins, "metrics-jmx", "flink-metrics-jmx.jar"), []byte("jar"), 0o644))
	opt := filepath.Join(root, "opt")
	require.NoError(t, os.MkdirAll(opt, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(opt, "flink-s3-fs-presto-1.20.0.jar"), []byte("jar"), 0o644))
	optJar := func(name string) string { return filepath.Join(opt, name) }

	got, err := enabledPlugins(distPlugins, filepath.Join(root, "c", "plugins"), "", optJar)
	require.NoError(t, err)
	require.Equal(t, distPlugins, got, "no variable: the distribution's plugins")

	got, err = enabledPlugins(distPlugins, filepath.Join(root, "c", "plugins"), "flink-s3-fs-presto-1.20.0.jar;", optJar)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, "c", "plugins"), got)
	target, err := filepath.EvalSymlinks(filepath.Join(got, "flink-s3-fs-presto-1.20.0", "flink-s3-fs-presto-1.20.0.jar"))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(opt, "flink-s3-fs-presto-1.20.0.jar"), target)
	target, err = filepath.EvalSymlinks(filepath.Join(got, "metrics-jmx", "flink-metrics-jmx.jar"))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(distPlugins, "metrics-jmx", "flink-metrics-jmx.jar"), target, "the distribution's plugins stay")
	info, err := os.Lstat(filepath.Join(got, "metrics-jmx"))
	require.NoError(t, err)
	require.True(t, info.IsDir(), "a directory of its own, which Flink walks without following links")

	_, err = enabledPlugins(distPlugins, filepath.Join(root, "c", "plugins"), "flink-s3-fs-hadoop-1.20.0.jar", optJar)
	require.ErrorContains(t, err, "plugin flink-s3-fs-hadoop-1.20.0.jar is not in the image's /opt/flink/opt")
	_, err = enabledPlugins(distPlugins, filepath.Join(root, "c", "plugins"), "../lib/flink-dist.jar", optJar)
	require.ErrorContains(t, err, "is not a jar name of /opt/flink/opt")
}
