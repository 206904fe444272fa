//go:build tools

// Package tools pins the OLM tools the local OLM test and the catalog use: opm (operator-registry)
// and OLM's olm and catalog operators, in one module, so that the packages they share are
// compiled once (OLM's release requires the operator-registry release opm comes from).
package tools

import (
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/catalog"
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/olm"
	_ "github.com/operator-framework/operator-registry/cmd/opm"
)
