package webhookcert

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// GatedServer is a webhook server that starts serving only once ready is closed: without a
// certificate in its directory controller-runtime's server fails to start, and with it the
// manager. Until then its StartedChecker fails, so the replica is not ready and receives no
// webhook calls.
type GatedServer struct {
	webhook.Server
	Ready <-chan struct{}
}

// Start waits for Ready, then serves until ctx ends.
func (s GatedServer) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-s.Ready:
	}
	return s.Server.Start(ctx)
}
