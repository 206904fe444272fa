// Package clients makes the REST clients the reconcilers talk to a cluster's JobManager with:
// where its REST endpoint is (the REST Service, or a ready JobManager pod), with which scheme
// and trust, checked against the Service the operator renders, and fenced by the leader lease.
package clients

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/leaderfence"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/pkg/resttls"
)

// DefaultRESTURLTemplate reaches a JobManager through its REST Service, from inside the cluster.
// Its scheme follows the cluster: https when its configuration turns REST SSL on.
const DefaultRESTURLTemplate = "http://{{name}}-rest.{{namespace}}:{{port}}"

// How the operator addresses a JobManager's REST endpoint.
const (
	// RESTAddressService uses URLTemplate (the REST Service's DNS name by default): right when
	// the operator runs in the cluster.
	RESTAddressService = "service"
	// RESTAddressPodIP uses the address of a ready JobManager pod behind the REST Service:
	// right when the operator runs outside the cluster but pod IPs are
	// routable from it (flat networks, VPC-native clusters, the local cluster of the tests).
	RESTAddressPodIP = "pod-ip"
)

// Factory makes the REST clients of clusters. With Address "service", URLTemplate says
// where a cluster's REST endpoint is: {{name}}, {{namespace}} and {{port}} are replaced (an
// operator outside the cluster can point it at a proxy). With "pod-ip", Endpoints looks up
// the JobManager pod address. In both modes the scheme is the cluster's: https when its
// configuration turns REST SSL on, trusting what TLS gives.
type Factory struct {
	URLTemplate string
	Address     string
	// Endpoints reads the cluster's REST Service, which is checked before every client is made
	// (RESTServiceError), and in pod-ip mode its pods. Without it (tests of the reconcilers
	// alone, with no cluster objects) the Service is not checked.
	Endpoints client.Reader
	Timeout   time.Duration
	OnCall    func(flink.Call)
	// TLS is the operator's trust and client certificate for clusters with REST SSL.
	TLS resttls.Settings
	// Fence is this replica's leader lease (nil with leader election off). Every REST call
	// that changes a cluster or its jobs (trigger, stop, cancel, submit, dispose, rescale,
	// shutdown) and every deletion of a cluster or its HA metadata by the reconcilers using
	// these clients is refused while it is not held: a leader that was paused past its lease
	// must not act after another replica took over.
	Fence *leaderfence.Fence
}

// Fenced returns nil when this replica may change clusters, and otherwise the
// *leaderfence.NotHeldError refusing action, which it logs. The reconcilers call it before
// deleting a cluster or its HA metadata; the clients For makes call it before every REST call
// that changes a cluster.
func (f *Factory) Fenced(ctx context.Context, action string) error {
	if f == nil {
		return nil
	}
	err := f.Fence.Check(action)
	if err != nil {
		log.FromContext(ctx).Info("not leading for sure: refused to change the cluster", "action", action, "reason", err.Error())
	}
	return err
}

// For returns the client of a cluster running Flink version with configuration conf.
func (f *Factory) For(ctx context.Context, namespace, name string, version flinkv1beta1.FlinkVersion, conf flinkconf.Config) (*flink.Client, error) {
	port, err := conf.Int("rest.port", flinkconf.DefaultRESTPort)
	if err != nil {
		return nil, err
	}
	flink2 := flinkconf.AtLeast(version, 2, 0)
	secure, err := resttls.Enabled(conf, flink2)
	if err != nil {
		return nil, err
	}
	var svc *corev1.Service
	if f.Endpoints != nil {
		if svc, err = f.restService(ctx, namespace, name); err != nil {
			return nil, err
		}
	}
	var url string
	switch f.Address {
	case "", RESTAddressService:
		tmpl := f.URLTemplate
		if tmpl == "" {
			tmpl = DefaultRESTURLTemplate
		}
		url = strings.NewReplacer("{{name}}", name, "{{namespace}}", namespace, "{{port}}", strconv.Itoa(port)).Replace(tmpl)
	case RESTAddressPodIP:
		ip, err := f.readyAddress(ctx, svc)
		if err != nil {
			return nil, err
		}
		url = "http://" + net.JoinHostPort(ip, strconv.Itoa(port))
	default:
		return nil, fmt.Errorf("REST address mode %q: allowed: %s, %s", f.Address, RESTAddressService, RESTAddressPodIP)
	}
	opts := flink.Options{URL: url, Timeout: f.Timeout, OnCall: f.OnCall}
	if f.Fence != nil {
		opts.Guard = func(endpoint string) error { return f.Fenced(ctx, endpoint+" on "+namespace+"/"+name) }
	}
	if secure {
		if opts.URL, err = withScheme(url, "https"); err != nil {
			return nil, err
		}
		host, _ := hostOf(opts.URL)
		service := flinkconf.RESTServiceName(name)
		// The certificate may be issued for the URL's host or any DNS name of the REST
		// Service (upstream's examples use <service>.<namespace>.svc wildcards); all name
		// this cluster only.
		names := []string{host, service + "." + namespace, service + "." + namespace + ".svc",
			service + "." + namespace + ".svc.cluster.local"}
		if opts.TLS, err = f.TLS.Config(conf, names, flink2); err != nil {
			return nil, fmt.Errorf("REST TLS of %s/%s: %w", namespace, name, err)
		}
	}
	c, err := flink.New(opts)
	if err != nil {
		return nil, fmt.Errorf("REST client of %s/%s: %w", namespace, name, err)
	}
	return c, nil
}

