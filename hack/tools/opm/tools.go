//go:build tools

// Package tools pins opm (operator-registry), built from the Go module proxy: `go install` of
// operator-framework modules is refused there, a wrapper module is not.
package tools

import _ "github.com/operator-framework/operator-registry/cmd/opm"
