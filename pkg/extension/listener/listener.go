// Package listener delivers what happens to Flink resources, status changes and Kubernetes
// events, to resource listeners: HTTP endpoints listed in the operator configuration
// (kubernetes.operator.extension.listeners), which receive CloudEvents, or Go values for those
// who embed the controllers in a binary of their own.
//
// Delivery never holds up a reconcile: events are queued per endpoint in queues bounded by
// count and bytes (when full, the oldest event of the namespace holding the most is dropped and
// counted, so one namespace cannot evict the others' events) and sent by the endpoint's own
// goroutines, with
// retries on exponential back-off. One resource's events always travel through the same queue
// and goroutine, so each endpoint receives them in the order they happened.
package listener

import (
	"context"
	"encoding/json"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Resource identifies the Flink resource an event is about.
type Resource struct {
	// Kind is FlinkDeployment, FlinkSessionJob or FlinkStateSnapshot.
	Kind       string    `json:"kind"`
	Namespace  string    `json:"namespace"`
	Name       string    `json:"name"`
	UID        types.UID `json:"uid"`
	Generation int64     `json:"generation"`
}

// StatusChange is a status the operator wrote.
type StatusChange struct {
	Resource
	// Object is the resource after the write, for Go listeners (not sent over HTTP); must not be
	// modified.
	Object client.Object
	// Before and After are the lifecycle state (a snapshot's state) and the status error before
	// and after the write, read from the statuses without encoding them.
	Before, After Lifecycle
	// OldStatus and Status are the status before and after, as JSON, secrets masked by their
	// place (values of secret configuration keys and env values in the recorded specs, URL
	// passwords); read them with Statuses, which encodes them when the change was made with
	// NewStatusChange. The CloudEvents sent over HTTP leave the recorded specs out (StatusData).
	OldStatus, Status json.RawMessage

	// encode, when set, gives OldStatus and Status: the operator writes a status on most
	// reconciles, and encoding and masking two statuses for each was a tenth of its CPU while
	// creating resources, for HTTP listeners that are usually not configured.
	encode func() (old, current json.RawMessage)
}

// Lifecycle is what the audit log tells of a status: its lifecycle state (a snapshot's state)
// and its error, secrets masked.
type Lifecycle struct {
	State string
	Error string
}

// NewStatusChange is a change whose statuses encode gives when a listener asks for them.
func NewStatusChange(res Resource, obj client.Object, before, after Lifecycle, encode func() (old, current json.RawMessage)) StatusChange {
	return StatusChange{Resource: res, Object: obj, Before: before, After: after, encode: encode}
}

// Statuses are the statuses before and after the write, as JSON, secrets masked.
func (c StatusChange) Statuses() (old, current json.RawMessage) {
	if c.encode != nil {
		return c.encode()
	}
	return c.OldStatus, c.Status
}

// Event is a Kubernetes event the operator recorded on a resource.
type Event struct {
	Resource
	// Type is Normal or Warning.
	Type    string
	Reason  string
	Message string
	Time    time.Time
}

// Listener is told of status changes and events. Its methods are called from reconciles and
// must return at once: queue the work, never wait for it.
type Listener interface {
	OnStatusChange(ctx context.Context, c StatusChange)
	OnEvent(ctx context.Context, e Event)
}
