package native_test

import (
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/test/flinkcluster"
)

// TestProgramArgsReadByRealFlink renders job.args into the configuration file of each installed
// Flink version and reads them back with Flink's own GlobalConfiguration and
// ApplicationConfiguration.APPLICATION_ARGS, which the application entrypoint uses: the list is
// the spec's, with ';', quotes, edge whitespace and empty arguments intact.
func TestProgramArgsReadByRealFlink(t *testing.T) {
	args := []string{"--query", "SELECT a; SELECT b", "'single'", `"double"`, " edge ", "", "it's", `back\slash`,
		"[x]", "- a", "a: b", "null", "true", "1", "~", "ü€😀", "{k: v}", "&anchor", "#hash", "line\nbreak"}
	reader, err := filepath.Abs(filepath.Join("testdata", "java", "ReadProgramArgs.java"))
	require.NoError(t, err)
	for _, version := range flinkcluster.Versions(t) {
		t.Run(version, func(t *testing.T) {
			dist := flinkcluster.DistFor(t, version)
			dep := &flinkv1beta1.FlinkDeployment{}
			dep.Name, dep.Namespace = "args", "flink"
			dep.Spec.FlinkVersion = flinkVersionOf(t, version)
			dep.Spec.Job = &flinkv1beta1.JobSpec{JarURI: "local:///x.jar", Parallelism: 1, Args: args}
			if !dist.AtLeast(1, 19) {
				dep.Spec.Job.Args = args[:len(args)-2] // flink-conf.yaml carries neither '#' nor line breaks
			}
			cluster, err := native.Build(dep, flinkconf.Defaults{}, flinkconf.BuildOptions{})
			require.NoError(t, err)
			confDir := t.TempDir()
			name := flinkconf.ConfigFileName(dep.Spec.FlinkVersion)
			require.NoError(t, os.WriteFile(filepath.Join(confDir, name), []byte(cluster.ConfigMap.Data[name]), 0o644))

			classpath, err := dist.Classpath()
			require.NoError(t, err)
			cmd := exec.Command("java", append(flinkcluster.JavaModuleFlags(), "-cp", classpath, reader, confDir)...)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			var got []string
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			var end string
			for _, line := range lines {
				if strings.HasPrefix(line, "END ") {
					end = line
					break
				}
				if encoded, ok := strings.CutPrefix(line, "ARG "); ok {
					b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(encoded))
					require.NoError(t, err, line)
					got = append(got, string(b))
				}
			}
			require.Equal(t, "END "+strconv.Itoa(len(dep.Spec.Job.Args)), end, "%s", out)
			assert.Equal(t, dep.Spec.Job.Args, got, "Flink read %s", cluster.ConfigMap.Data[name])
		})
	}
}
