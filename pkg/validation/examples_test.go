package validation

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// upstreamResources reads the upstream examples and e2e resources, with the e2e jar
// placeholders replaced as upstream's CI does.
func upstreamResources(t testing.TB) (deps []*flinkv1beta1.FlinkDeployment, jobs []*flinkv1beta1.FlinkSessionJob, snaps []*flinkv1beta1.FlinkStateSnapshot) {
	t.Helper()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	base := filepath.Join(root, "test", "testdata", "upstream")
	for _, sub := range []string{"examples", filepath.Join("e2e-tests", "data")} {
		require.NoError(t, filepath.WalkDir(filepath.Join(base, sub), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") || strings.Contains(path, "kustomize") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			data = []byte(strings.ReplaceAll(string(data), "STREAMING_EXAMPLES_JAR_URL", "https://repo.example.com/flink-examples-streaming.jar"))
			dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
			for {
				var doc map[string]any
				if err := dec.Decode(&doc); err != nil {
					if errors.Is(err, io.EOF) {
						return nil
					}
					return err
				}
				if doc["apiVersion"] != "flink.apache.org/v1beta1" {
					continue
				}
				raw, _ := yaml.Marshal(doc)
				switch doc["kind"] {
				case "FlinkDeployment":
					d := &flinkv1beta1.FlinkDeployment{}
					require.NoError(t, yaml.UnmarshalStrict(raw, d), path)
					deps = append(deps, d)
				case "FlinkSessionJob":
					j := &flinkv1beta1.FlinkSessionJob{}
					require.NoError(t, yaml.UnmarshalStrict(raw, j), path)
					jobs = append(jobs, j)
				case "FlinkStateSnapshot":
					s := &flinkv1beta1.FlinkStateSnapshot{}
					require.NoError(t, yaml.UnmarshalStrict(raw, s), path)
					snaps = append(snaps, s)
				}
			}
		}))
	}
	return deps, jobs, snaps
}

// TestUpstreamResourcesAreValid: what upstream's validator accepts, ours accepts.
func TestUpstreamResourcesAreValid(t *testing.T) {
	deps, jobs, snaps := upstreamResources(t)
	require.GreaterOrEqual(t, len(deps), 20)
	require.GreaterOrEqual(t, len(jobs), 5)
	require.GreaterOrEqual(t, len(snaps), 5)
	v := &Validator{}
	byName := map[string]*flinkv1beta1.FlinkDeployment{}
	for _, d := range deps {
		assert.Empty(t, v.ValidateDeployment(d, nil).ToAggregate(), "FlinkDeployment %s", d.Name)
		if d.Spec.Job == nil {
			byName[d.Name] = d
		}
	}
	for _, j := range jobs {
		assert.Empty(t, v.ValidateSessionJob(context.Background(), j, nil, byName[j.Spec.DeploymentName]).ToAggregate(), "FlinkSessionJob %s", j.Name)
	}
	exists := func(flinkv1beta1.JobKind, string) (bool, error) { return true, nil }
	for _, s := range snaps {
		assert.Empty(t, v.ValidateSnapshot(s, exists).ToAggregate(), "FlinkStateSnapshot %s", s.Name)
	}
}
