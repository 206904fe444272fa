package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, root, rel, text string) {
	t.Helper()
	path := filepath.Join(root, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
}

// TestCheckFindsBrokenLinksAndAnchors: a link to a missing file and an anchor no heading has
// are found, with page and line; links that resolve, other sites and code are not.
func TestCheckFindsBrokenLinksAndAnchors(t *testing.T) {
	root := t.TempDir()
	write(t, root, "README.md", "# Project\n\n"+
		"See [the guide](docs/guide.md#upgrade-modes-savepoint-last-state) and [install](docs/install.md).\n"+
		"[missing anchor](docs/guide.md#no-such-section)\n"+
		"[site](https://example.com/x.md#y) [mail](mailto:a@b.c) `[code](nowhere.md)`\n"+
		"```\n[in a block](nowhere.md)\n```\n"+
		"[ref]: docs/gone.md\n")
	write(t, root, "docs/guide.md", "# Guide\n\n## Upgrade modes: `savepoint`, last-state\n\n"+
		"## Repeated\n\n## Repeated\n\n"+
		"[back](../README.md#project) [same page](#repeated-1) [self](#repeated-2) [dir](../hack)\n")
	write(t, root, "docs/install.md", "# Install\n")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "hack"), 0o755))

	broken, err := Check(root)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"README.md:4: docs/guide.md#no-such-section: no heading with anchor #no-such-section in docs/guide.md",
		"README.md:9: docs/gone.md: no such file or directory",
		"docs/guide.md:9: #repeated-2: no heading with anchor #repeated-2 in docs/guide.md",
	}, broken)
}

// TestSlugFollowsGitHub: lowercase, spaces to '-', punctuation dropped, code and links as text.
func TestSlugFollowsGitHub(t *testing.T) {
	for heading, want := range map[string]string{
		"Install with OLM":                              "install-with-olm",
		"Install without OLM (`make deploy`)":           "install-without-olm-make-deploy",
		"flink.apache.org/v1beta1":                      "flinkapacheorgv1beta1",
		"The crash-safety chaos test (`TestChaos`)":     "the-crash-safety-chaos-test-testchaos",
		"Autoscaler metrics ([pkg](x.go)) and **load**": "autoscaler-metrics-pkg-and-load",
		"HA metadata: Kubernetes and ZooKeeper":         "ha-metadata-kubernetes-and-zookeeper",
		"FlinkOperatorDown":                             "flinkoperatordown",
		"snake_case stays":                              "snake_case-stays",
	} {
		assert.Equal(t, want, Slug(heading), heading)
	}
}

// TestRepositoryDocsResolve: the repository's own README and docs/ pass (make verify runs it too).
func TestRepositoryDocsResolve(t *testing.T) {
	broken, err := Check(filepath.Join("..", ".."))
	require.NoError(t, err)
	assert.Empty(t, broken)
}
