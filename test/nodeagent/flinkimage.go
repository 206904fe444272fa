package nodeagent

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/flink-operator/flink-operator/test/flinkcluster"
)

// FlinkImage is a job image built on the Flink image (FROM flink:<version>), as users build
// one per job, such as upstream's SQL runner and Python examples: its containers run the
// distribution its tag names, as any Flink image's do, plus what the image adds. The agent does
// not run Flink containers from image file systems, so what the image adds is given as local
// directories and a Python environment.
type FlinkImage struct {
	// Dirs maps a directory the image adds, such as /opt/flink/usrlib, to the local directory
	// holding its files. A volume mounted at or under it wins, as a mount hides the image's files.
	Dirs map[string]string
	// PythonEnv, when set, is a Python virtual environment with the distribution's version of
	// PyFlink (PyPI's apache-flink) installed, as a PyFlink image pip-installs it: its python
	// is first on the PATH (the JobManager's PythonDriver runs the job's script with it, the
	// TaskManagers' Python UDF workers too), and its pyflink/opt is /opt/flink/opt, where the
	// image has opt/flink-python-<version>.jar (the distribution installed here is lib/, bin/
	// and plugins/ only; PyPI's apache-flink-libraries carries the same opt/ jars).
	PythonEnv string
}

// imageLayer is how a Flink container's image is laid out on this machine.
type imageLayer struct {
	rewrites []pathRewrite // container paths of the image
	binDir   string        // first on the PATH, when set
	optDir   string        // FLINK_OPT_DIR
}

// flinkImageLayer lays out a Flink container's image: the distribution at /opt/flink, and
// what a FlinkImage (the longest matching Options.FlinkImages prefix) adds.
func (a *Agent) flinkImageLayer(image string, dist flinkcluster.Dist) (imageLayer, error) {
	l := imageLayer{rewrites: []pathRewrite{{from: "/opt/flink", to: dist.Home}}, optDir: filepath.Join(dist.Home, "opt")}
	best := ""
	for prefix := range a.opts.FlinkImages {
		if strings.HasPrefix(image, prefix) && len(prefix) > len(best) {
			best = prefix
		}
	}
	if best == "" {
		return l, nil
	}
	img := a.opts.FlinkImages[best]
	for from, to := range img.Dirs {
		l.rewrites = append(l.rewrites, pathRewrite{from: path.Clean("/" + from), to: to})
	}
	if img.PythonEnv == "" {
		return l, nil
	}
	opt, err := pyflinkOpt(img.PythonEnv, dist.Version)
	if err != nil {
		return imageLayer{}, fmt.Errorf("image %s: %w", image, err)
	}
	l.rewrites = append(l.rewrites, pathRewrite{from: "/opt/flink/opt", to: opt})
	l.binDir, l.optDir = filepath.Join(img.PythonEnv, "bin"), opt
	return l, nil
}

var pyflinkVersion = regexp.MustCompile(`(?m)^__version__\s*=\s*["']([^"']+)["']`)

// pyflinkOpt checks that a virtual environment has python and the PyFlink of a Flink version,
// and returns its pyflink/opt directory.
func pyflinkOpt(venv, version string) (string, error) {
	if _, err := os.Stat(filepath.Join(venv, "bin", "python")); err != nil {
		return "", fmt.Errorf("python environment %s: %w (run `make examples`)", venv, err)
	}
	pkg, err := filepath.Glob(filepath.Join(venv, "lib", "python*", "site-packages", "pyflink"))
	if err != nil || len(pkg) != 1 {
		return "", fmt.Errorf("python environment %s: want one lib/python*/site-packages/pyflink, found %v", venv, pkg)
	}
	data, err := os.ReadFile(filepath.Join(pkg[0], "version.py"))
	if err != nil {
		return "", fmt.Errorf("python environment %s: %w", venv, err)
	}
	found := "no version"
	if m := pyflinkVersion.FindSubmatch(data); m != nil {
		found = string(m[1])
	}
	if found != version {
		return "", fmt.Errorf("python environment %s has PyFlink %s, the image runs Flink %s", venv, found, version)
	}
	return filepath.Join(pkg[0], "opt"), nil
}

// pathWith is a PATH entry with dir first.
func pathWith(dir, path string) string {
	if dir == "" {
		return "PATH=" + path
	}
	if path == "" {
		return "PATH=" + dir
	}
	return "PATH=" + dir + string(os.PathListSeparator) + path
}

// enabledPlugins is the plugins directory a Flink container's JVM reads (FLINK_PLUGINS_DIR):
// the distribution's, or, when the container sets ENABLE_BUILT_IN_PLUGINS, a directory made for
// the container with the distribution's plugins plus each named jar of the image's opt
// directory in a plugin directory of its own, named after the jar without ".jar". That is
// what the Flink image's entrypoint does with the variable (a ';'-separated list of jar names,
// such as flink-s3-fs-presto-1.20.0.jar), and it fails the container the same way when a named
// jar is not in the image. optJar says where a jar of /opt/flink/opt is on this machine.
func enabledPlugins(distPlugins, dir, enable string, optJar func(name string) string) (string, error) {
	if strings.TrimSpace(enable) == "" {
		return distPlugins, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	entries, err := os.ReadDir(distPlugins)
	if err != nil && !os.IsNotExist(err) {
		return "", err
	}
	// Directories of links to the distribution's plugin jars, not links to its directories:
	// Flink walks each plugin directory without following links, and would find a linked
	// directory empty; a linked jar it reads, as the image's entrypoint links them.
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		jars, err := os.ReadDir(filepath.Join(distPlugins, e.Name()))
		if err != nil {
			return "", err
		}
		if err := os.MkdirAll(filepath.Join(dir, e.Name()), 0o755); err != nil {
			return "", err
		}
		for _, j := range jars {
			if err := os.Symlink(filepath.Join(distPlugins, e.Name(), j.Name()), filepath.Join(dir, e.Name(), j.Name())); err != nil {
				return "", err
			}
		}
	}
	for _, jar := range strings.Split(enable, ";") {
		jar = strings.TrimSpace(jar)
		if jar == "" {
			continue
		}
		if strings.ContainsRune(jar, '/') || !strings.HasSuffix(jar, ".jar") {
			return "", fmt.Errorf("ENABLE_BUILT_IN_PLUGINS: %q is not a jar name of /opt/flink/opt", jar)
		}
		src := optJar(jar)
		if _, err := os.Stat(src); err != nil {
			return "", fmt.Errorf("ENABLE_BUILT_IN_PLUGINS: plugin %s is not in the image's /opt/flink/opt: %w", jar, err)
		}
		plugin := filepath.Join(dir, strings.TrimSuffix(jar, ".jar"))
		if err := os.MkdirAll(plugin, 0o755); err != nil {
			return "", err
		}
		if err := os.Symlink(src, filepath.Join(plugin, jar)); err != nil && !os.IsExist(err) {
			return "", err
		}
	}
	return dir, nil
}
