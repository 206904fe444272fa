// Package upstreame2e runs the Apache Flink Kubernetes Operator's own e2e shell scripts
// (upstream/, copied unchanged from its repository) against this operator on the local cluster.
// This file says how each script is run: the example jar its manifests download, the operator
// install upstream's CI gives it, and the edits upstream's CI makes to the manifests, applied to
// a copy. The runner is upstream_test.go (build tag e2e); README.md lists every difference from
// upstream's CI.
package upstreame2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// The example jars STREAMING_EXAMPLES_JAR_URL names (make upstream-e2e-jars, bin/upstream-e2e/jars):
// upstream's CI names flink-examples-streaming_2.12 1.14.4 for Flink 1.x and
// flink-examples-streaming 1.20.4 for the batch test; these are the nearest versions Maven
// Central serves here.
const (
	StreamingJar = "flink-examples-streaming_2.12-1.15.3.jar"
	BatchJar     = "flink-examples-streaming-1.20.0.jar"
)

// Flink is the Flink the manifests run, in upstream CI's terms (its flink-version input v1_20
// makes the image flink:1.20), and the mode (its mode input).
const (
	FlinkVersion = "v1_20"
	FlinkImage   = "flink:1.20"
	Mode         = "native"
)

// Script is one of upstream's e2e scripts as the runner runs it.
type Script struct {
	// Name is the script's file name in upstream/.
	Name string
	// Jar is the example jar (a file name in bin/upstream-e2e/jars) its manifests download.
	Jar string
	// OperatorReplicas is how many operator pods upstream's CI installs for it: two, with leader
	// election, for the operator HA test; the chart's one otherwise.
	OperatorReplicas int32
	// ConfigKey is the key of the operator ConfigMap that holds the operator's configuration:
	// upstream's CI renames the chart's flink-conf.yaml to config.yaml for test_dynamic_config.sh.
	ConfigKey string
}

// Scripts are the scripts the runner runs, in order. test_logback_logging.sh is left out: it
// checks the Java operator's logging framework, which this operator does not have.
func Scripts() []Script {
	s := func(name string) Script {
		return Script{Name: name, Jar: StreamingJar, OperatorReplicas: 1, ConfigKey: "flink-conf.yaml"}
	}
	batch := s("test_batch_job.sh")
	batch.Jar = BatchJar
	dynamic := s("test_dynamic_config.sh")
	dynamic.ConfigKey = "config.yaml"
	ha := s("test_flink_operator_ha.sh")
	ha.OperatorReplicas = 2
	return []Script{
		s("test_application_operations.sh"),
		s("test_sessionjob_operations.sh"),
		s("test_multi_sessionjob.sh"),
		batch,
		s("test_snapshot.sh"),
		s("test_application_kubernetes_ha.sh"),
		s("test_sessionjob_kubernetes_ha.sh"),
		s("test_autoscaler.sh"),
		s("test_bluegreen_ingress_rotation.sh"),
		s("test_bluegreen_laststate.sh"),
		s("test_bluegreen_stateless.sh"),
		dynamic,
		s("test_dynamic_flink_conf.sh"),
		ha,
	}
}

// The substitutions upstream's CI makes in e2e-tests/data/*.yaml with sed before running a
// script, each on the first match of every line, in this order.
var (
	imageLine        = regexp.MustCompile(`image: flink:.*`)
	flinkVersionLine = regexp.MustCompile(`flinkVersion: .*`)
	modeLine         = regexp.MustCompile(`mode: .*`)
	jarPlaceholder   = regexp.MustCompile(`STREAMING_EXAMPLES_JAR_URL`)
)

// Localize is what upstream's CI's sed makes of a data file: the Flink image, version and mode
// it runs, and the example jar's URL in place of STREAMING_EXAMPLES_JAR_URL.
func Localize(data, jarURL string) string {
	subs := []struct {
		re   *regexp.Regexp
		with string
	}{
		{imageLine, "image: " + FlinkImage},
		{flinkVersionLine, "flinkVersion: " + FlinkVersion},
		{modeLine, "mode: " + Mode},
		{jarPlaceholder, jarURL},
	}
	lines := strings.SplitAfter(data, "\n")
	for i, line := range lines {
		for _, s := range subs {
			// Like sed's s///: the first match only (".*" stops at the newline).
			if loc := s.re.FindStringIndex(line); loc != nil {
				line = line[:loc[0]] + s.with + line[loc[1]:]
			}
		}
		lines[i] = line
	}
	return strings.Join(lines, "")
}

// Prepare writes the tree a script runs in under dir: e2e-tests/ holding upstream's scripts as
// they are and its data files localized for jarURL, as upstream's CI runs them from its
// checkout.
func Prepare(upstream, dir, jarURL string) error {
	return filepath.WalkDir(upstream, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(upstream, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dir, "e2e-tests", rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if filepath.Base(filepath.Dir(path)) == "data" && strings.HasSuffix(path, ".yaml") {
			data = []byte(Localize(string(data), jarURL))
		}
		return os.WriteFile(to, data, 0o644)
	})
}

// WriteTools puts on dir what the scripts call in place of what upstream's CI machine has:
// kubectl and mikefarah's yq (the paths given), and a minikube that answers `minikube ip` with
// the Ingress controller's address (the scripts curl Flink's REST API through it) and
// `minikube status` with success; anything else it refuses, so a script that needs more of
// minikube says so.
func WriteTools(dir, kubectl, yq, ingressIP string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, target := range map[string]string{"kubectl": kubectl, "yq": yq} {
		if _, err := os.Stat(target); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	minikube := fmt.Sprintf(`#!/bin/sh
# minikube as upstream's e2e scripts use it, on the local cluster (test/upstream-e2e).
case "$1" in
ip) echo %s ;;
status) echo "host: Running"; echo "kubelet: Running"; echo "apiserver: Running" ;;
*) echo "minikube $*: not available on the local cluster" >&2; exit 1 ;;
esac
`, ingressIP)
	return os.WriteFile(filepath.Join(dir, "minikube"), []byte(minikube), 0o755)
}
