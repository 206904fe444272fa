package auditcheck

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

const operator = "system:serviceaccount:op:controller-manager"

func p(group, resource, verb string) Permission {
	return Permission{Group: group, Resource: resource, Verb: verb}
}

func sampleObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile("testdata/rbac.yaml")
	require.NoError(t, err)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		o := &unstructured.Unstructured{}
		err := dec.Decode(&o.Object)
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		out = append(out, o)
	}
}

func sampleRequests(t *testing.T) []Request {
	t.Helper()
	reqs, err := ReadDir("testdata")
	require.NoError(t, err)
	return reqs
}

func TestReadDir(t *testing.T) {
	reqs := sampleRequests(t)
	// 13 lines, the watch logged twice (ResponseStarted, then ResponseComplete).
	require.Len(t, reqs, 12)
	byID := map[string]Request{}
	for _, r := range reqs {
		byID[r.AuditID[len(r.AuditID)-2:]] = r
	}
	require.Equal(t, Request{AuditID: "00000000-0000-0000-0000-000000000007", User: operator, Verb: "patch",
		URI: "/apis/flink.apache.org/v1beta1/namespaces/ns1/flinkdeployments/basic/status", Group: "flink.apache.org",
		Resource: "flinkdeployments/status", Namespace: "ns1", Name: "basic", Code: 200}, byID["07"])
	require.Equal(t, "", byID["01"].Resource, "discovery is a non-resource request")
	require.Equal(t, p("", "configmaps", "watch"), byID["05"].Permission())
	require.Equal(t, 403, byID["11"].Code)
}

func TestReadLogRejectsWhatIsNoAuditEvent(t *testing.T) {
	for name, log := range map[string]string{
		"not JSON":   "E1125 06:00:00 some klog line\n",
		"no auditID": `{"verb":"get","requestURI":"/api"}` + "\n",
		"no verb":    `{"auditID":"x","requestURI":"/api"}` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			err := ReadLog(strings.NewReader(log), map[string]Request{})
			require.ErrorContains(t, err, "line 1")
		})
	}
}

func TestGranted(t *testing.T) {
	granted, err := Granted(sampleObjects(t), "op", "controller-manager")
	require.NoError(t, err)
	mgr, le := []string{"ClusterRole manager-role"}, []string{"Role leader-election-role"}
	// Neither the unbound ClusterRole's secrets nor the metrics reader's non-resource URL.
	require.Equal(t, map[Permission][]string{
		p("", "configmaps", "delete"): mgr, p("", "configmaps", "get"): mgr, p("", "configmaps", "list"): mgr,
		p("", "configmaps", "update"): mgr, p("", "configmaps", "watch"): mgr,
		p("apps", "deployments", "create"): mgr, p("apps", "deployments", "get"): mgr, p("apps", "deployments", "patch"): mgr,
		p("flink.apache.org", "flinkdeployments/status", "patch"): mgr,
		p("coordination.k8s.io", "leases", "create"):              le, p("coordination.k8s.io", "leases", "get"): le,
		p("coordination.k8s.io", "leases", "update"): le,
	}, granted)

	other, err := Granted(sampleObjects(t), "other", "controller-manager")
	require.NoError(t, err)
	require.Empty(t, other, "a ServiceAccount of the same name in another namespace is granted nothing")
}

func TestGrantedRejects(t *testing.T) {
	binding := func(kind, name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1",
			"kind": "ClusterRoleBinding", "metadata": map[string]any{"name": "b"},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "sa", "namespace": "op"}}}}
	}
	wild := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1",
		"kind": "ClusterRole", "metadata": map[string]any{"name": "wild"},
		"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": []any{"*"}}}}}

	_, err := Granted([]*unstructured.Unstructured{wild, binding("ClusterRole", "wild")}, "op", "sa")
	require.ErrorContains(t, err, "wildcard")
	_, err = Granted([]*unstructured.Unstructured{binding("ClusterRole", "missing")}, "op", "sa")
	require.ErrorContains(t, err, "ClusterRole missing")
}

