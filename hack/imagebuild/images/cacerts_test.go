package images

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pinnedBundleSHA256 is the checksum of cacerts/ca-certificates.crt as cacerts/update.sh
// generated it from Debian's ca-certificates 20250419~deb12u2.
const pinnedBundleSHA256 = "e9c7b63ee2623386e9b0a3ee32f499d01a8ea23dc83b8383ddff9f8e749543b7"

// pinnedBaseLayerDiffID is the uncompressed digest of the operator image's first layer (CA
// bundle, passwd, group, /tmp, home) built from the pinned bundle: the same on every machine
// that builds this tree. A change of that layer's content changes it on purpose.
const pinnedBaseLayerDiffID = "sha256:0ed9e43cde47dddc5e1acc36391643d1897f68e43348d8342dab286590df2c7b"

// staticProgram builds a small static executable standing in for the manager.
func staticProgram(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module standin\n"), 0o600))
	out := filepath.Join(dir, "standin")
	cmd := exec.CommandContext(context.Background(), "go", "build", "-trimpath", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "build a static program: %s", b)
	return out
}

// TestImagesCarryThePinnedCABundle: without -ca-certs the images get the bundle committed in
// cacerts/, not the build machine's. Two builds under different CA settings of the machine
// give the same image, and the base layer's digest is the one recorded here, which no
// machine-local bundle could reproduce.
func TestImagesCarryThePinnedCABundle(t *testing.T) {
	binary := staticProgram(t)
	committed, err := os.ReadFile(filepath.Join("cacerts", "ca-certificates.crt"))
	require.NoError(t, err)
	sum := sha256.Sum256(committed)
	require.Equal(t, pinnedBundleSHA256, hex.EncodeToString(sum[:]), "the committed bundle is the one update.sh generated")

	img, err := Operator(OperatorOptions{Binary: binary})
	require.NoError(t, err, "the pinned bundle is the default")
	inImage := files(t, img)[CACertsPath].data
	got := sha256.Sum256(inImage)
	assert.Equal(t, pinnedBundleSHA256, hex.EncodeToString(got[:]), "the image carries the pinned bundle")
	var roots int
	for rest := inImage; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		_, err := x509.ParseCertificate(block.Bytes)
		require.NoError(t, err, "certificate %d", roots)
		roots++
	}
	assert.Equal(t, 148, roots, "Mozilla's roots in ca-certificates 20250419~deb12u2")

	layers, err := img.Layers()
	require.NoError(t, err)
	base, err := layers[0].DiffID()
	require.NoError(t, err)
	assert.Equal(t, pinnedBaseLayerDiffID, base.String(), "the base layer is the same on every machine")

	// Another machine: its own roots in the places TLS libraries and tools look.
	local := filepath.Join(t.TempDir(), "local-roots.crt")
	require.NoError(t, os.WriteFile(local, []byte("-----BEGIN CERTIFICATE-----\nlocal root\n-----END CERTIFICATE-----\n"), 0o600))
	t.Setenv("SSL_CERT_FILE", local)
	t.Setenv("SSL_CERT_DIR", filepath.Dir(local))
	again, err := Operator(OperatorOptions{Binary: binary})
	require.NoError(t, err)
	assertSameDigest(t, img, again)

	op := "ghcr.io/flink-operator/flink-operator@sha256:" + pinnedBundleSHA256 // any digest: the catalog's content is not checked here
	catalog, err := Catalog(CatalogOptions{Opm: binary, Dir: filepath.Join(repoRoot(t), "catalog"), Bundle: "flink-operator.v0.2.0",
		OperatorDigestRef: op, BundleDigestRef: "ghcr.io/flink-operator/flink-operator-bundle@sha256:" + pinnedBundleSHA256})
	require.NoError(t, err)
	assert.Equal(t, committed, files(t, catalog)[CACertsPath].data, "the catalog image carries the pinned bundle too")

	// A bundle chosen explicitly (-ca-certs) still goes in as given.
	own, err := Operator(OperatorOptions{Binary: binary, CACerts: local})
	require.NoError(t, err)
	assert.Contains(t, string(files(t, own)[CACertsPath].data), "local root")
}

// TestPinnedCABundleChecksum: a bundle edited without recording its checksum is refused.
func TestPinnedCABundleChecksum(t *testing.T) {
	saved := pinnedCACerts
	t.Cleanup(func() { pinnedCACerts = saved })
	pinnedCACerts = append(append([]byte{}, saved...), []byte("-----BEGIN CERTIFICATE-----\nadded\n-----END CERTIFICATE-----\n")...)
	_, err := Operator(OperatorOptions{Binary: staticProgram(t)})
	require.ErrorContains(t, err, "pinned CA bundle")
	require.ErrorContains(t, err, "sha256")
}
