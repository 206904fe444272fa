package monitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
)

// PromtoolPackage is built at the Makefile's PROMTOOL_VERSION.
const PromtoolPackage = "github.com/prometheus/prometheus/cmd/promtool"

var promtoolVersion = regexp.MustCompile(`(?m)^PROMTOOL_VERSION \?= (\S+)$`)

// Promtool returns the promtool binary: $PROMTOOL (set by make), else bin/promtool-<version>
// (the Makefile's cached build), else one built now with go install into dir.
func Promtool(ctx context.Context, root, dir string) (string, error) {
	if p := os.Getenv("PROMTOOL"); p != "" {
		return p, nil
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		return "", err
	}
	m := promtoolVersion.FindSubmatch(makefile)
	if m == nil {
		return "", fmt.Errorf("no PROMTOOL_VERSION in the Makefile")
	}
	version := string(m[1])
	if cached := filepath.Join(root, "bin", "promtool-"+version); fileExists(cached) {
		return cached, nil
	}
	cmd := exec.CommandContext(ctx, "go", "install", PromtoolPackage+"@"+version)
	cmd.Env = append(os.Environ(), "GOBIN="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install %s@%s: %w\n%s", PromtoolPackage, version, err, out)
	}
	return filepath.Join(dir, "promtool"), nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// MonitoringCRDs returns the directory of the Prometheus Operator CRDs pinned by
// hack/tools/monitoring: $MONITORING_CRDS (set by make), else the module's, downloaded if needed.
func MonitoringCRDs(ctx context.Context, root string) (string, error) {
	if d := os.Getenv("MONITORING_CRDS"); d != "" {
		return d, nil
	}
	// go mod download (not go list -m, whose Dir is empty until something else downloaded
	// the module: a fresh machine's CI failed there) fetches the pinned module if needed.
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "github.com/prometheus-operator/prometheus-operator")
	cmd.Dir = filepath.Join(root, "hack", "tools", "monitoring")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download the Prometheus Operator module in %s: %w\n%s", cmd.Dir, err, out)
	}
	var module struct{ Dir string }
	if err := json.Unmarshal(out, &module); err != nil || module.Dir == "" {
		return "", fmt.Errorf("go mod download in %s: no module directory in %q", cmd.Dir, out)
	}
	dir := filepath.Join(module.Dir, "example", "prometheus-operator-crd")
	if _, err := os.Stat(dir); err != nil {
		return "", err
	}
	return dir, nil
}
