// Package ingressproxy is an Ingress controller for the local cluster. It stands in for
// ingress-nginx (minikube's ingress addon, which upstream's e2e scripts curl through): it serves
// the Ingresses of ingress-nginx's IngressClasses over HTTP, routing by host and path as
// ingress-nginx does (Table), with the rewrite-target and use-regex annotations, to the ready
// endpoints of the backend Services' EndpointSlices, and reports its address in the Ingresses'
// status. No TLS, no other annotations, no resource or default backends. Test and development
// only.
package ingressproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// syncTimeout bounds the informers' first list: the caller's context may live as long as the
// cluster does.
const syncTimeout = time.Minute

// Options configure the controller.
type Options struct {
	// Client talks to the cluster's API server.
	Client kubernetes.Interface
	// Address is where it serves HTTP, host:port; port 0 picks a free port (Addr says which).
	// When the host is an IP address other than the unspecified one, it is what the served
	// Ingresses' status.loadBalancer reports.
	Address string
	// Log receives a line per request it answers itself (404, 503, 502) and per failed status
	// update; nil discards them.
	Log io.Writer
}

// Controller is a running Ingress controller.
type Controller struct {
	opts     Options
	addr     string
	statusIP string

	ingresses  networkinglisters.IngressLister
	classes    networkinglisters.IngressClassLister
	services   corelisters.ServiceLister
	slices     discoverylisters.EndpointSliceLister
	statusKeys workqueue.TypedRateLimitingInterface[types.NamespacedName]

	// The routing table is compiled again on the first request after any change.
	mu       sync.Mutex
	table    *Table
	changed  atomic.Bool
	next     atomic.Uint64 // round-robin over a backend's endpoints
	upstream http.RoundTripper
	done     chan struct{}
}

// Start starts the controller and returns once its informers have synced and it serves on
// opts.Address. It stops when ctx ends; Wait waits for that.
func Start(ctx context.Context, opts Options) (*Controller, error) {
	ln, err := net.Listen("tcp", opts.Address)
	if err != nil {
		return nil, fmt.Errorf("ingress controller: listen: %w", err)
	}
	c := &Controller{opts: opts, addr: ln.Addr().String(), done: make(chan struct{}),
		statusKeys: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]()),
		// Straight to the endpoints: a proxy from the environment cannot reach pod addresses.
		upstream: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}}
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsUnspecified() {
		c.statusIP = ip.String()
	}
	c.changed.Store(true)

	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(opts.Client, 0)
	ingresses := factory.Networking().V1().Ingresses()
	classes := factory.Networking().V1().IngressClasses()
	services := factory.Core().V1().Services()
	endpointSlices := factory.Discovery().V1().EndpointSlices()
	c.ingresses, c.classes = ingresses.Lister(), classes.Lister()
	c.services, c.slices = services.Lister(), endpointSlices.Lister()
	changed := func(any) { c.changed.Store(true) }
	handlers := []struct {
		informer cache.SharedIndexInformer
		handler  func(any)
	}{
		{ingresses.Informer(), func(obj any) { changed(obj); c.queueStatus(obj) }},
		// A class that becomes ingress-nginx's, or the default, brings Ingresses to serve.
		{classes.Informer(), func(obj any) { changed(obj); c.queueAllStatus() }},
		{services.Informer(), changed},
		{endpointSlices.Informer(), changed},
	}
	for _, h := range handlers {
		if _, err := h.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    h.handler,
			UpdateFunc: func(_, obj any) { h.handler(obj) },
			DeleteFunc: h.handler,
		}); err != nil {
			cancel()
			ln.Close()
			return nil, fmt.Errorf("ingress controller: %w", err)
		}
	}
	factory.Start(ctx.Done())
	syncCtx, syncCancel := context.WithTimeout(ctx, syncTimeout)
	synced := factory.WaitForCacheSync(syncCtx.Done())
	syncCancel()
	for typ, ok := range synced {
		if !ok {
			cancel()
			factory.Shutdown()
			ln.Close()
			return nil, fmt.Errorf("ingress controller: the %v informer did not sync within %s", typ, syncTimeout)
		}
	}

	srv := &http.Server{Handler: c, ReadHeaderTimeout: 30 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			c.logf("serve: %v", err)
		}
	}()
	statusDone := make(chan struct{})
	go func() {
		defer close(statusDone)
		for c.syncNextStatus(ctx) {
		}
	}()
	go func() {
		defer cancel()
		<-ctx.Done()
		_ = srv.Close()
		c.statusKeys.ShutDown()
		<-served
		<-statusDone
		factory.Shutdown()
		close(c.done)
	}()
	return c, nil
}

