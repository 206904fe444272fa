//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"github.com/operator-framework/api/pkg/manifests"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-operator/flink-operator/scorecard"
	"github.com/flink-operator/flink-operator/test/kubeenv"
)

// TestScorecardCustomTests runs the custom scorecard tests (scorecard/) against the local
// cluster, with the sample from the committed bundle's alm-examples, as the scorecard runner
// would run them in a pod of the namespace under test.
func TestScorecardCustomTests(t *testing.T) {
	t.Parallel()
	root, err := kubeenv.RepoRoot()
	require.NoError(t, err)
	bundle, err := manifests.GetBundleFromDir(filepath.Join(root, "bundle"))
	require.NoError(t, err)
	sample, err := scorecard.SampleFromCSV(bundle.CSV)
	require.NoError(t, err)

	const ns = "scorecard"
	require.NoError(t, env.Namespace(context.Background(), ns))
	for _, test := range scorecard.Tests {
		t.Run(test.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
			defer cancel()
			status := scorecard.Status(ctx, test, scorecard.Env{Client: env.Client, Namespace: ns, Sample: sample,
				Timeout: 3 * time.Minute, Logf: func(format string, args ...any) { logf(t, format, args...) }})
			require.Len(t, status.Results, 1)
			r := status.Results[0]
			assert.Equal(t, v1alpha3.PassState, r.State, "errors: %v\nlog:\n%s", r.Errors, r.Log)
		})
	}
}
