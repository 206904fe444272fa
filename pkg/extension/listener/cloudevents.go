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

// StatusData is the data of a TypeStatusChanged CloudEvent. OldStatus and Status leave out the
// recorded specs (reconciliationStatus.lastReconciledSpec and lastStableSpec): each is a copy of
// a whole spec, most of an event's size, and a listener that needs the spec reads the resource
// (the event names its generation). Upstream's FlinkResourceListener receives the status
// objects in-process, where they cost nothing; Go listeners here get StatusChange, which keeps
// them.
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
	encodedOld, encoded := c.Statuses()
	oldStatus, err := withoutRecordedSpecs(encodedOld)
	if err != nil {
		return cloudevents.Event{}, fmt.Errorf("old status of %s %s/%s: %w", c.Kind, c.Namespace, c.Name, err)
	}
	status, err := withoutRecordedSpecs(encoded)
	if err != nil {
		return cloudevents.Event{}, fmt.Errorf("status of %s %s/%s: %w", c.Kind, c.Namespace, c.Name, err)
	}
	return newCloudEvent(TypeStatusChanged, c.Resource,
		StatusData{Resource: c.Resource, APIVersion: flinkv1beta1.GroupVersion.String(), OldStatus: oldStatus, Status: status})
}

// recordedSpecs are the fields of reconciliationStatus that hold whole specs.
var recordedSpecs = []string{"lastReconciledSpec", "lastStableSpec"}

// withoutRecordedSpecs is a status without its recorded specs (empty stays empty).
func withoutRecordedSpecs(status json.RawMessage) (json.RawMessage, error) {
	if len(status) == 0 {
		return status, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(status, &fields); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	raw, ok := fields["reconciliationStatus"]
	if !ok {
		return status, nil
	}
	var rs map[string]json.RawMessage
	if err := json.Unmarshal(raw, &rs); err != nil {
		return nil, fmt.Errorf("reconciliationStatus is not a JSON object: %w", err)
	}
	for _, f := range recordedSpecs {
		delete(rs, f)
	}
	var err error
	if fields["reconciliationStatus"], err = json.Marshal(rs); err != nil {
		return nil, err
	}
	return json.Marshal(fields)
}

func eventEvent(e Event) (cloudevents.Event, error) {
	ev, err := newCloudEvent(TypeEvent, e.Resource, EventData{Resource: e.Resource, APIVersion: flinkv1beta1.GroupVersion.String(),
		Type: e.Type, Reason: e.Reason, Message: e.Message})
	if err == nil && !e.Time.IsZero() {
		ev.SetTime(e.Time)
	}
	return ev, err
}
