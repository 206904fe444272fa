// Package repo finds this repository's checkout for the test tools that read its files (the
// CRDs, testdata, the built tools under bin/). Test tool only.
//
// It imports nothing of the repository: make test-deps compiles the tools that need only the
// checkout's location (test/cmd/flinkcds through test/flinkcluster) while the sources of
// api/v1beta1 are being generated, and a tool importing api/v1beta1 could read a half-written
// zz_generated.deepcopy.go.
package repo

import (
	"errors"
	"os"
	"path/filepath"
)

// Root returns the module root (the directory holding go.mod), found from the working directory.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}
