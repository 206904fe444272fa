package nodeagent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
)

// KubeletAPI is where the agent serves the part of kubelet's API that the API server proxies
// `kubectl logs` and `kubectl exec` to: GET /containerLogs/{namespace}/{pod}/{container} and
// /exec/{namespace}/{pod}/{container}. The agent serves it over HTTPS on 127.0.0.1 (the
// Node's InternalIP) and reports its port in the Node's status.daemonEndpoints, as kubelet
// does; the API server is told to reach nodes at their InternalIP (package localcluster).
type KubeletAPI struct {
	// CertFile and KeyFile are the serving certificate, valid for 127.0.0.1; the API server
	// verifies it with its --kubelet-certificate-authority.
	CertFile, KeyFile string
	// ClientCAFile is the CA that signed the API server's kubelet client certificate
	// (--kubelet-client-certificate). Requests without a client certificate it signed are
	// answered 401, as kubelet answers an unauthenticated request.
	ClientCAFile string
}

// Timeouts of exec sessions, kubelet's defaults: a session with no traffic for 4 hours ends,
// and the client has 30 s to open its streams.
const (
	execIdleTimeout           = 4 * time.Hour
	execStreamCreationTimeout = remotecommand.DefaultStreamCreationTimeout
)

// serveKubeletAPI starts the kubelet API and returns its port; it stops when ctx is done.
func (a *Agent) serveKubeletAPI(ctx context.Context, opts KubeletAPI) (int, error) {
	cert, err := tls.LoadX509KeyPair(opts.CertFile, opts.KeyFile)
	if err != nil {
		return 0, fmt.Errorf("kubelet serving certificate: %w", err)
	}
	caPEM, err := os.ReadFile(opts.ClientCAFile)
	if err != nil {
		return 0, fmt.Errorf("kubelet client CA: %w", err)
	}
	clientCAs := x509.NewCertPool()
	if !clientCAs.AppendCertsFromPEM(caPEM) {
		return 0, fmt.Errorf("kubelet client CA %s: no certificate in it", opts.ClientCAFile)
	}
	// The agent binds at once, so port 0 is safe here: package freeport is for processes that
	// bind a port some time after it was chosen.
	ln, err := tls.Listen("tcp", "127.0.0.1:0", kubeletTLSConfig(cert))
	if err != nil {
		return 0, err
	}
	srv := &http.Server{Handler: a.kubeletHandler(clientCAs), ReadHeaderTimeout: 30 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.logf("kubelet API: %v", err)
		}
	}()
	go func() { <-ctx.Done(); srv.Close() }()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// kubeletTLSConfig asks for a client certificate without verifying it in the handshake: the
// handler verifies it, so that a request without one, or with one of another CA, gets an HTTP
// 401 that says why rather than a failed handshake.
func kubeletTLSConfig(cert tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12}
}

// kubeletHandler routes the kubelet API, for clients with a certificate clientCAs signed.
func (a *Agent) kubeletHandler(clientCAs *x509.CertPool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", a.containerLogs)
	// SPDY clients POST, WebSocket clients GET (kubelet takes both).
	mux.HandleFunc("GET /exec/{namespace}/{pod}/{container}", a.exec)
	mux.HandleFunc("POST /exec/{namespace}/{pod}/{container}", a.exec)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if err := verifyClient(req, clientCAs); err != nil {
			http.Error(w, "Unauthorized: "+err.Error(), http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, req)
	})
}

func verifyClient(req *http.Request, clientCAs *x509.CertPool) error {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return errors.New("no client certificate")
	}
	certs := req.TLS.PeerCertificates
	intermediates := x509.NewCertPool()
	for _, c := range certs[1:] {
		intermediates.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: clientCAs, Intermediates: intermediates,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return fmt.Errorf("client certificate %q: %w", certs[0].Subject.CommonName, err)
	}
	return nil
}

// httpError is an answer other than 200, with kubelet's status code for the case.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

// findContainer returns the runner of a pod's container. A pod the agent does not run, or a
// container its spec does not have, is 404; a container not started yet is 400, as kubelet
// answers for a container that is waiting to start.
func (a *Agent) findContainer(namespace, pod, container string) (*containerRunner, error) {
	a.mu.Lock()
	var r *podRunner
	for _, p := range a.pods {
		if p.pod.Namespace == namespace && p.pod.Name == pod && (r == nil || p.startTime.After(r.startTime.Time)) {
			r = p // a pod recreated under the same name: the newest
		}
	}
	a.mu.Unlock()
	if r == nil {
		return nil, &httpError{http.StatusNotFound, fmt.Sprintf("pod %s/%s not found on this node", namespace, pod)}
	}
	r.mu.Lock()
	runners := append(append([]*containerRunner{}, r.inits...), r.containers...)
	r.mu.Unlock()
	for _, c := range runners {
		if c.spec.Name == container {
			return c, nil
		}
	}
	for _, c := range append(append([]corev1.Container{}, r.pod.Spec.InitContainers...), r.pod.Spec.Containers...) {
		if c.Name == container {
			return nil, &httpError{http.StatusBadRequest, fmt.Sprintf("container %q in pod %q is waiting to start: PodInitializing", container, pod)}
		}
	}
	return nil, &httpError{http.StatusNotFound, fmt.Sprintf("container %q not found in pod %s/%s", container, namespace, pod)}
}

