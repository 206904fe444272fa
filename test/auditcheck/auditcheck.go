// Package auditcheck compares the RBAC an identity is granted with what it did, as the API
// server's audit log tells: requests refused (403), grants never used, and a table of both.
// The e2e suite runs it on the operator's ServiceAccount so config/rbac stays complete (no
// refusal) and minimal (no grant the operator never needs). Test tool only.
package auditcheck

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Permission is the unit RBAC grants: a verb on a resource ("name" or "name/subresource") of
// an API group ("" is the core group).
type Permission struct {
	Group    string
	Resource string
	Verb     string
}

func (p Permission) String() string {
	g := p.Group
	if g == "" {
		g = "core"
	}
	return g + " " + p.Resource + " " + p.Verb
}

// Request is what the check reads of one audited request.
type Request struct {
	AuditID string
	User    string
	Verb    string
	URI     string
	// Resource is empty for a non-resource request (discovery, /version).
	Resource  string
	Group     string
	Namespace string
	Name      string
	// Code is the HTTP status of the answer (0 when the log has none).
	Code int
}

// Permission is the grant the request needed, as the RBAC authorizer asks for it.
func (r Request) Permission() Permission {
	return Permission{Group: r.Group, Resource: r.Resource, Verb: r.Verb}
}

func (r Request) String() string {
	return fmt.Sprintf("%s %s (%s, namespace %q, name %q): %d", r.Verb, r.URI, r.Permission(), r.Namespace, r.Name, r.Code)
}

// event is the part of an audit.k8s.io/v1 Event the check reads.
type event struct {
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// ReadLog reads an audit log in the API server's JSON format (one event a line) into one
// Request per audit ID: a watch logs ResponseStarted and, when it ends, ResponseComplete; the
// later stage wins.
func ReadLog(r io.Reader, into map[string]Request) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for line := 1; sc.Scan(); line++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return fmt.Errorf("line %d: not an audit event: %w", line, err)
		}
		if ev.AuditID == "" || ev.Verb == "" {
			return fmt.Errorf("line %d: audit event without auditID or verb", line)
		}
		req := Request{AuditID: ev.AuditID, User: ev.User.Username, Verb: ev.Verb, URI: ev.RequestURI}
		if o := ev.ObjectRef; o != nil {
			req.Group, req.Resource, req.Namespace, req.Name = o.APIGroup, o.Resource, o.Namespace, o.Name
			if o.Subresource != "" {
				req.Resource += "/" + o.Subresource
			}
		}
		if ev.ResponseStatus != nil {
			req.Code = ev.ResponseStatus.Code
		}
		if prev, ok := into[ev.AuditID]; ok && req.Code == 0 {
			req.Code = prev.Code
		}
		into[ev.AuditID] = req
	}
	return sc.Err()
}

// ReadDir reads the audit log in dir: audit.log and the files it was rotated to
// (audit-<time>.log).
func ReadDir(dir string) ([]Request, error) {
	files, err := filepath.Glob(filepath.Join(dir, "audit*.log"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no audit log in %s", dir)
	}
	byID := map[string]Request{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		err = ReadLog(fh, byID)
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	out := make([]Request, 0, len(byID))
	for _, r := range byID {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AuditID < out[j].AuditID })
	return out, nil
}

// Granted is every permission the Roles and ClusterRoles among objs grant the ServiceAccount
// namespace/name through the bindings among objs, each with the roles that grant it
// ("ClusterRole manager-role"). Roles nobody binds to it grant it nothing. A wildcard
// ("*") is an error: a minimal role names its verbs and resources.
func Granted(objs []*unstructured.Unstructured, namespace, name string) (map[Permission][]string, error) {
	roles := map[string][]rbacv1.PolicyRule{}
	var refs []string
	for _, o := range objs {
		switch o.GetKind() {
		case "Role", "ClusterRole":
			var role rbacv1.ClusterRole // a Role has the same rules
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
				return nil, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
			}
			roles[o.GetKind()+" "+o.GetName()] = role.Rules
		case "RoleBinding", "ClusterRoleBinding":
			var b rbacv1.RoleBinding // a ClusterRoleBinding has the same subjects and roleRef
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b); err != nil {
				return nil, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
			}
			for _, s := range b.Subjects {
				if s.Kind == rbacv1.ServiceAccountKind && s.Name == name && s.Namespace == namespace {
					refs = append(refs, b.RoleRef.Kind+" "+b.RoleRef.Name)
				}
			}
		}
	}
	out := map[Permission][]string{}
	for _, ref := range refs {
		rules, ok := roles[ref]
		if !ok {
			return nil, fmt.Errorf("a binding of %s/%s refers to %s, which is not among the objects", namespace, name, ref)
		}
		for _, rule := range rules {
			if len(rule.NonResourceURLs) > 0 {
				continue
			}
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, v := range rule.Verbs {
						if g == "*" || res == "*" || v == "*" || strings.Contains(res, "*") {
							return nil, fmt.Errorf("%s grants a wildcard (group %q, resource %q, verb %q); name them", ref, g, res, v)
						}
						p := Permission{Group: g, Resource: res, Verb: v}
						if !contains(out[p], ref) {
							out[p] = append(out[p], ref)
						}
					}
				}
			}
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Report is what Check found.
type Report struct {
	// Forbidden are the user's requests the API server refused with 403.
	Forbidden []Request
	// Used counts the user's allowed requests per permission they needed.
	Used map[Permission]int
	// Unused are granted permissions no request used and no allow-list entry explains.
	Unused []Permission
	// StaleAllowed are allow-list entries for permissions that are not granted (any more).
	StaleAllowed []Permission

	granted map[Permission][]string
	allowed map[Permission]string
}

