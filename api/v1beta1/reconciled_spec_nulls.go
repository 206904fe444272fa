package v1beta1

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Upstream (Jackson) writes every field of the spec into lastReconciledSpec and lastStableSpec,
// unset ones as null and an unset job.args as []; scripts that read or diff these strings find
// the same keys here. The keys of each object, in upstream's order.
var (
	upstreamDeploymentSpecKeys = []string{"job", "restartNonce", "flinkConfiguration", "image", "imagePullPolicy", "serviceAccount",
		"flinkVersion", "ingress", "podTemplate", "jobManager", "taskManager", "logConfiguration", "mode"}
	upstreamSessionJobSpecKeys = []string{"job", "restartNonce", "flinkConfiguration", "deploymentName"}
	upstreamJobSpecKeys        = []string{"jarURI", "parallelism", "entryClass", "args", "state", "savepointTriggerNonce",
		"initialSavepointPath", "checkpointTriggerNonce", "upgradeMode", "allowNonRestoredState", "savepointRedeployNonce", "autoscalerResetNonce"}
	upstreamComponentKeys = []string{"resource", "replicas", "podTemplate"}
	upstreamResourceKeys  = []string{"cpu", "memory", "ephemeralStorage"}
)

// withUpstreamNulls adds upstream's unset fields to a marshalled FlinkDeploymentSpec or
// FlinkSessionJobSpec; other values are returned as they are.
func withUpstreamNulls(spec any, raw []byte) ([]byte, error) {
	var top []string
	switch spec.(type) {
	case FlinkDeploymentSpec, *FlinkDeploymentSpec:
		top = upstreamDeploymentSpecKeys
	case FlinkSessionJobSpec, *FlinkSessionJobSpec:
		top = upstreamSessionJobSpecKeys
	default:
		return raw, nil
	}
	obj, err := parseObject(raw)
	if err != nil {
		return nil, err
	}
	if err := obj.fill(top, func(key string, child *orderedObject) error {
		switch key {
		case "job":
			if err := child.fill(upstreamJobSpecKeys, nil); err != nil {
				return err
			}
			if bytes.Equal(child.values["args"], []byte("null")) {
				child.values["args"] = json.RawMessage("[]")
			}
		case "jobManager", "taskManager":
			return child.fill(upstreamComponentKeys, func(key string, res *orderedObject) error {
				if key == "resource" {
					return res.fill(upstreamResourceKeys, nil)
				}
				return nil
			})
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return obj.MarshalJSON()
}

// orderedObject is a JSON object that keeps its keys' order.
type orderedObject struct {
	keys   []string
	values map[string]json.RawMessage
}

func parseObject(raw []byte) (*orderedObject, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("reconciled spec: not a JSON object")
	}
	obj := &orderedObject{values: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("reconciled spec: %w", err)
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, fmt.Errorf("reconciled spec: %w", err)
		}
		obj.keys = append(obj.keys, key)
		obj.values[key] = value
	}
	return obj, nil
}

// fill adds the missing keys as null (after the present ones) and hands each present object
// value to nested, writing back what it changed.
func (o *orderedObject) fill(keys []string, nested func(key string, child *orderedObject) error) error {
	for _, k := range keys {
		value, ok := o.values[k]
		if !ok {
			o.keys = append(o.keys, k)
			o.values[k] = json.RawMessage("null")
			continue
		}
		if nested == nil || len(value) == 0 || value[0] != '{' {
			continue
		}
		child, err := parseObject(value)
		if err != nil {
			return err
		}
		if err := nested(k, child); err != nil {
			return err
		}
		if o.values[k], err = child.MarshalJSON(); err != nil {
			return err
		}
	}
	return nil
}

func (o *orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		key, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b.Write(key)
		b.WriteByte(':')
		b.Write(o.values[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// normaliseDecodedArgs reads upstream's "args": [] (an unset job.args) as unset, as the spec it
// was written from had it: a recorded spec compares equal to the spec it records.
func normaliseDecodedArgs(spec any) {
	var job *JobSpec
	switch s := spec.(type) {
	case *FlinkDeploymentSpec:
		job = s.Job
	case *FlinkSessionJobSpec:
		job = s.Job
	}
	if job != nil && job.Args != nil && len(job.Args) == 0 {
		job.Args = nil
	}
}
