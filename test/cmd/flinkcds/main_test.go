package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// make test-deps runs flinkcds (go run) while controller-gen rewrites api/v1beta1's generated
// sources: the command must not compile them, or it could read a half-written file.
func TestFlinkCDSDoesNotCompileGeneratedSources(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, pkg := range strings.Fields(string(out)) {
		require.NotEqual(t, "github.com/flink-operator/flink-operator/api/v1beta1", pkg,
			"flinkcds imports api/v1beta1 (go list -deps): the Makefile runs it beside the generation of that package")
	}
}
