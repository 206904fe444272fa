package ingressproxy

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

const (
	exact  = networkingv1.PathTypeExact
	prefix = networkingv1.PathTypePrefix
	impl   = networkingv1.PathTypeImplementationSpecific
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// nginxClass is the IngressClass upstream's e2e manifests create: ingress-nginx's, the default.
func nginxClass() *networkingv1.IngressClass {
	return &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: "nginx", Annotations: map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}},
		Spec:       networkingv1.IngressClassSpec{Controller: ControllerName}}
}

func otherClass() *networkingv1.IngressClass {
	return &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "other"},
		Spec: networkingv1.IngressClassSpec{Controller: "example.com/other"}}
}

// ing is an Ingress created age seconds after epoch (the oldest keeps a path two claim).
func ing(name string, age int, class string, annotations map[string]string, rules ...networkingv1.IngressRule) *networkingv1.Ingress {
	i := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: annotations,
			CreationTimestamp: metav1.NewTime(epoch.Add(time.Duration(age) * time.Second))},
		Spec: networkingv1.IngressSpec{Rules: rules}}
	if class != "" {
		i.Spec.IngressClassName = &class
	}
	return i
}

func rule(host string, paths ...networkingv1.HTTPIngressPath) networkingv1.IngressRule {
	return networkingv1.IngressRule{Host: host,
		IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: paths}}}
}

// path is a path to Service svc's port, a number (int) or a name (string).
func path(p string, typ networkingv1.PathType, svc string, port any) networkingv1.HTTPIngressPath {
	b := &networkingv1.IngressServiceBackend{Name: svc}
	switch port := port.(type) {
	case int:
		b.Port.Number = int32(port)
	case string:
		b.Port.Name = port
	}
	return networkingv1.HTTPIngressPath{Path: p, PathType: &typ, Backend: networkingv1.IngressBackend{Service: b}}
}

// service is a Service with one port, name (may be empty) port -> targetPort.
func service(name, portName string, port, targetPort int) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: portName, Port: int32(port), TargetPort: intstr.FromInt(targetPort)}}}}
}

// slice is an EndpointSlice of Service svc with one port and endpoints of the given readiness.
func slice(svc, portName string, port int, ready map[string]bool) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: svc + "-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}}}
	for addr, r := range ready {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{addr},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(r)}})
	}
	return es
}

