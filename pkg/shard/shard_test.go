package shard

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
)

func TestParse(t *testing.T) {
	for _, in := range []string{"", "  "} {
		sel, err := Parse(in)
		require.NoError(t, err)
		assert.Nil(t, sel, "empty selects everything")
	}
	sel, err := Parse(" shard in (a,b), !canary ")
	require.NoError(t, err)
	assert.True(t, sel.Matches(labels.Set{"shard": "a"}))
	assert.False(t, sel.Matches(labels.Set{"shard": "c"}))
	assert.False(t, sel.Matches(labels.Set{"shard": "a", "canary": "true"}))

	for _, bad := range []string{"shard=(a", "shard in a", "=a", "shard==a==b", "sh ard=a"} {
		_, err := Parse(bad)
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "kubernetes.operator.label.selector: ")
		assert.Contains(t, err.Error(), "shard in (a,b)", "the error shows the syntax allowed")
	}
}

// TestLabels: a child carrying Labels(sel, parent) is selected exactly when its parent is,
// whatever the selector's operators; nothing else of the parent is copied.
func TestLabels(t *testing.T) {
	parents := []map[string]string{
		{"shard": "a", "app.kubernetes.io/instance": "argo-app"},
		{"shard": "b", "tier": "gold"},
		{"tier": "gold"},
		{},
		{"shard": "a", "canary": "true"},
	}
	for _, s := range []string{"shard=a", "shard!=a", "shard in (a,b)", "shard notin (a)", "shard", "!shard", "shard=a,!canary", "tier=gold,shard"} {
		sel, err := Parse(s)
		require.NoError(t, err)
		for _, p := range parents {
			child := Labels(sel, p)
			assert.Equal(t, sel.Matches(labels.Set(p)), sel.Matches(labels.Set(child)), "selector %q, parent %v, child %v", s, p, child)
			assert.NotContains(t, child, "app.kubernetes.io/instance", "only the selector's keys are copied")
		}
	}
	assert.Nil(t, Labels(nil, parents[0]), "no selector: nothing to copy")
}
