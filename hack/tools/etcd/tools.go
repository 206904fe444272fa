//go:build tools

// Package tools pins etcd, built from the Go module proxy for envtest.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
)
