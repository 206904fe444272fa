package ingressproxy

import (
	"cmp"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ControllerName is the IngressClass controller this one stands in for: ingress-nginx's, which
// upstream's e2e manifests and minikube's ingress addon name.
const ControllerName = "k8s.io/ingress-nginx"

// The ingress-nginx annotations routing honours. Either one turns every path of the Ingress's
// host into a case-insensitive regular expression, as in ingress-nginx.
const (
	AnnotationRewriteTarget = "nginx.ingress.kubernetes.io/rewrite-target"
	AnnotationUseRegex      = "nginx.ingress.kubernetes.io/use-regex"
)

// Snapshot is what routing depends on: the cluster's objects as the informers last saw them.
type Snapshot struct {
	Classes        []*networkingv1.IngressClass
	Ingresses      []*networkingv1.Ingress
	Services       []*corev1.Service
	EndpointSlices []*discoveryv1.EndpointSlice
}

// Route is where one request goes.
type Route struct {
	// Status is the controller's own answer when the request goes to no endpoint: 404 when no
	// path matched (what nginx's default backend answers), 503 when the matched backend has no
	// ready endpoint. It is 0 when the request goes to Endpoints.
	Status int
	// Reason says why Status, for the log.
	Reason string
	// Ingress is the Ingress whose path matched.
	Ingress types.NamespacedName
	// Service is the backend Service of that path.
	Service types.NamespacedName
	// Endpoints are the backend's ready endpoints, host:port.
	Endpoints []string
	// Path is the path the backend receives: the request's, or the rewrite target's expansion.
	Path string
}

// Table routes requests by host and path, compiled from a Snapshot.
//
// The order is ingress-nginx's (one nginx server per host, its locations sorted as the
// controller sorts them, then matched as nginx matches locations):
//
//  1. Host: a rule with the request's host (case-insensitive, port ignored), else a wildcard
//     rule "*.suffix" matching one label before suffix (the longest suffix), else the rules
//     without host. A host with rules never falls back to the rules without host.
//  2. A Prefix path P (but "/") of an Ingress without regex annotations becomes two locations,
//     "P/" (a prefix) and exact "P", so it matches P and below P by whole elements. Exact paths
//     stay exact and ImplementationSpecific paths stay character prefixes (nginx's plain
//     location). The same path and type twice on a host: the oldest Ingress keeps it, and an
//     Exact path keeps its path from the exact location of a Prefix path.
//  3. Locations are ordered longest path first, equal lengths in reverse lexical order.
//  4. When any Ingress of the host has rewrite-target or use-regex, every location of the host
//     (also Exact ones and other Ingresses' paths) is the case-insensitive regular expression
//     "^path", and the first one in that order that matches wins (nginx's location ~*). An
//     Ingress with rewrite-target sends its matches to the target with $0..$9 replaced by the
//     match's groups.
//  5. Otherwise an exact location equal to the request path wins, else the longest prefix
//     location (the first one in that order).
//  6. Nothing matched: 404. The matched backend has no ready endpoint: 503.
type Table struct {
	servers   map[string]*server // by host in lower case; "" holds the rules without host
	wildcards []*server          // by suffix length, longest first
	// Problems are paths left out (a regular expression that does not compile), for the log.
	Problems []string
}

type server struct {
	host      string
	regex     bool
	locations []*location
}

type location struct {
	path    string
	exact   bool
	re      *regexp.Regexp // set when the server matches by regular expression
	rewrite string         // the rewrite target, when the Ingress rewrites
	ingress types.NamespacedName
	backend backend
}

type backend struct {
	service   types.NamespacedName
	endpoints []string
	problem   string
}

// NewTable compiles the routes of the Ingresses in s that this controller serves.
func NewTable(s Snapshot) *Table {
	t := &Table{servers: map[string]*server{}}
	resolve := newResolver(s)
	ingresses := slices.Clone(s.Ingresses)
	// ingress-nginx's order: the oldest Ingress first (it keeps a path two Ingresses claim).
	slices.SortStableFunc(ingresses, func(a, b *networkingv1.Ingress) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	// The exact locations a Prefix path brings come after every Ingress's own, which they do not
	// replace.
	type derived struct {
		srv *server
		loc location
	}
	var derivedExacts []derived
	for _, ing := range ingresses {
		if !Served(s.Classes, ing) {
			continue
		}
		regexAsked := useRegex(ing)
		rewrite := ing.Annotations[AnnotationRewriteTarget]
		for _, rule := range ing.Spec.Rules {
			if rule.HTTP == nil {
				continue
			}
			srv := t.server(strings.ToLower(rule.Host))
			for _, p := range rule.HTTP.Paths {
				loc := location{path: p.Path, ingress: types.NamespacedName{Namespace: ing.Namespace, Name: ing.Name}}
				if loc.path == "" {
					loc.path = "/"
				}
				// As in ingress-nginx, a target equal to the path is no rewrite.
				if rewrite != "" && rewrite != loc.path {
					loc.rewrite = rewrite
				}
				regex := regexAsked || loc.rewrite != ""
				srv.regex = srv.regex || regex
				loc.backend = resolve(ing.Namespace, p.Backend)
				pathType := networkingv1.PathTypeImplementationSpecific
				if p.PathType != nil {
					pathType = *p.PathType
				}
				switch {
				case pathType == networkingv1.PathTypeExact:
					loc.exact = true
					srv.add(loc)
				case pathType == networkingv1.PathTypePrefix && loc.path != "/" && !regex:
					exact := loc
					exact.exact = true
					if !strings.HasSuffix(loc.path, "/") {
						loc.path += "/"
					}
					srv.add(loc)
					derivedExacts = append(derivedExacts, derived{srv, exact})
				default:
					srv.add(loc)
				}
			}
		}
	}
	for _, d := range derivedExacts {
		d.srv.add(d.loc)
	}
	for _, srv := range t.servers {
		slices.SortStableFunc(srv.locations, func(a, b *location) int {
			return cmp.Or(cmp.Compare(len(b.path), len(a.path)), cmp.Compare(b.path, a.path))
		})
		if !srv.regex {
			continue
		}
		kept := srv.locations[:0]
		for _, loc := range srv.locations {
			re, err := regexp.Compile("(?i)^" + loc.path)
			if err != nil {
				t.Problems = append(t.Problems, fmt.Sprintf("Ingress %s: path %q is not a regular expression: %v", loc.ingress, loc.path, err))
				continue
			}
			loc.re = re
			kept = append(kept, loc)
		}
		srv.locations = kept
	}
	for host, srv := range t.servers {
		if strings.HasPrefix(host, "*.") {
			delete(t.servers, host)
			t.wildcards = append(t.wildcards, srv)
		}
	}
	slices.SortFunc(t.wildcards, func(a, b *server) int {
		return cmp.Or(cmp.Compare(len(b.host), len(a.host)), cmp.Compare(a.host, b.host))
	})
	return t
}

// Served tells whether this controller serves ing: its class names an IngressClass of
// ingress-nginx, or it names none and an IngressClass of ingress-nginx is the cluster's default.
func Served(classes []*networkingv1.IngressClass, ing *networkingv1.Ingress) bool {
	for _, c := range classes {
		if c.Spec.Controller != ControllerName {
			continue
		}
		if ing.Spec.IngressClassName == nil {
			if c.Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true" {
				return true
			}
		} else if *ing.Spec.IngressClassName == c.Name {
			return true
		}
	}
	return false
}

// useRegex tells whether ing asks for its host's paths to be regular expressions.
func useRegex(ing *networkingv1.Ingress) bool {
	useRegex, err := strconv.ParseBool(ing.Annotations[AnnotationUseRegex])
	return err == nil && useRegex
}

func (t *Table) server(host string) *server {
	srv, ok := t.servers[host]
	if !ok {
		srv = &server{host: host}
		t.servers[host] = srv
	}
	return srv
}

// add adds loc unless the server has a location of the same path and type already.
func (s *server) add(loc location) {
	for _, l := range s.locations {
		if l.path == loc.path && l.exact == loc.exact {
			return
		}
	}
	s.locations = append(s.locations, &loc)
}

// Route decides where a request for host (a Host header, port allowed) and path goes.
func (t *Table) Route(host, path string) Route {
	srv := t.match(host)
	if srv == nil {
		return Route{Status: http.StatusNotFound, Reason: "no rule for host " + host}
	}
	loc, groups := srv.match(path)
	if loc == nil {
		return Route{Status: http.StatusNotFound, Reason: "no path matches " + path}
	}
	r := Route{Ingress: loc.ingress, Service: loc.backend.service, Path: path}
	if loc.rewrite != "" {
		r.Path = expand(loc.rewrite, path, groups)
	}
	if len(loc.backend.endpoints) == 0 {
		r.Status, r.Reason = http.StatusServiceUnavailable, loc.backend.problem
		return r
	}
	r.Endpoints = loc.backend.endpoints
	return r
}

func (t *Table) match(host string) *server {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if srv, ok := t.servers[host]; ok && host != "" {
		return srv
	}
	for _, srv := range t.wildcards {
		label, ok := strings.CutSuffix(host, srv.host[1:])
		if ok && label != "" && !strings.Contains(label, ".") {
			return srv
		}
	}
	return t.servers[""]
}

// match returns the location path goes to and, for a regular expression, its match's group
// offsets.
func (s *server) match(path string) (*location, []int) {
	if s.regex {
		for _, loc := range s.locations {
			if groups := loc.re.FindStringSubmatchIndex(path); groups != nil {
				return loc, groups
			}
		}
		return nil, nil
	}
	for _, loc := range s.locations {
		if loc.exact && loc.path == path {
			return loc, nil
		}
	}
	for _, loc := range s.locations {
		if !loc.exact && strings.HasPrefix(path, loc.path) {
			return loc, nil
		}
	}
	return nil, nil
}

// expand replaces $0..$9 in target with the groups of the match of path, as nginx's rewrite
// does: one digit after the dollar, an unmatched group empty, any other dollar kept.
func expand(target, path string, groups []int) string {
	var b strings.Builder
	for i := 0; i < len(target); i++ {
		if target[i] != '$' || i+1 == len(target) || target[i+1] < '0' || target[i+1] > '9' {
			b.WriteByte(target[i])
			continue
		}
		n := int(target[i+1] - '0')
		i++
		if 2*n+1 < len(groups) && groups[2*n] >= 0 {
			b.WriteString(path[groups[2*n]:groups[2*n+1]])
		}
	}
	return b.String()
}

// newResolver resolves Ingress backends to the ready endpoints of their Service, through the
// Service's EndpointSlices: the backend's port (number or name) names a port of the Service,
// whose name names the port of the slices.
func newResolver(s Snapshot) func(namespace string, b networkingv1.IngressBackend) backend {
	services := map[types.NamespacedName]*corev1.Service{}
	for _, svc := range s.Services {
		services[types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}] = svc
	}
	slicesOf := map[types.NamespacedName][]*discoveryv1.EndpointSlice{}
	for _, es := range s.EndpointSlices {
		if name := es.Labels[discoveryv1.LabelServiceName]; name != "" {
			key := types.NamespacedName{Namespace: es.Namespace, Name: name}
			slicesOf[key] = append(slicesOf[key], es)
		}
	}
	return func(namespace string, b networkingv1.IngressBackend) backend {
		if b.Service == nil {
			return backend{problem: "the backend is not a Service"}
		}
		key := types.NamespacedName{Namespace: namespace, Name: b.Service.Name}
		out := backend{service: key}
		svc, ok := services[key]
		if !ok {
			out.problem = "no Service " + key.String()
			return out
		}
		var port *corev1.ServicePort
		for i, p := range svc.Spec.Ports {
			if (b.Service.Port.Name != "" && p.Name == b.Service.Port.Name) ||
				(b.Service.Port.Name == "" && p.Port == b.Service.Port.Number) {
				port = &svc.Spec.Ports[i]
				break
			}
		}
		if port == nil {
			out.problem = fmt.Sprintf("Service %s has no port %s", key, portString(b.Service.Port))
			return out
		}
		for _, es := range slicesOf[key] {
			for _, p := range es.Ports {
				if p.Port == nil || ptrOr(p.Name, "") != port.Name || ptrOr(p.Protocol, corev1.ProtocolTCP) != corev1.ProtocolTCP {
					continue
				}
				for _, ep := range es.Endpoints {
					if !ptrOr(ep.Conditions.Ready, true) {
						continue
					}
					for _, addr := range ep.Addresses {
						out.endpoints = append(out.endpoints, net.JoinHostPort(addr, strconv.Itoa(int(*p.Port))))
					}
				}
			}
		}
		slices.Sort(out.endpoints)
		if len(out.endpoints) == 0 {
			out.problem = fmt.Sprintf("Service %s has no ready endpoint for port %s", key, portString(b.Service.Port))
		}
		return out
	}
}

func portString(p networkingv1.ServiceBackendPort) string {
	if p.Name != "" {
		return p.Name
	}
	return strconv.Itoa(int(p.Number))
}

func ptrOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