// withScheme replaces the scheme of a REST URL (an http template stays the single template
// for clusters with and without REST SSL).
func withScheme(raw, scheme string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("REST URL %q must be http(s)://host:port", raw)
	}
	u.Scheme = scheme
	return u.String(), nil
}

func hostOf(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	return u.Hostname(), nil
}

// ReasonRESTServiceRefused: the operator made no REST call to a cluster because its REST
// Service is not the one the operator renders (RESTServiceError).
const ReasonRESTServiceRefused = "RESTServiceRefused"

// RESTServiceError reports that a cluster's REST Service is not as the operator renders it, so
// the operator makes no REST call through it: the Service is editable in the tenant's
// namespace, and an ExternalName or a foreign selector would send the operator's calls (a
// savepoint disposal, a cancellation) to another JobManager. The next deployment of the
// cluster applies the Service again.
type RESTServiceError struct {
	Namespace, Service string
	// Problem says what is wrong (native.RESTServiceProblem).
	Problem string
}

func (e *RESTServiceError) Error() string {
	return fmt.Sprintf("REST Service %s/%s: %s; no REST call is made to the cluster until the Service is the one the operator renders",
		e.Namespace, e.Service, e.Problem)
}

// IsRESTServiceRefused reports whether err is (or wraps) a RESTServiceError, and returns it.
func IsRESTServiceRefused(err error) (*RESTServiceError, bool) {
	var e *RESTServiceError
	ok := errors.As(err, &e)
	return e, ok
}

// restService reads the cluster's REST Service and checks it is the one the operator renders.
func (f *Factory) restService(ctx context.Context, namespace, cluster string) (*corev1.Service, error) {
	name := flinkconf.RESTServiceName(cluster)
	var svc corev1.Service
	if err := f.Endpoints.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &svc); err != nil {
		return nil, fmt.Errorf("REST Service %s/%s: %w", namespace, name, err)
	}
	if problem := native.RESTServiceProblem(&svc, cluster); problem != "" {
		return nil, &RESTServiceError{Namespace: namespace, Service: name, Problem: problem}
	}
	return &svc, nil
}

// readyAddress is the address of a ready pod behind the cluster's REST Service (the lowest, so
// stable), selected by the Service's selector, which restService checked is the cluster's
// JobManager's. Pods are read rather than EndpointSlices because an EndpointSlice cannot hold
// every routable address (loopback and link-local ones are rejected), while a pod's status
// always has it; and anyone may write an EndpointSlice for the Service.
func (f *Factory) readyAddress(ctx context.Context, svc *corev1.Service) (string, error) {
	if svc == nil {
		return "", fmt.Errorf("REST address mode %s needs a reader for services and pods", RESTAddressPodIP)
	}
	namespace, service := svc.Namespace, svc.Name
	var pods corev1.PodList
	if err := f.Endpoints.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels(svc.Spec.Selector)); err != nil {
		return "", fmt.Errorf("pods of service %s/%s: %w", namespace, service, err)
	}
	var ready []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" && podReady(&p) {
			ready = append(ready, p.Status.PodIP)
		}
	}
	if len(ready) == 0 {
		return "", fmt.Errorf("service %s/%s has no ready pod", namespace, service)
	}
	sort.Strings(ready)
	return ready[0], nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