func writeError(w http.ResponseWriter, err error) {
	var he *httpError
	if errors.As(err, &he) {
		http.Error(w, he.msg, he.code)
		return
	}
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

// containerLogs answers GET /containerLogs/{namespace}/{pod}/{container} with the
// container's output: follow, previous, tailLines and limitBytes as kubelet takes them.
func (a *Agent) containerLogs(w http.ResponseWriter, req *http.Request) {
	ns, pod, name := req.PathValue("namespace"), req.PathValue("pod"), req.PathValue("container")
	opts, err := parseLogOptions(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c, err := a.findContainer(ns, pod, name)
	if err != nil {
		writeError(w, err)
		return
	}
	c.mu.Lock()
	run, state := c.logs, c.state
	if opts.previous {
		run = c.prevLogs
	}
	c.mu.Unlock()
	if run == nil {
		switch {
		case opts.previous:
			http.Error(w, fmt.Sprintf("previous terminated container %q in pod %q not found", name, pod), http.StatusBadRequest)
		case state.Running != nil: // a stand-in: running, and silent
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusOK)
		default:
			reason := "ContainerCreating"
			if state.Waiting != nil {
				reason = state.Waiting.Reason
			}
			http.Error(w, fmt.Sprintf("container %q in pod %q is waiting to start: %s", name, pod, reason), http.StatusBadRequest)
		}
		return
	}
	if err := writeLog(req.Context(), w, run, opts); err != nil {
		a.logf("logs of %s/%s/%s: %v", ns, pod, name, err)
	}
}

func parseLogOptions(req *http.Request) (logOptions, error) {
	q := req.URL.Query()
	opts := logOptions{tailLines: -1}
	var err error
	if opts.follow, err = boolParam(q.Get("follow")); err != nil {
		return opts, fmt.Errorf("follow: %w", err)
	}
	if opts.previous, err = boolParam(q.Get("previous")); err != nil {
		return opts, fmt.Errorf("previous: %w", err)
	}
	for _, p := range []struct {
		name string
		into *int64
	}{{"tailLines", &opts.tailLines}, {"limitBytes", &opts.limitBytes}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return opts, fmt.Errorf("%s: want a number of at least 0, got %q", p.name, v)
		}
		*p.into = n
		if p.name == "limitBytes" && n == 0 { // as the API server validates it
			return opts, errors.New("limitBytes: must be greater than 0")
		}
	}
	return opts, nil
}

func boolParam(v string) (bool, error) {
	if v == "" {
		return false, nil
	}
	return strconv.ParseBool(v)
}

// exec runs a command in a container (containerexec.go) over the streams of kubelet's own
// remote command library: SPDY, which the API server speaks to kubelets (translating
// kubectl's WebSocket), and WebSocket up to channel protocol v4.
func (a *Agent) exec(w http.ResponseWriter, req *http.Request) {
	ns, pod, name := req.PathValue("namespace"), req.PathValue("pod"), req.PathValue("container")
	c, err := a.findContainer(ns, pod, name)
	if err != nil {
		writeError(w, err)
		return
	}
	if _, _, err := c.runningExec(); err != nil {
		writeError(w, err)
		return
	}
	streamOpts, err := remotecommand.NewOptions(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	cmd := req.URL.Query()["command"]
	if len(cmd) == 0 {
		http.Error(w, "no command", http.StatusBadRequest)
		return
	}
	remotecommand.ServeExec(w, req, containerExecutor{c}, pod, "", name, cmd, streamOpts,
		execIdleTimeout, execStreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

// runningExec is how to exec in the container's process, and its pid; an error when no
// process runs (a stand-in, or a container waiting or exited).
func (c *containerRunner) runningExec() (*execTarget, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running == nil || c.proc == nil || c.proc.Process == nil {
		return nil, 0, &httpError{http.StatusBadRequest, fmt.Sprintf("container %q is not running a process to exec in", c.spec.Name)}
	}
	return c.running, c.proc.Process.Pid, nil
}
