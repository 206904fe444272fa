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
