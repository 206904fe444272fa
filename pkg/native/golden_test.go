package native

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// update rewrites the golden files: go test ./pkg/native -run Golden -update (make golden).
var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestGolden renders every upstream example FlinkDeployment, and a matrix of modes and Flink
// versions over the basic application and session examples, and compares the objects with
// the reviewed files in testdata/golden.
func TestGolden(t *testing.T) {
	cases := map[string]*flinkv1beta1.FlinkDeployment{}
	for file, deps := range upstreamDeployments(t) {
		for _, dep := range deps {
			cases[goldenName(file, dep.Name)] = dep
		}
	}
	require.GreaterOrEqual(t, len(cases), 20, "upstream FlinkDeployments found")

	matrixBase := map[string]string{"application": "examples/basic.yaml", "session": "examples/basic-session-deployment-only.yaml"}
	all := upstreamDeployments(t)
	for kind, file := range matrixBase {
		require.NotEmpty(t, all[file], file)
		for _, mode := range []flinkv1beta1.KubernetesDeploymentMode{flinkv1beta1.DeploymentModeNative, flinkv1beta1.DeploymentModeStandalone} {
			for _, v := range []flinkv1beta1.FlinkVersion{flinkv1beta1.FlinkVersion1_17, flinkv1beta1.FlinkVersion1_20, flinkv1beta1.FlinkVersion2_0} {
				dep := all[file][0].DeepCopy()
				dep.Spec.Mode, dep.Spec.FlinkVersion = mode, v
				cases[fmt.Sprintf("matrix__%s-%s-%s", kind, mode, v)] = dep
			}
		}
	}

	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			dep := cases[name]
			dep.Namespace = "flink"
			dep.Generation = 1
			// Fixed ids: Build would otherwise pick a random result store per run.
			opts := flinkconf.BuildOptions{ResultStoreID: "00000000-0000-4000-8000-000000000001"}
			if dep.Spec.Job != nil {
				opts.JobID = "0000000000000000000000000000abcd"
			}
			cluster, err := Build(dep, flinkconf.Defaults{}, opts)
			require.NoError(t, err)
			got := renderObjects(t, cluster)
			path := filepath.Join("testdata", "golden", name+".yaml")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, got, 0o644))
				return
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "missing golden file; run `make golden` and review it")
			require.Equal(t, string(want), string(got), "objects differ from %s; run `make golden` and review the diff", path)
		})
	}
}

func renderObjects(t *testing.T, c *Cluster) []byte {
	t.Helper()
	var b bytes.Buffer
	for i, obj := range c.Objects() {
		out, err := yaml.Marshal(obj)
		require.NoError(t, err)
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(out)
	}
	return b.Bytes()
}

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

func goldenName(file, name string) string {
	return unsafeChars.ReplaceAllString(strings.TrimSuffix(file, ".yaml"), "_") + "__" + name
}

// upstreamDeployments reads the FlinkDeployments of the upstream examples and e2e data, by file.
func upstreamDeployments(t *testing.T) map[string][]*flinkv1beta1.FlinkDeployment {
	t.Helper()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	base := filepath.Join(root, "test", "testdata", "upstream")
	out := map[string][]*flinkv1beta1.FlinkDeployment{}
	for _, sub := range []string{"examples", filepath.Join("e2e-tests", "data")} {
		err := filepath.WalkDir(filepath.Join(base, sub), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			rel, _ := filepath.Rel(base, path)
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
			for {
				var doc map[string]any
				if err := dec.Decode(&doc); err != nil {
					if errors.Is(err, io.EOF) {
						break
					}
					return fmt.Errorf("%s: %w", rel, err)
				}
				if doc["kind"] != "FlinkDeployment" || doc["apiVersion"] != "flink.apache.org/v1beta1" {
					continue
				}
				raw, _ := yaml.Marshal(doc)
				dep := &flinkv1beta1.FlinkDeployment{}
				if err := yaml.UnmarshalStrict(raw, dep); err != nil {
					return fmt.Errorf("%s: %w", rel, err)
				}
				out[rel] = append(out[rel], dep)
			}
			return nil
		})
		require.NoError(t, err)
	}
	return out
}
