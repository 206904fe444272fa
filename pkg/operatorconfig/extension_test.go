package operatorconfig

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A malformed extension endpoint list refuses the whole operator configuration (the watcher
// keeps the previous one) instead of leaving a validator out unnoticed.
func TestBuildRefusesMalformedExtensions(t *testing.T) {
	base := Settings{ReconcileInterval: time.Minute, ProgressCheckInterval: 10 * time.Second, RESTTimeout: 10 * time.Second}
	_, err := Build(map[string]string{"kubernetes.operator.extension.validators": `[{name: quota, url: "http://policy.example.com/"}]`}, base, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kubernetes.operator.extension.validators[0].url: plain http only")

	_, err = Build(map[string]string{"kubernetes.operator.extension.validators": `[{name: quota, url: "https://policy.example.com/"}]`}, base, nil)
	assert.NoError(t, err)
}
