// Command podtemplateschema adapts the embedded Pod schemas of the CRDs that controller-gen
// wrote to their use as templates. Inside every podTemplate property it
//
//  1. removes field descriptions, keeping every other description, and
//  2. drops "containers" from the required fields of the Pod spec.
//
// Why (1): spec.podTemplate, spec.jobManager.podTemplate and spec.taskManager.podTemplate each
// embed the full Pod schema, as upstream does. With Kubernetes' descriptions the
// FlinkDeployment CRD passes 2 MB, close to etcd's request limit and far over what
// `kubectl apply` can annotate; without them it is about 250 kB. The project's own field
// descriptions stay, so `kubectl explain` documents them; the Pod fields are documented by
// `kubectl explain pod.spec`.
//
// Why (2): a template is partial. Upstream's examples give a JobManager template with only
// volumes or init containers; the operator merges it into the pod it generates, which has the
// main container. corev1.PodSpec marks containers required, upstream's CRD does not.
//
// Usage: podtemplateschema FILE...   (rewrites each file in place, preserving key order)
package main

import (
	"bytes"
	"fmt"
	"os"

	"gopkg.in/yaml.v3"
)

// trimmedProperties are the properties whose subtrees lose their descriptions.
var trimmedProperties = map[string]bool{"podTemplate": true}

func main() {
	for _, path := range os.Args[1:] {
		if err := trimFile(path); err != nil {
			fmt.Fprintf(os.Stderr, "podtemplateschema: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func trimFile(path string) error {
	in, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(in, &doc); err != nil {
		return err
	}
	walk(&doc, false)
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}

// walk visits the tree; inside a podTemplate subtree it applies both adaptations.
func walk(n *yaml.Node, trimming bool) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			walk(c, trimming)
		}
	case yaml.MappingNode:
		if trimming {
			trimEntries(n)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			if key.Value == "properties" && val.Kind == yaml.MappingNode {
				walkProperties(val, trimming)
				continue
			}
			walk(val, trimming)
		}
	}
}

// trimEntries drops a mapping's scalar description and "containers" from its required list
// (the list too once empty).
func trimEntries(n *yaml.Node) {
	kept := n.Content[:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		if key.Value == "description" && val.Kind == yaml.ScalarNode {
			continue
		}
		if key.Value == "required" && val.Kind == yaml.SequenceNode {
			val.Content = withoutScalar(val.Content, "containers")
			if len(val.Content) == 0 {
				continue
			}
		}
		kept = append(kept, key, val)
	}
	n.Content = kept
}

// walkProperties visits the schemas of a properties mapping, trimming below the properties
// listed in trimmedProperties.
func walkProperties(props *yaml.Node, trimming bool) {
	for j := 0; j+1 < len(props.Content); j += 2 {
		prop, schema := props.Content[j], props.Content[j+1]
		if trimmedProperties[prop.Value] {
			trimSubtree(schema)
		} else {
			walk(schema, trimming)
		}
	}
}

// trimSubtree keeps the description of the property itself and trims everything below it.
func trimSubtree(schema *yaml.Node) {
	if schema.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(schema.Content); i += 2 {
		if schema.Content[i].Value != "description" {
			walk(schema.Content[i+1], true)
		}
	}
}

func withoutScalar(nodes []*yaml.Node, value string) []*yaml.Node {
	out := nodes[:0]
	for _, n := range nodes {
		if n.Value != value {
			out = append(out, n)
		}
	}
	return out
}
