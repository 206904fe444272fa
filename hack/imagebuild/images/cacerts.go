package images

import (
	"crypto/sha256"
	_ "embed" // the pinned CA bundle
	"encoding/hex"
	"fmt"
	"os"
)

// The images carry a CA bundle fixed in this repository rather than the build machine's: the
// same source tree then gives the same image digest on every machine, and a root installed on
// the build machine (a corporate proxy's, a test CA) never becomes a trust anchor of the
// operator's jar downloads and extension calls. cacerts/update.sh regenerates the bundle from
// Debian's ca-certificates package (Mozilla's roots) at a pinned version and checksum.

// PinnedCACertsVersion is the Debian ca-certificates package the bundle comes from.
const PinnedCACertsVersion = "20250419~deb12u2"

// PinnedCACertsSHA256 is the bundle's checksum, as cacerts/update.sh prints it.
const PinnedCACertsSHA256 = "e9c7b63ee2623386e9b0a3ee32f499d01a8ea23dc83b8383ddff9f8e749543b7"

//go:embed cacerts/ca-certificates.crt
var pinnedCACerts []byte

// PinnedCACerts returns the pinned bundle, refusing one that does not match its checksum (an
// edit by hand, or a regeneration whose checksum was not recorded).
func PinnedCACerts() ([]byte, error) {
	sum := sha256.Sum256(pinnedCACerts)
	if got := hex.EncodeToString(sum[:]); got != PinnedCACertsSHA256 {
		return nil, fmt.Errorf("pinned CA bundle cacerts/ca-certificates.crt: sha256 %s, want %s (regenerate it with cacerts/update.sh and record its checksum)",
			got, PinnedCACertsSHA256)
	}
	return pinnedCACerts, nil
}

// caBundle is the bundle an image gets: the pinned one, or the file path names when the
// builder chose a bundle of its own.
func caBundle(path string) ([]byte, error) {
	if path == "" {
		return PinnedCACerts()
	}
	certs, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CA certificates: %w", err)
	}
	return certs, nil
}