// Check compares the requests of user with the permissions granted to it. allowed lists the
// grants a run cannot exercise, each with the reason (the code path that needs it).
//
// A server-side apply patch answered 201 created the object, and the API server authorized it
// as create too, so it counts as a use of create as well as of patch.
func Check(requests []Request, user string, granted map[Permission][]string, allowed map[Permission]string) *Report {
	r := &Report{Used: map[Permission]int{}, granted: granted, allowed: allowed}
	for _, req := range requests {
		if req.User != user {
			continue
		}
		if req.Code == http.StatusForbidden {
			r.Forbidden = append(r.Forbidden, req)
			continue
		}
		if req.Resource == "" {
			continue // discovery and other non-resource URLs: every user may read them
		}
		r.Used[req.Permission()]++
		if req.Verb == "patch" && req.Code == http.StatusCreated {
			p := req.Permission()
			p.Verb = "create"
			r.Used[p]++
		}
	}
	for p := range granted {
		if _, ok := allowed[p]; r.Used[p] == 0 && !ok {
			r.Unused = append(r.Unused, p)
		}
	}
	for p := range allowed {
		if _, ok := granted[p]; !ok {
			r.StaleAllowed = append(r.StaleAllowed, p)
		}
	}
	sortPermissions(r.Unused)
	sortPermissions(r.StaleAllowed)
	return r
}

func sortPermissions(ps []Permission) {
	sort.Slice(ps, func(i, j int) bool { return less(ps[i], ps[j]) })
}

func less(a, b Permission) bool {
	if a.Group != b.Group {
		return a.Group < b.Group
	}
	if a.Resource != b.Resource {
		return a.Resource < b.Resource
	}
	return a.Verb < b.Verb
}

// Err is the report's verdict: a refused request always fails it; with complete (the run
// exercised everything it can, not a filtered run), so does an unexplained unused grant or a
// stale allow-list entry.
func (r *Report) Err(complete bool) error {
	var errs []error
	// A refused request is retried: each distinct one is listed once, with how often it came.
	count := map[string]int{}
	var distinct []string
	for _, f := range r.Forbidden {
		s := f.String()
		if count[s] == 0 {
			distinct = append(distinct, s)
		}
		count[s]++
	}
	for _, s := range distinct {
		errs = append(errs, fmt.Errorf("forbidden (%d times): %s", count[s], s))
	}
	if complete {
		for _, p := range r.Unused {
			errs = append(errs, fmt.Errorf("granted but never used: %s (remove it from the +kubebuilder:rbac markers or config/rbac, or allow-list it with the code path that needs it)", p))
		}
		for _, p := range r.StaleAllowed {
			errs = append(errs, fmt.Errorf("allow-listed but not granted: %s (remove the entry)", p))
		}
	}
	return errors.Join(errs...)
}

// WriteTable prints one row per permission granted or used: who grants it, how many requests
// used it, and its state. An unused grant is flagged UNUSED only for a complete run.
func (r *Report) WriteTable(w io.Writer, complete bool) error {
	all := map[Permission]bool{}
	for p := range r.granted {
		all[p] = true
	}
	for p := range r.Used {
		all[p] = true
	}
	rows := make([]Permission, 0, len(all))
	for p := range all {
		rows = append(rows, p)
	}
	sortPermissions(rows)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tRESOURCE\tVERB\tREQUESTS\tGRANTED BY\tSTATE")
	for _, p := range rows {
		by, granted := r.granted[p]
		why, allowed := r.allowed[p]
		state := "used"
		switch {
		case !granted:
			state = "used, granted to every user (not by these roles)"
		case r.Used[p] == 0 && allowed:
			state = "allow-listed: " + why
		case r.Used[p] == 0 && complete:
			state = "UNUSED"
		case r.Used[p] == 0:
			state = "not used (filtered run)"
		}
		g := p.Group
		if g == "" {
			g = `""`
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", g, p.Resource, p.Verb, r.Used[p], strings.Join(by, ", "), state)
	}
	return tw.Flush()
}