func TestCheck(t *testing.T) {
	// The sample run used every grant but configmaps delete and leases update.
	unexercised := map[Permission]string{
		p("", "configmaps", "delete"):                "deletes HA ConfigMaps on suspend",
		p("coordination.k8s.io", "leases", "update"): "renews the leader election Lease",
	}
	forbidden := Request{AuditID: "f", User: operator, Verb: "list", Resource: "secrets", URI: "/api/v1/secrets", Code: 403}
	tests := []struct {
		name     string
		extra    []Request
		allowed  map[Permission]string
		granted  func(map[Permission][]string)
		forbid   []Request
		unused   []Permission
		stale    []Permission
		filtered string // what Err(false) says; "" for no error
		complete string // what Err(true) says
	}{{
		name:    "every grant used or allow-listed",
		allowed: unexercised,
	}, {
		name:     "an unused grant fails a complete run, not a filtered one",
		allowed:  map[Permission]string{p("", "configmaps", "delete"): "deletes HA ConfigMaps on suspend"},
		unused:   []Permission{p("coordination.k8s.io", "leases", "update")},
		complete: "granted but never used: coordination.k8s.io leases update",
	}, {
		name:     "a forbidden request fails any run",
		allowed:  unexercised,
		extra:    []Request{forbidden, forbidden},
		forbid:   []Request{forbidden, forbidden},
		filtered: "forbidden (2 times): list /api/v1/secrets (core secrets list",
		complete: "forbidden (2 times): list /api/v1/secrets",
	}, {
		name:    "another user's forbidden request is not the operator's",
		extra:   []Request{{AuditID: "o", User: "admin", Verb: "list", Resource: "secrets", Code: 403}},
		allowed: unexercised,
	}, {
		name:     "an allow-list entry for a permission not granted is stale",
		allowed:  map[Permission]string{p("", "configmaps", "delete"): "x", p("coordination.k8s.io", "leases", "update"): "y", p("", "pods", "get"): "z"},
		stale:    []Permission{p("", "pods", "get")},
		complete: "allow-listed but not granted: core pods get",
	}, {
		// The sample's create on deployments is only a server-side apply answered 201.
		name:    "an apply that created the object used create; without it create is unused",
		allowed: unexercised,
		granted: func(g map[Permission][]string) {
			g[p("", "configmaps", "create")] = []string{"ClusterRole manager-role"}
		},
		unused:   []Permission{p("", "configmaps", "create")},
		complete: "granted but never used: core configmaps create",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			granted, err := Granted(sampleObjects(t), "op", "controller-manager")
			require.NoError(t, err)
			if tt.granted != nil {
				tt.granted(granted)
			}
			r := Check(append(sampleRequests(t), tt.extra...), operator, granted, tt.allowed)
			require.Equal(t, tt.forbid, r.Forbidden)
			require.Equal(t, tt.unused, r.Unused)
			require.Equal(t, tt.stale, r.StaleAllowed)
			for complete, want := range map[bool]string{false: tt.filtered, true: tt.complete} {
				if err := r.Err(complete); want == "" {
					require.NoError(t, err, "complete=%v", complete)
				} else {
					require.ErrorContains(t, err, want, "complete=%v", complete)
				}
			}
			require.Equal(t, 1, r.Used[p("apps", "deployments", "create")], "the apply answered 201")
			require.Equal(t, 1, r.Used[p("coordination.k8s.io", "leases", "get")], "a 404 was still authorized")
			require.Zero(t, r.Used[p("", "secrets", "get")], "the admin's requests are not the operator's")
		})
	}
}

func TestWriteTable(t *testing.T) {
	granted, err := Granted(sampleObjects(t), "op", "controller-manager")
	require.NoError(t, err)
	r := Check(sampleRequests(t), operator, granted, map[Permission]string{p("", "configmaps", "delete"): "deletes HA ConfigMaps on suspend"})
	var filtered strings.Builder
	require.NoError(t, r.WriteTable(&filtered, false))
	require.Contains(t, filtered.String(), "not used (filtered run)")
	require.NotContains(t, filtered.String(), "UNUSED")
	var out strings.Builder
	require.NoError(t, r.WriteTable(&out, true))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 13, out.String()) // header and 12 granted permissions
	row := func(prefix string) string {
		for _, l := range lines {
			if strings.HasPrefix(strings.Join(strings.Fields(l), " "), prefix) {
				return strings.Join(strings.Fields(l), " ")
			}
		}
		t.Fatalf("no row %q in\n%s", prefix, out.String())
		return ""
	}
	require.Equal(t, `"" configmaps delete 0 ClusterRole manager-role allow-listed: deletes HA ConfigMaps on suspend`, row(`"" configmaps delete`))
	require.Equal(t, `"" configmaps watch 1 ClusterRole manager-role used`, row(`"" configmaps watch`))
	require.Equal(t, `coordination.k8s.io leases update 0 Role leader-election-role UNUSED`, row("coordination.k8s.io leases update"))
}