func TestRoute(t *testing.T) {
	up := func(addr string) map[string]bool { return map[string]bool{addr: true} }
	snapshot := Snapshot{
		Classes: []*networkingv1.IngressClass{nginxClass(), otherClass()},
		Ingresses: []*networkingv1.Ingress{
			// As the operator renders upstream's e2e FlinkDeployments.
			ing("flink", 0, "nginx", map[string]string{AnnotationRewriteTarget: "/$2"},
				rule("", path("/default/flink(/|$)(.*)", impl, "flink-rest", 8081))),
			ing("plain", 0, "", nil, rule("plain.example.com",
				path("/app", prefix, "app", "http"),
				path("/app/admin", prefix, "admin", 80),
				path("/app/status", exact, "status", 80),
				path("/exact", exact, "status", 80),
				path("/impl", impl, "impl", 80),
				path("/down", prefix, "down", 80),
				path("/missing", prefix, "missing", 80),
				path("/noport", prefix, "app", 9999),
				path("/unnamed", prefix, "unnamed", 80))),
			// Newer than "plain": its /app is left out.
			ing("late", 1, "nginx", nil, rule("plain.example.com", path("/app", prefix, "admin", 80))),
			ing("elsewhere", 0, "other", nil, rule("other.example.com", path("/", prefix, "app", "http"))),
			ing("wild", 0, "nginx", nil, rule("*.wild.example.com", path("/", prefix, "app", "http"))),
			// use-regex on one Ingress of a host makes the other's paths regexes too.
			ing("regex", 0, "nginx", map[string]string{AnnotationUseRegex: "true"},
				rule("regex.example.com", path("/api/v[0-9]+/", impl, "admin", 80))),
			ing("prefix-on-regex-host", 0, "nginx", nil, rule("regex.example.com", path("/pre", prefix, "app", "http"))),
		},
		Services: []*corev1.Service{
			service("flink-rest", "rest", 8081, 8081),
			// The port's name leads to the slice's port, which is the target port.
			service("app", "http", 80, 8080),
			service("admin", "http", 80, 8080),
			service("status", "http", 80, 8080),
			service("impl", "http", 80, 8080),
			service("down", "http", 80, 8080),
			service("unnamed", "", 80, 8080),
		},
		EndpointSlices: []*discoveryv1.EndpointSlice{
			slice("flink-rest", "rest", 8081, map[string]bool{"10.244.0.5": true, "10.244.0.6": false}),
			slice("app", "http", 8080, up("10.244.1.1")),
			slice("admin", "http", 8080, up("10.244.1.2")),
			slice("status", "http", 8080, up("10.244.1.3")),
			slice("impl", "http", 8080, up("10.244.1.4")),
			slice("down", "http", 8080, map[string]bool{"10.244.1.5": false}),
			slice("unnamed", "", 8080, up("10.244.1.6")),
		},
	}
	table := NewTable(snapshot)
	require.Empty(t, table.Problems)

	tests := []struct {
		name, host, path string
		status           int
		endpoint         string // the only ready endpoint
		upstreamPath     string
	}{
		{name: "regex path with rewrite", path: "/default/flink/overview", endpoint: "10.244.0.5:8081", upstreamPath: "/overview"},
		{name: "rewrite keeps the rest of the path", path: "/default/flink/jobs/abc/exceptions", endpoint: "10.244.0.5:8081", upstreamPath: "/jobs/abc/exceptions"},
		{name: "rewrite of the bare prefix", path: "/default/flink", endpoint: "10.244.0.5:8081", upstreamPath: "/"},
		{name: "regex is case-insensitive", path: "/DEFAULT/Flink/overview", endpoint: "10.244.0.5:8081", upstreamPath: "/overview"},
		{name: "regex anchored at the start", path: "/x/default/flink/overview", status: http.StatusNotFound},
		{name: "regex group needs a slash or the end", path: "/default/flinkx/overview", status: http.StatusNotFound},
		{name: "any host reaches the rules without host", host: "192.0.2.1", path: "/default/flink/overview", endpoint: "10.244.0.5:8081", upstreamPath: "/overview"},
		{name: "no match", path: "/nothing", status: http.StatusNotFound},

		{name: "prefix by port name", host: "plain.example.com", path: "/app", endpoint: "10.244.1.1:8080", upstreamPath: "/app"},
		{name: "prefix matches below", host: "plain.example.com", path: "/app/x", endpoint: "10.244.1.1:8080", upstreamPath: "/app/x"},
		{name: "prefix matches whole elements", host: "plain.example.com", path: "/apple", status: http.StatusNotFound},
		{name: "longest prefix wins", host: "plain.example.com", path: "/app/admin/users", endpoint: "10.244.1.2:8080", upstreamPath: "/app/admin/users"},
		{name: "exact beats prefix", host: "plain.example.com", path: "/app/status", endpoint: "10.244.1.3:8080", upstreamPath: "/app/status"},
		{name: "exact is only that path", host: "plain.example.com", path: "/exact/x", status: http.StatusNotFound},
		{name: "exact", host: "plain.example.com", path: "/exact", endpoint: "10.244.1.3:8080", upstreamPath: "/exact"},
		{name: "implementation specific without regex: character prefix", host: "plain.example.com", path: "/impl-v2", endpoint: "10.244.1.4:8080", upstreamPath: "/impl-v2"},
		{name: "host is case-insensitive, port ignored", host: "PLAIN.example.com:8080", path: "/app", endpoint: "10.244.1.1:8080", upstreamPath: "/app"},
		{name: "host rules do not fall back to the rules without host", host: "plain.example.com", path: "/default/flink/overview", status: http.StatusNotFound},
		{name: "unnamed port", host: "plain.example.com", path: "/unnamed", endpoint: "10.244.1.6:8080", upstreamPath: "/unnamed"},

		{name: "no ready endpoint", host: "plain.example.com", path: "/down", status: http.StatusServiceUnavailable},
		{name: "no Service", host: "plain.example.com", path: "/missing", status: http.StatusServiceUnavailable},
		{name: "no such Service port", host: "plain.example.com", path: "/noport", status: http.StatusServiceUnavailable},

		{name: "another controller's class", host: "other.example.com", path: "/", status: http.StatusNotFound},
		{name: "wildcard host, one label", host: "a.wild.example.com", path: "/x", endpoint: "10.244.1.1:8080", upstreamPath: "/x"},
		{name: "wildcard host, not two labels", host: "a.b.wild.example.com", path: "/x", status: http.StatusNotFound},

		{name: "use-regex path", host: "regex.example.com", path: "/API/v2/jobs", endpoint: "10.244.1.2:8080", upstreamPath: "/API/v2/jobs"},
		{name: "use-regex host: other Ingresses' prefixes become regexes", host: "regex.example.com", path: "/PREFIX", endpoint: "10.244.1.1:8080", upstreamPath: "/PREFIX"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := tt.host
			if host == "" {
				host = "127.0.0.1"
			}
			r := table.Route(host, tt.path)
			assert.Equal(t, tt.status, r.Status, r.Reason)
			if tt.status == 0 {
				assert.Equal(t, []string{tt.endpoint}, r.Endpoints)
				assert.Equal(t, tt.upstreamPath, r.Path)
			} else {
				assert.Empty(t, r.Endpoints)
			}
		})
	}
}

