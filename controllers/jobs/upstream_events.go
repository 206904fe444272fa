package jobs

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Event messages in upstream's words, where tools and upstream's own e2e tests match on them.
const (
	// MessageSuspending goes with ReasonSuspended whenever a running job is stopped, for an
	// upgrade as for a suspend (upstream's AbstractJobReconciler).
	MessageSuspending = "Suspending existing deployment."
	// MessageSubmit goes with ReasonSubmit when a cluster or job is deployed.
	MessageSubmit = "Starting deployment"
)

// SpecChangedMessage is upstream's SpecChanged message for an upgrade from before to after:
// "UPGRADE change(s) detected (Diff: FlinkDeploymentSpec[job.parallelism : 1 -> 2]), starting
// reconciliation." Each changed field is named by its path in the spec, with its old and new
// value (null when unset), sorted by path.
func SpecChangedMessage(specKind string, before, after any) string {
	return SpecChangeMessage(ChangeUpgrade, specKind, before, after)
}

// ChangeKind is upstream's name for a kind of spec change (its DiffType), the first word of
// the SpecChanged message.
type ChangeKind string

const (
	// ChangeUpgrade: the job is restarted with the new spec.
	ChangeUpgrade ChangeKind = "UPGRADE"
	// ChangeScale: applied to the running job without a restart (in place, or reactive).
	ChangeScale ChangeKind = "SCALE"
)

// SpecChangeMessage is upstream's SpecChanged message for a change of the given kind.
func SpecChangeMessage(kind ChangeKind, specKind string, before, after any) string {
	return fmt.Sprintf("%s change(s) detected (Diff: %s[%s]), starting reconciliation.", kind, specKind, strings.Join(specDiff(before, after), ", "))
}

// specDiff lists "path : old -> new" for every leaf that differs between two specs.
func specDiff(before, after any) []string {
	a, b := map[string]string{}, map[string]string{}
	flattenJSON("", toJSONValue(before), a)
	flattenJSON("", toJSONValue(after), b)
	paths := map[string]bool{}
	for p := range a {
		paths[p] = true
	}
	for p := range b {
		paths[p] = true
	}
	var out []string
	for p := range paths {
		old, oldSet := a[p]
		now, nowSet := b[p]
		if oldSet && nowSet && old == now {
			continue
		}
		if !oldSet {
			old = "null"
		}
		if !nowSet {
			now = "null"
		}
		out = append(out, fmt.Sprintf("%s : %s -> %s", p, old, now))
	}
	sort.Strings(out)
	return out
}

func toJSONValue(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil
	}
	return out
}

// flattenJSON records the leaves of v by dotted path: objects are walked, everything else
// (lists included, as upstream compares them whole) is a leaf rendered as upstream prints it.
func flattenJSON(prefix string, v any, out map[string]string) {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flattenJSON(p, child, out)
		}
	case nil:
	case string:
		out[prefix] = t
	default:
		raw, _ := json.Marshal(t)
		out[prefix] = string(raw)
	}
}
