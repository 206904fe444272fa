package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCountsLeavesAndUnfinishedTests(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Test":"TestA"}`,
		`{"Action":"run","Test":"TestA/one"}`,
		`{"Action":"pass","Test":"TestA/one"}`,
		`{"Action":"run","Test":"TestA/two"}`,
		`{"Action":"fail","Test":"TestA/two"}`,
		`{"Action":"fail","Test":"TestA"}`,
		`{"Action":"run","Test":"FuzzB"}`,
		`{"Action":"run","Test":"FuzzB/seed#0"}`,
		`{"Action":"skip","Test":"FuzzB/seed#0"}`,
		`{"Action":"run","Test":"TestC"}`,
		`not json`,
	}, "\n")
	got, err := parse(strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"TestA/one": "pass", "TestA/two": "fail", "FuzzB/seed#0": "skip", "TestC": "unfinished"}, got)
}

func TestWriteCountsFindingsAndEmptyCases(t *testing.T) {
	cs := []Case{
		{Class: Crash, Package: "./a", Tests: []string{"TestA"}},
		{Class: Leak, Package: "./b", Tests: []string{"TestB", "TestC"}},
		{Class: Bypass, Package: "./c", Tests: []string{"TestD"}},
	}
	var buf bytes.Buffer
	bad := write(&buf, cs, map[int]outcome{0: {Passed: 3}, 1: {Passed: 1, Failed: 1}})
	assert.True(t, bad)
	assert.Contains(t, buf.String(), "| crash | 3 | 1 | 0 | 0 |")
	assert.Contains(t, buf.String(), "| leak | 2 | 2 | 1 | 0 |")
	assert.Contains(t, buf.String(), "| **all** | **5** | **4** | **1** | **0** |")
	assert.Contains(t, buf.String(), "no test ran for ./c TestD")

	buf.Reset()
	assert.False(t, write(&buf, cs[:1], map[int]outcome{0: {Passed: 3}}))
}

// TestCasesNameExistingTests keeps cases.go in step with the code: a renamed or deleted hostile
// test would otherwise silently drop out of the scorecard.
func TestCasesNameExistingTests(t *testing.T) {
	for _, c := range cases {
		dir := filepath.Join("..", "..", filepath.FromSlash(strings.TrimPrefix(c.Package, "./")))
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		require.NoError(t, err)
		var src strings.Builder
		for _, f := range files {
			b, err := os.ReadFile(f) // #nosec G304 -- the repository's own test files
			require.NoError(t, err)
			src.Write(b)
		}
		for _, name := range c.Tests {
			assert.Regexp(t, regexp.MustCompile(`(?m)^func `+regexp.QuoteMeta(name)+`\(`), src.String(), "%s in %s", name, c.Package)
		}
	}
}
