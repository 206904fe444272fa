package listener

import (
	"context"

	"github.com/go-logr/logr"
)

// AuditLog writes what happens to Flink resources into the operator's own log at info level:
// every event the operator records (its message as the line's message) and every change of a
// resource's lifecycle state. Someone reading only the operator's log, or a log pipeline
// alerting on it, sees a job finish or fail without also collecting Kubernetes events, which
// the API server keeps for an hour; the Apache operator logs the same things, and scripts
// written for it grep its log for them.
type AuditLog struct {
	Log logr.Logger
}

// OnEvent implements Listener.
func (a AuditLog) OnEvent(_ context.Context, e Event) {
	a.Log.Info(e.Message, "resource", e.Kind, "namespace", e.Namespace, "name", e.Name,
		"eventType", e.Type, "reason", e.Reason)
}

// OnStatusChange implements Listener: a line when the lifecycle state (a snapshot's state)
// changed, none otherwise (most writes move a timestamp or a nonce, and the events tell those).
func (a AuditLog) OnStatusChange(_ context.Context, c StatusChange) {
	before, after := c.Before, c.After
	if after.State == "" || after.State == before.State {
		return
	}
	kv := []any{"resource", c.Kind, "namespace", c.Namespace, "name", c.Name, "from", before.State, "to", after.State}
	if after.Error != "" {
		kv = append(kv, "statusError", after.Error)
	}
	a.Log.Info("lifecycle state changed to "+after.State, kv...)
}
