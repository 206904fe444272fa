package validator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/extension/endpoint"
	"github.com/flink-operator/flink-operator/pkg/redact"
)

// APIVersion versions the wire format. A change that is not additive gets a new version; an
// answer of another version is no answer (the failure policy applies).
const APIVersion = "extensions.flink-operator.io/v1"

// Kinds of the wire documents.
const (
	KindRequest  = "ValidationRequest"
	KindResponse = "ValidationResponse"
)

// Bounds of an answer: a validator's errors end up in the resource's status and events.
const (
	maxResponseBytes = 1 << 20
	maxErrors        = 20
	maxMessage       = 512
)

// ValidationRequest is the body POSTed to a validator endpoint.
type ValidationRequest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// UID identifies this request; the response repeats it.
	UID       string      `json:"uid"`
	Operation Operation   `json:"operation"`
	Resource  ResourceRef `json:"resource"`
	// Object is the resource (flink.apache.org/v1beta1, without managedFields); its secrets are
	// replaced by "******" where they are: values of secret configuration keys, env values of
	// the pod templates, passwords of URLs, also in the specs recorded in its status.
	Object json.RawMessage `json:"object"`
	// OldObject is the previous version, absent on create.
	OldObject json.RawMessage `json:"oldObject,omitempty"`
}

// ResourceRef names the resource judged.
type ResourceRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
}

// ValidationResponse is a validator endpoint's answer (HTTP 200).
type ValidationResponse struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	UID        string `json:"uid"`
	// Allowed admits the resource; false refuses it, with Errors saying why. Errors refuse it
	// whatever Allowed says.
	Allowed bool         `json:"allowed"`
	Errors  []FieldError `json:"errors,omitempty"`
}

// FieldError is one violation: the field's path (spec.job.parallelism) and what is wrong.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// HTTP is a validator endpoint.
type HTTP struct {
	Endpoint endpoint.Validator
	Client   *http.Client
	// SecretKeyPatterns mark configuration keys whose values are not sent
	// (redact.DefaultKeyPatterns when nil).
	SecretKeyPatterns []string
}

// NewHTTP builds the client of ep.
func NewHTTP(ep endpoint.Validator, secretKeyPatterns []string) (*HTTP, error) {
	c, err := ep.Client()
	if err != nil {
		return nil, err
	}
	return &HTTP{Endpoint: ep, Client: c, SecretKeyPatterns: secretKeyPatterns}, nil
}

// Validate POSTs the request and reads the answer; an error says why there is none.
func (h *HTTP) Validate(ctx context.Context, req Request) (field.ErrorList, error) {
	body, uid, err := h.encode(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, h.Endpoint.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, h.Endpoint.URL.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("validator %s: %w", h.Endpoint.Name, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	resp, err := h.Client.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("validator %s: %w", h.Endpoint.Name, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("validator %s: read answer: %w", h.Endpoint.Name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("validator %s: HTTP %d, want 200 with a %s", h.Endpoint.Name, resp.StatusCode, KindResponse)
	}
	if len(data) > maxResponseBytes {
		return nil, fmt.Errorf("validator %s: answer larger than %d bytes", h.Endpoint.Name, maxResponseBytes)
	}
	var ans ValidationResponse
	if err := json.Unmarshal(data, &ans); err != nil {
		return nil, fmt.Errorf("validator %s: answer is not a %s: %w", h.Endpoint.Name, KindResponse, err)
	}
	if ans.APIVersion != APIVersion || ans.Kind != KindResponse || ans.UID != uid {
		return nil, fmt.Errorf("validator %s: answer is %s %s for request %q, want %s %s for %q",
			h.Endpoint.Name, ans.APIVersion, ans.Kind, ans.UID, APIVersion, KindResponse, uid)
	}
	return h.fieldErrors(ans), nil
}

func (h *HTTP) fieldErrors(ans ValidationResponse) field.ErrorList {
	var errs field.ErrorList
	for i, fe := range ans.Errors {
		if i == maxErrors {
			errs = append(errs, field.Forbidden(field.NewPath("spec"),
				fmt.Sprintf("custom validator %s: %d more errors", h.Endpoint.Name, len(ans.Errors)-maxErrors)))
			break
		}
		path := strings.TrimSpace(fe.Field)
		if path == "" {
			path = "spec"
		}
		errs = append(errs, field.Forbidden(field.NewPath(clip(path, 256)), "custom validator "+h.Endpoint.Name+": "+clip(fe.Message, maxMessage)))
	}
	if len(errs) == 0 && !ans.Allowed {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "custom validator "+h.Endpoint.Name+": refused"))
	}
	return errs
}

// clip shortens s to n bytes at most, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// encode writes the request document, with secrets masked by their place in it (redact.JSON):
// configuration values under secret keys, env values of every pod template, URL passwords, in
// the spec and in the specs recorded in the status and in kubectl's last-applied-configuration.
// Never by replacing the secrets' text across the document: a tenant chooses its secrets, and
// one equal to a field name or holding JSON syntax would hide that field from the validators or
// break the document.
func (h *HTTP) encode(req Request) ([]byte, string, error) {
	uid := uuid.NewString()
	doc := ValidationRequest{APIVersion: APIVersion, Kind: KindRequest, UID: uid, Operation: req.Operation,
		Resource: ResourceRef{APIVersion: flinkv1beta1.GroupVersion.String(), Kind: req.Kind,
			Namespace: req.Object.GetNamespace(), Name: req.Object.GetName()}}
	for _, o := range []struct {
		obj client.Object
		dst *json.RawMessage
	}{{req.Object, &doc.Object}, {req.OldObject, &doc.OldObject}} {
		if o.obj == nil {
			continue
		}
		raw, err := objectJSON(o.obj, req.Kind, h.SecretKeyPatterns)
		if err != nil {
			return nil, "", fmt.Errorf("validator %s: encode %s: %w", h.Endpoint.Name, req.Kind, err)
		}
		*o.dst = raw
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, "", fmt.Errorf("validator %s: encode request: %w", h.Endpoint.Name, err)
	}
	return body, uid, nil
}

// objectJSON is obj with its type set, without managedFields (noise for a validator), its
// secrets masked.
func objectJSON(obj client.Object, kind string, secretKeyPatterns []string) (json.RawMessage, error) {
	cp, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not a client.Object", obj)
	}
	cp.GetObjectKind().SetGroupVersionKind(flinkv1beta1.GroupVersion.WithKind(kind))
	cp.SetManagedFields(nil)
	return redact.MarshalJSON(cp, secretKeyPatterns)
}
