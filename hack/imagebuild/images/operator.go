package images

import (
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// OperatorEntrypoint is where the manager binary lives in the operator image; the CSV's and
// config/manager's `command` and the Dockerfile's ENTRYPOINT run it from there.
const OperatorEntrypoint = "/manager"

// CACertsPath is where the CA bundle goes in the images (and where Go's crypto/x509 looks first).
const CACertsPath = "/etc/ssl/certs/ca-certificates.crt"

// OperatorOptions say what goes into the operator image.
type OperatorOptions struct {
	// Binary is the static manager binary (CGO_ENABLED=0 go build -trimpath ./cmd).
	Binary string
	// CACerts is a PEM bundle of CA certificates to use instead of the pinned one
	// (PinnedCACerts); empty takes the pinned bundle.
	CACerts string
	Meta    Meta
}

// Operator builds the operator image: the manager on an empty base with CA certificates, a
// passwd entry for the non-root user it runs as, and a world-writable /tmp.
func Operator(o OperatorOptions) (v1.Image, error) {
	manager, err := readExecutable(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("manager binary: %w", err)
	}
	base, err := baseLayer(o.CACerts)
	if err != nil {
		return nil, err
	}
	var app layer
	app.add(file{Path: OperatorEntrypoint, Mode: 0o755, Data: manager})
	return assemble(v1.Config{
		User:       NonRoot,
		Entrypoint: []string{OperatorEntrypoint},
		WorkingDir: "/",
		Env:        baseEnv(),
		Labels:     o.Meta.labels("flink-operator"),
	}, base, app)
}

// baseLayer holds what a static Go program needs from an operating system.
func baseLayer(caCerts string) (layer, error) {
	certs, err := caBundle(caCerts)
	if err != nil {
		return nil, err
	}
	var l layer
	l.add(file{Path: CACertsPath, Mode: 0o644, Data: certs})
	l.add(file{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")})
	l.add(file{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnonroot:x:65532:\n")})
	l.add(file{Path: "/tmp", Mode: 0o1777, Dir: true})
	l.add(file{Path: "/home/nonroot", Mode: 0o700, Dir: true, UID: 65532})
	return l, nil
}

func baseEnv() []string {
	return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=" + CACertsPath}
}
