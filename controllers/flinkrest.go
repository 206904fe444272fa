package controllers

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/native"
)

// DefaultRESTURLTemplate reaches a JobManager through its REST Service, from inside the cluster.
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

// FlinkClients makes the REST clients of clusters. With Address "service", URLTemplate says
// where a cluster's REST endpoint is: {{name}}, {{namespace}} and {{port}} are replaced (an
// operator outside the cluster can point it at a proxy). With "pod-ip", Endpoints looks up
// the JobManager pod address.
type FlinkClients struct {
	URLTemplate string
	Address     string
	Endpoints   client.Reader
	Timeout     time.Duration
	OnCall      func(flink.Call)
}

// For returns the client of a cluster.
func (f *FlinkClients) For(ctx context.Context, namespace, name string, conf native.Config) (*flink.Client, error) {
	port, err := conf.Int("rest.port", native.DefaultRESTPort)
	if err != nil {
		return nil, err
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
		ip, err := f.readyAddress(ctx, namespace, native.RESTServiceName(name))
		if err != nil {
			return nil, err
		}
		url = "http://" + ip + ":" + strconv.Itoa(port)
	default:
		return nil, fmt.Errorf("REST address mode %q: allowed: %s, %s", f.Address, RESTAddressService, RESTAddressPodIP)
	}
	c, err := flink.New(flink.Options{URL: url, Timeout: f.Timeout, OnCall: f.OnCall})
	if err != nil {
		return nil, fmt.Errorf("REST client of %s/%s: %w", namespace, name, err)
	}
	return c, nil
}

// readyAddress is the address of a ready pod behind a Service (the lowest, so stable). Pods
// are read rather than EndpointSlices because an EndpointSlice cannot hold every routable
// address (loopback and link-local ones are rejected), while a pod's status always has it.
func (f *FlinkClients) readyAddress(ctx context.Context, namespace, service string) (string, error) {
	if f.Endpoints == nil {
		return "", fmt.Errorf("REST address mode %s needs a reader for services and pods", RESTAddressPodIP)
	}
	var svc corev1.Service
	if err := f.Endpoints.Get(ctx, client.ObjectKey{Namespace: namespace, Name: service}, &svc); err != nil {
		return "", fmt.Errorf("service %s/%s: %w", namespace, service, err)
	}
	if len(svc.Spec.Selector) == 0 {
		return "", fmt.Errorf("service %s/%s has no selector", namespace, service)
	}
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
