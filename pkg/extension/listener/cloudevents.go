package listener

import (
	"encoding/json"
	"fmt"
	"strings"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/google/uuid"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// CloudEvent types. The version suffix changes when the data's schema changes other than by
// adding fields.
const (
	TypeStatusChanged = "io.flink-operator.resource.status.changed.v1"
	TypeEvent         = "io.flink-operator.resource.event.v1"
)

// StatusData is the data of a TypeStatusChanged CloudEvent.
type StatusData struct {
	Resource
	APIVersion string          `json:"apiVersion"`
	OldStatus  json.RawMessage `json:"oldStatus,omitempty"`
	Status     json.RawMessage `json:"status"`
}

// EventData is the data of a TypeEvent CloudEvent.
type EventData struct {
	Resource
	APIVersion string `json:"apiVersion"`
	Type       string `json:"type"`
	Reason     string `json:"reason"`
	Message    string `json:"message"`
}

// Source is a resource's CloudEvents source: its collection's API path (the subject is its name).
func Source(r Resource) string {
	return fmt.Sprintf("/apis/%s/namespaces/%s/%ss", flinkv1beta1.GroupVersion.String(), r.Namespace, strings.ToLower(r.Kind))
}

func newCloudEvent(typ string, r Resource, data any) (cloudevents.Event, error) {
	ev := cloudevents.NewEvent()
	ev.SetID(uuid.NewString())
	ev.SetType(typ)
	ev.SetSource(Source(r))
	ev.SetSubject(r.Name)
	if err := ev.SetData(cloudevents.ApplicationJSON, data); err != nil {
		return cloudevents.Event{}, fmt.Errorf("encode %s of %s %s/%s: %w", typ, r.Kind, r.Namespace, r.Name, err)
	}
	return ev, nil
}

func statusEvent(c StatusChange) (cloudevents.Event, error) {
	ev, err := newCloudEvent(TypeStatusChanged, c.Resource,
		StatusData{Resource: c.Resource, APIVersion: flinkv1beta1.GroupVersion.String(), OldStatus: c.OldStatus, Status: c.Status})
	return ev, err
}

func eventEvent(e Event) (cloudevents.Event, error) {
	ev, err := newCloudEvent(TypeEvent, e.Resource, EventData{Resource: e.Resource, APIVersion: flinkv1beta1.GroupVersion.String(),
		Type: e.Type, Reason: e.Reason, Message: e.Message})
	if err == nil && !e.Time.IsZero() {
		ev.SetTime(e.Time)
	}
	return ev, err
}