func TestRouteOldestIngressKeepsAPath(t *testing.T) {
	table := NewTable(Snapshot{
		Classes: []*networkingv1.IngressClass{nginxClass()},
		Ingresses: []*networkingv1.Ingress{
			ing("newer", 2, "nginx", nil, rule("", path("/", prefix, "b", 80))),
			ing("older", 1, "nginx", nil, rule("", path("/", prefix, "a", 80))),
		},
	})
	assert.Equal(t, types.NamespacedName{Namespace: "default", Name: "older"}, table.Route("h", "/").Ingress)
}

// In a regex host, the first location in ingress-nginx's order (longest path first) wins, not
// the longest match.
func TestRouteRegexOrderIsLongestPathFirst(t *testing.T) {
	table := NewTable(Snapshot{
		Classes: []*networkingv1.IngressClass{nginxClass()},
		Ingresses: []*networkingv1.Ingress{ing("r", 0, "nginx", map[string]string{AnnotationUseRegex: "true"}, rule("",
			path("/a.*", impl, "short", 80),
			path("/ab/c", impl, "long", 80)))},
	})
	assert.Equal(t, "long", table.Route("h", "/ab/cdef").Service.Name)
	assert.Equal(t, "short", table.Route("h", "/abc").Service.Name)
}

func TestRouteRewriteGroups(t *testing.T) {
	table := NewTable(Snapshot{
		Classes: []*networkingv1.IngressClass{nginxClass()},
		Ingresses: []*networkingv1.Ingress{ing("r", 0, "nginx",
			map[string]string{AnnotationRewriteTarget: "/v/$2/$1$9/$x/$"},
			rule("", path("/(a+)/(b+)(c)?", impl, "svc", 80)))},
	})
	// $9 and the unmatched $3 are empty; a dollar without a digit stays.
	assert.Equal(t, "/v/bb/aa/$x/$", table.Route("h", "/aa/bb/rest").Path)
}

func TestRouteBadRegexIsLeftOut(t *testing.T) {
	table := NewTable(Snapshot{
		Classes: []*networkingv1.IngressClass{nginxClass()},
		Ingresses: []*networkingv1.Ingress{ing("r", 0, "nginx", map[string]string{AnnotationUseRegex: "true"}, rule("",
			path("/bad(", impl, "bad", 80),
			path("/good", impl, "good", 80)))},
	})
	require.Len(t, table.Problems, 1)
	assert.Contains(t, table.Problems[0], `"/bad("`)
	assert.Equal(t, "good", table.Route("h", "/good").Service.Name)
}

func TestServed(t *testing.T) {
	notDefault := nginxClass()
	notDefault.Annotations = nil
	tests := []struct {
		name    string
		classes []*networkingv1.IngressClass
		class   string
		served  bool
	}{
		{name: "names an ingress-nginx class", classes: []*networkingv1.IngressClass{notDefault}, class: "nginx", served: true},
		{name: "names another controller's class", classes: []*networkingv1.IngressClass{nginxClass(), otherClass()}, class: "other"},
		{name: "names no class, ingress-nginx's is the default", classes: []*networkingv1.IngressClass{nginxClass()}, served: true},
		{name: "names no class, no default", classes: []*networkingv1.IngressClass{notDefault}},
		{name: "names a class that does not exist", classes: []*networkingv1.IngressClass{nginxClass()}, class: "gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.served, Served(tt.classes, ing("i", 0, tt.class, nil)))
		})
	}
}

// An Exact path keeps its path from the exact match a Prefix path of an older Ingress brings.
func TestRouteExactPathBeatsAnOlderPrefix(t *testing.T) {
	table := NewTable(Snapshot{
		Classes: []*networkingv1.IngressClass{nginxClass()},
		Ingresses: []*networkingv1.Ingress{
			ing("older", 1, "nginx", nil, rule("", path("/foo", prefix, "prefix", 80))),
			ing("newer", 2, "nginx", nil, rule("", path("/foo", exact, "exact", 80))),
		},
	})
	assert.Equal(t, "exact", table.Route("h", "/foo").Service.Name)
	assert.Equal(t, "prefix", table.Route("h", "/foo/bar").Service.Name)
}
