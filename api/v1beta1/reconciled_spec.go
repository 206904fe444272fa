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
	// Metadata is what some upstream releases (1.7 among them) record of the resource they
	// reconciled: its generation, in place of status.observedGeneration.
	Metadata *reconciledObjectMeta `json:"metadata,omitempty"`
}

type reconciledObjectMeta struct {
	Generation int64 `json:"generation,omitempty"`
}

// EncodeReconciledSpec writes a spec in upstream's lastReconciledSpec format.
func EncodeReconciledSpec(spec any, firstDeployment bool) (string, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	if raw, err = withUpstreamNulls(spec, raw); err != nil {
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
		normaliseDecodedArgs(spec)
		return true, env.Metadata.FirstDeployment, nil
	}
	if err := json.Unmarshal([]byte(raw), spec); err != nil {
		return false, false, fmt.Errorf("decode reconciled spec: %w", err)
	}
	return true, false, nil
}

// ReconciledGeneration is the generation an upstream operator recorded in a lastReconciledSpec
// (resource_metadata.metadata.generation), 0 when it recorded none. Upstream 1.7 writes the
// reconciled generation only there, not in status.observedGeneration (later releases write
// both or only the latter), so a status adopted from it has no observedGeneration of its own.
func ReconciledGeneration(raw string) int64 {
	if raw == "" {
		return 0
	}
	var env reconciledSpecEnvelope
	if err := json.Unmarshal([]byte(raw), &env); err != nil || env.Metadata.Metadata == nil {
		return 0
	}
	return env.Metadata.Metadata.Generation
}