// Addr is the address the controller serves on.
func (c *Controller) Addr() string { return c.addr }

// Wait waits until the controller has stopped (its context ended).
func (c *Controller) Wait() { <-c.done }

// ServeHTTP routes one request.
func (c *Controller) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	route := c.currentTable().Route(r.Host, r.URL.Path)
	if route.Status != 0 {
		c.logf("%s %s%s: %d: %s", r.Method, r.Host, r.URL.Path, route.Status, route.Reason)
		http.Error(w, http.StatusText(route.Status), route.Status)
		return
	}
	endpoint := route.Endpoints[(c.next.Add(1)-1)%uint64(len(route.Endpoints))]
	proxy := &httputil.ReverseProxy{
		Transport: c.upstream,
		// The request keeps its Host header, as ingress-nginx passes it on.
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", endpoint
			if route.Path != pr.In.URL.Path {
				pr.Out.URL.Path, pr.Out.URL.RawPath = route.Path, ""
			}
			pr.SetXForwarded()
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			c.logf("%s %s%s: 502: %s (Ingress %s): %v", r.Method, r.Host, r.URL.Path, endpoint, route.Ingress, err)
			http.Error(w, http.StatusText(http.StatusBadGateway), http.StatusBadGateway)
		},
	}
	proxy.ServeHTTP(w, r)
}

// currentTable compiles the routing table again when something changed since the last one.
func (c *Controller) currentTable() *Table {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changed.Swap(false) {
		previous := c.table
		c.table = NewTable(c.snapshot())
		for _, p := range c.table.Problems {
			if previous == nil || !slices.Contains(previous.Problems, p) {
				c.logf("%s", p)
			}
		}
	}
	return c.table
}

func (c *Controller) snapshot() Snapshot {
	var s Snapshot
	// Listers do not fail on a synced informer's store.
	s.Classes, _ = c.classes.List(labels.Everything())
	s.Ingresses, _ = c.ingresses.List(labels.Everything())
	s.Services, _ = c.services.List(labels.Everything())
	s.EndpointSlices, _ = c.slices.List(labels.Everything())
	return s
}

func (c *Controller) queueStatus(obj any) {
	if c.statusIP == "" {
		return
	}
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if ing, ok := obj.(*networkingv1.Ingress); ok {
		c.statusKeys.Add(types.NamespacedName{Namespace: ing.Namespace, Name: ing.Name})
	}
}

func (c *Controller) queueAllStatus() {
	all, _ := c.ingresses.List(labels.Everything())
	for _, ing := range all {
		c.queueStatus(ing)
	}
}

// syncNextStatus writes the controller's address into the status of the next queued Ingress
// it serves; false once the queue is shut down.
func (c *Controller) syncNextStatus(ctx context.Context) bool {
	key, shutdown := c.statusKeys.Get()
	if shutdown {
		return false
	}
	defer c.statusKeys.Done(key)
	if err := c.syncStatus(ctx, key); err != nil {
		if ctx.Err() == nil {
			c.logf("status of Ingress %s: %v", key, err)
		}
		c.statusKeys.AddRateLimited(key)
		return true
	}
	c.statusKeys.Forget(key)
	return true
}

func (c *Controller) syncStatus(ctx context.Context, key types.NamespacedName) error {
	ing, err := c.ingresses.Ingresses(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	classes, _ := c.classes.List(labels.Everything())
	if !Served(classes, ing) {
		return nil
	}
	want := []networkingv1.IngressLoadBalancerIngress{{IP: c.statusIP}}
	if equality.Semantic.DeepEqual(ing.Status.LoadBalancer.Ingress, want) {
		return nil
	}
	ing = ing.DeepCopy()
	ing.Status.LoadBalancer.Ingress = want
	// A conflict is retried from the informer's newer copy.
	_, err = c.opts.Client.NetworkingV1().Ingresses(ing.Namespace).UpdateStatus(ctx, ing, metav1.UpdateOptions{})
	return err
}

func (c *Controller) logf(format string, args ...any) {
	if c.opts.Log != nil {
		fmt.Fprintf(c.opts.Log, "ingress: "+format+"\n", args...)
	}
}
