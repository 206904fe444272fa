package v1beta1

import (
	"encoding/json"
	"fmt"
)

// reconciledSpecEnvelope is upstream's format of status.reconciliationStatus.lastReconciledSpec
// and lastStableSpec: {"spec":{...},"resource_metadata":{"apiVersion":...,"firstDeployment":...}}.
type reconciledSpecEnvelope struct {
	Spec     json.RawMessage        `json:"spec"`
	Metadata reconciledSpecMetadata `json:"resource_metadata"`
}

type reconciledSpecMetadata struct {
	APIVersion      string `json:"apiVersion,omitempty"`
	FirstDeployment bool   `json:"firstDeployment"`
}

// EncodeReconciledSpec writes a spec in upstream's lastReconciledSpec format.
func EncodeReconciledSpec(spec any, firstDeployment bool) (string, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	out, err := json.Marshal(reconciledSpecEnvelope{Spec: raw,
		Metadata: reconciledSpecMetadata{APIVersion: GroupVersion.String(), FirstDeployment: firstDeployment}})
	return string(out), err
}

// DecodeReconciledSpec reads a lastReconciledSpec or lastStableSpec into spec (a
// *FlinkDeploymentSpec or *FlinkSessionJobSpec). Both upstream's envelope and the older bare
// spec are read. An empty string reports found=false.
func DecodeReconciledSpec(raw string, spec any) (found, firstDeployment bool, err error) {
	if raw == "" {
		return false, false, nil
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &probe); err != nil {
		return false, false, fmt.Errorf("decode reconciled spec: %w", err)
	}
	if _, enveloped := probe["spec"]; enveloped {
		var env reconciledSpecEnvelope
		if err := json.Unmarshal([]byte(raw), &env); err != nil {
			return false, false, fmt.Errorf("decode reconciled spec: %w", err)
		}
		if err := json.Unmarshal(env.Spec, spec); err != nil {
			return false, false, fmt.Errorf("decode reconciled spec: %w", err)
		}
		return true, env.Metadata.FirstDeployment, nil
	}
	if err := json.Unmarshal([]byte(raw), spec); err != nil {
		return false, false, fmt.Errorf("decode reconciled spec: %w", err)
	}
	return true, false, nil
}
