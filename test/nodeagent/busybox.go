package nodeagent

import (
	"github.com/google/go-containerregistry/pkg/name"
)

// busyboxRepository is where every spelling of the busybox image lives: busybox,
// busybox:1.35.0, library/busybox, docker.io/library/busybox@sha256:...
const busyboxRepository = "index.docker.io/library/busybox"

// isBusybox reports whether image names Docker Hub's busybox, at any tag or digest. Another
// repository whose name starts with busybox (busyboxplus) is not busybox.
func isBusybox(image string) bool {
	ref, err := name.ParseReference(image)
	return err == nil && ref.Context().Name() == busyboxRepository
}
