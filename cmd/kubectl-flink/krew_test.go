package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// krewPlugin is the part of krew's Plugin manifest (krew.googlecontainertools.github.com/v1alpha2)
// this repository writes; unknown fields are refused, so a misspelt one fails the test.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Caveats          string `json:"caveats"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string     `json:"uri"`
			SHA256 string     `json:"sha256"`
			Bin    string     `json:"bin"`
			Files  []krewFile `json:"files"`
		} `json:"platforms"`
	} `json:"spec"`
}

// krewFile is one file krew copies out of a platform's archive.
type krewFile struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// TestKrewManifest: hack/krew/flink.yaml is a krew Plugin named flink for linux and darwin on
// amd64 and arm64, each pointing at the archive `make kubectl-flink-dist` builds for it, of
// this release's version, with a sha256 of the right form (filled in by the release) and the
// binary krew links as kubectl-flink.
func TestKrewManifest(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "hack", "krew", "flink.yaml"))
	require.NoError(t, err)
	var p krewPlugin
	require.NoError(t, yaml.UnmarshalStrict(raw, &p))
	assert.Equal(t, "krew.googlecontainertools.github.com/v1alpha2", p.APIVersion)
	assert.Equal(t, "Plugin", p.Kind)
	assert.Equal(t, "flink", p.Metadata.Name, "kubectl runs it as kubectl flink")
	assert.NotEmpty(t, p.Spec.ShortDescription)
	assert.LessOrEqual(t, len(p.Spec.ShortDescription), 60, "krew's index limits shortDescription")

	version := makefileVersion(t)
	assert.Equal(t, "v"+version, p.Spec.Version, "the manifest is of the Makefile's VERSION")
	var platforms []string
	for _, pl := range p.Spec.Platforms {
		os, arch := pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"]
		platforms = append(platforms, os+"/"+arch)
		assert.Equal(t, fmt.Sprintf("https://github.com/flink-operator/flink-operator/releases/download/v%s/kubectl-flink_%s_%s.tar.gz", version, os, arch), pl.URI)
		assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{64}$`), pl.SHA256, "sha256 of %s/%s", os, arch)
		assert.Equal(t, "kubectl-flink", pl.Bin)
		assert.True(t, slices.ContainsFunc(pl.Files, func(f krewFile) bool { return f.From == "kubectl-flink" }), "the archive's binary is installed")
	}
	slices.Sort(platforms)
	assert.Equal(t, []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64"}, platforms)
}

// makefileVersion is VERSION of the Makefile (what make kubectl-flink-dist stamps).
func makefileVersion(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, "VERSION ?= "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("no VERSION ?= in the Makefile")
	return ""
}
