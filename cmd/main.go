// Command manager runs the flink-operator: a controller-runtime manager with leader
// election, health and readiness probes, a Prometheus metrics endpoint and zap logging.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	_ "k8s.io/client-go/plugin/pkg/client/auth" // exec and OIDC auth for kubeconfigs
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/controllers"
	"github.com/flink-operator/flink-operator/controllers/jobs"
	"github.com/flink-operator/flink-operator/controllers/reconciler"
	"github.com/flink-operator/flink-operator/pkg/artifact"
	"github.com/flink-operator/flink-operator/pkg/cachescope"
	extendpoint "github.com/flink-operator/flink-operator/pkg/extension/endpoint"
	extlistener "github.com/flink-operator/flink-operator/pkg/extension/listener"
	extvalidator "github.com/flink-operator/flink-operator/pkg/extension/validator"
	"github.com/flink-operator/flink-operator/pkg/flink/clients"
	"github.com/flink-operator/flink-operator/pkg/hastore"
	"github.com/flink-operator/flink-operator/pkg/leaderfence"
	opmetrics "github.com/flink-operator/flink-operator/pkg/metrics"
	"github.com/flink-operator/flink-operator/pkg/metricsauth"
	"github.com/flink-operator/flink-operator/pkg/nsshare"
	"github.com/flink-operator/flink-operator/pkg/operatorconfig"
	"github.com/flink-operator/flink-operator/pkg/redact"
	"github.com/flink-operator/flink-operator/pkg/resttls"
	"github.com/flink-operator/flink-operator/pkg/shard"
	"github.com/flink-operator/flink-operator/pkg/validation"
	flinkwebhook "github.com/flink-operator/flink-operator/pkg/webhook"
	"github.com/flink-operator/flink-operator/pkg/webhookcert"
)

// options are the operator's command-line settings.
type options struct {
	metricsAddr          string
	metricsSecure        bool
	probeAddr            string
	pprofAddr            string
	priorityQueue        bool
	nameIndex            bool
	enableLeaderElection bool
	leaderElectionID     string
	leaderElectionNS     string
	leaseDuration        time.Duration
	renewDeadline        time.Duration
	retryPeriod          time.Duration
	watchNamespaces      string
	enableHTTP2          bool
	enableWebhooks       bool
	webhookPort          int
	webhookHost          string
	webhookCertDir       string
	jarSchemes           string
	restURLTemplate      string
	restAddress          string
	artifactMaxSize      int64
	artifactLocalDir     string
	artifactNetworks     string
	zooKeeperNetworks    string
	secretKeyPatterns    string
	configMap            string
	configMapNamespace   string
	// live is the dynamic configuration the reconcilers read (set by run, not a flag).
	live              *operatorconfig.Store
	restTimeout       time.Duration
	reconcileInterval time.Duration
	progressInterval  time.Duration
	// reconcileParallelism is the workers of each controller; reconcileDeadline bounds one reconcile.
	reconcileParallelism int
	reconcileDeadline    time.Duration
	// perNamespace is --max-concurrent-reconciles-per-namespace (0: a quarter of the workers).
	perNamespace int
	// artifactMinThroughput is the slowest average a jar download may keep (bytes/s; 0: off).
	artifactMinThroughput int64
	// rateLimits pace each controller's reconciles (rate-limiter.* and retry.* options; set by run).
	rateLimits reconciler.RateLimits
	// restTLS is the operator's trust for JobManagers with REST SSL (plus upstream's env).
	restTLS resttls.Settings
	// labelSelector limits the Flink resources served to those it selects (sharding, shard.go).
	labelSelector string

	// webhookCerts says who provides the webhook serving certificate (certManagementSelf or
	// certManagementExternal); the other four configure pkg/webhookcert when it is the operator.
	webhookCerts      string
	webhookCertSecret string
	webhookService    string
	webhookCATargets  string
	operatorNamespace string
}

func (o *options) bind(fs *flag.FlagSet) {
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080",
		"Address of the Prometheus metrics endpoint; \"0\" disables it.")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", false,
		"Serve metrics over HTTPS with authentication and authorization through the API server.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz.")
	fs.BoolVar(&o.priorityQueue, "reconcile-priority-queue", true,
		"Queue FlinkDeployment reconciles by priority: a resource whose spec, annotations or deletion changed goes before new resources and "+
			"the operator's routine observations, and the initial list after a start goes last, so a user's change is acted "+
			"on promptly while thousands of resources are queued (controller-runtime's priority queue).")
	fs.BoolVar(&o.nameIndex, "name-index", true,
		"Keep an index of the names of the ConfigMaps, Services, Deployments and Ingresses in the watched namespaces that are not Flink's (metadata only, "+
			"a few hundred bytes an object), so that checking a new Flink cluster's names costs no request to the API server. "+
			"false: each name not among Flink's objects is asked of the API server (one GET, usually a 404, per object of every new cluster).")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "",
		"Address of Go's /debug/pprof profiles (e.g. 127.0.0.1:8082); empty (the default) serves none. Unauthenticated: bind it to loopback.")
	fs.BoolVar(&o.enableLeaderElection, "leader-elect", false,
		"Elect a leader through a Lease so that only one replica reconciles at a time.")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", "flink-operator.flink.apache.org",
		"Name of the Lease used for leader election.")
	fs.DurationVar(&o.leaseDuration, "leader-election-lease-duration", 15*time.Second,
		"How long a standby waits after the leader's last renewal before taking over.")
	fs.DurationVar(&o.renewDeadline, "leader-election-renew-deadline", 10*time.Second,
		"How long the leader keeps trying to renew before it steps down (and exits).")
	fs.DurationVar(&o.retryPeriod, "leader-election-retry-period", 2*time.Second, "Interval of leader election attempts.")
	fs.StringVar(&o.leaderElectionNS, "leader-election-namespace", "",
		"Namespace of the Lease; defaults to the operator's own namespace.")
	fs.StringVar(&o.watchNamespaces, "watch-namespaces", watchNamespacesEnv(os.Getenv),
		"Comma-separated namespaces to watch; empty watches all (env WATCH_NAMESPACE, as set by OLM, else upstream's WATCH_NAMESPACES).")
	fs.StringVar(&o.labelSelector, "label-selector", "",
		"Serve only the FlinkDeployments, FlinkSessionJobs and FlinkStateSnapshots this label selector selects, e.g. shard=a "+
			"(kubernetes.operator.label.selector); empty serves all. Instances with disjoint selectors split the resources.")
	fs.BoolVar(&o.enableHTTP2, "enable-http2", false,
		"Allow HTTP/2 on the metrics and webhook servers (off by default: CVE-2023-44487, CVE-2023-39325).")
	fs.BoolVar(&o.enableWebhooks, "enable-webhooks", true,
		"Serve the admission webhooks (needs a serving certificate in --webhook-cert-dir).")
	fs.IntVar(&o.webhookPort, "webhook-port", 9443, "Port of the webhook server.")
	fs.StringVar(&o.webhookHost, "webhook-bind-address", "",
		"Address the webhook server listens on; empty listens on every address (in a pod, the API server reaches it through its Service). "+
			"127.0.0.1 serves an API server on the same machine only (make run-local).")
	fs.StringVar(&o.webhookCertDir, "webhook-cert-dir", "",
		"Directory with tls.crt and tls.key; reloaded when they change. Default /tmp/k8s-webhook-server/serving-certs (where OLM mounts them).")
	fs.StringVar(&o.webhookCerts, "webhook-cert-management", certManagementExternal,
		"Who provides the webhook serving certificate: \"external\" (OLM or cert-manager mounts it in --webhook-cert-dir) or \"self\" "+
			"(the operator issues and rotates it in --webhook-cert-secret, writes it to --webhook-cert-dir and puts its CA into --webhook-ca-targets).")
	fs.StringVar(&o.webhookCertSecret, "webhook-cert-secret", "flink-operator-webhook-server-cert",
		"With --webhook-cert-management=self: the Secret in the operator's namespace (env OPERATOR_NAMESPACE or POD_NAMESPACE) that keeps the CA and the serving certificate; it must exist.")
	fs.StringVar(&o.webhookService, "webhook-service", "flink-operator-webhook-service",
		"With --webhook-cert-management=self: the Service in the operator's namespace the webhooks are called through (the certificate's DNS names).")
	fs.StringVar(&o.webhookCATargets, "webhook-ca-targets",
		"ValidatingWebhookConfiguration/flink-operator-validating-webhook-configuration,MutatingWebhookConfiguration/flink-operator-mutating-webhook-configuration",
		"With --webhook-cert-management=self: comma-separated Kind/name of the objects whose clientConfigs calling --webhook-service get the CA "+
			"(ValidatingWebhookConfiguration, MutatingWebhookConfiguration, CustomResourceDefinition).")
	o.operatorNamespace = envOr("OPERATOR_NAMESPACE", os.Getenv("POD_NAMESPACE"))
	fs.StringVar(&o.restURLTemplate, "flink-rest-url-template", clients.DefaultRESTURLTemplate,
		"Where a cluster's JobManager REST endpoint is; {{name}}, {{namespace}} and {{port}} are replaced. "+
			"Change it when the operator runs outside the cluster (e.g. behind kubectl proxy or a port-forward).")
	fs.StringVar(&o.restAddress, "flink-rest-address", clients.RESTAddressService,
		"How the operator addresses JobManagers: \"service\" uses --flink-rest-url-template; \"pod-ip\" uses the address "+
			"of a ready JobManager pod behind the REST Service (operator outside the cluster with routable pod IPs).")
	fs.StringVar(&o.restTLS.CAFile, resttls.FlagCAFile[2:], "",
		"PEM CA bundle trusted for JobManagers whose configuration turns REST SSL on (security.ssl.rest.enabled).")
	fs.StringVar(&o.restTLS.TruststoreDir, resttls.FlagTruststoreDir[2:], "",
		"Directory below which a cluster's own security.ssl.rest.truststore may be read and trusted for that cluster; empty reads none.")
	fs.StringVar(&o.restTLS.ClientCertFile, resttls.FlagClientCertFile[2:], "",
		"PEM client certificate for clusters with security.ssl.rest.authentication-enabled (or env OPERATOR_KEYSTORE_PATH).")
	fs.StringVar(&o.restTLS.ClientKeyFile, resttls.FlagClientKeyFile[2:], "", "PEM key of --flink-rest-client-cert-file.")
	fs.DurationVar(&o.restTimeout, "flink-rest-timeout", 10*time.Second, "Timeout of a Flink REST call (kubernetes.operator.flink.client.timeout).")
	fs.DurationVar(&o.reconcileInterval, "reconcile-interval", reconciler.DefaultIntervals.Reconcile,
		"How often a settled resource is looked at (kubernetes.operator.reconcile.interval).")
	fs.DurationVar(&o.progressInterval, "progress-check-interval", reconciler.DefaultIntervals.ProgressCheck,
		"How often a resource in motion is looked at (kubernetes.operator.observer.progress-check.interval).")
	fs.IntVar(&o.reconcileParallelism, "reconcile-parallelism", reconciler.DefaultReconcileParallelism,
		"Resources of one kind reconciled at a time (kubernetes.operator.reconcile.parallelism; upstream's -1, unbounded, is taken as 256).")
	fs.DurationVar(&o.reconcileDeadline, "reconcile-timeout", reconciler.DefaultReconcileDeadline,
		"Longest time one reconcile may take; a JobManager or jar host that never answers gives its worker back after it.")
	fs.IntVar(&o.perNamespace, "max-concurrent-reconciles-per-namespace", 0,
		"Reconciles of one namespace each controller runs at once while they are slow (one has run 1 s, or the last took that long), "+
			"so that one tenant's slow resources cannot take every worker; a namespace whose reconciles are fast is not held to it. "+
			"The others wait their turn, retried within 2 s. 0 is a quarter of --reconcile-parallelism (at least 1).")
	fs.StringVar(&o.configMap, "config-map", "",
		"Operator ConfigMap (config.yaml or flink-conf.yaml, upstream's format): kubernetes.operator.* options and default "+
			"Flink configuration, watched and applied without a restart. Flags given explicitly win over it.")
	fs.StringVar(&o.configMapNamespace, "config-map-namespace", envOr("OPERATOR_NAMESPACE", os.Getenv("POD_NAMESPACE")),
		"Namespace of --config-map (env OPERATOR_NAMESPACE or POD_NAMESPACE).")
	fs.StringVar(&o.secretKeyPatterns, "secret-key-patterns", strings.Join(redact.DefaultKeyPatterns, ","),
		"Comma-separated, case-insensitive substrings of Flink configuration keys whose values are masked in logs, events and status.")
	fs.Int64Var(&o.artifactMaxSize, "artifact-max-size", artifact.DefaultMaxSize,
		"Largest session job jar the operator fetches and uploads, in bytes.")
	fs.Int64Var(&o.artifactMinThroughput, "artifact-min-throughput", artifact.DefaultMinThroughput,
		"Slowest average rate, in bytes per second, a session job jar download may keep once it has waited on the server "+
			"for 10 s; a slower one fails (a trickling server would hold a worker for the whole --reconcile-timeout). 0 turns it off.")
	fs.StringVar(&o.artifactLocalDir, "artifact-local-dir", "",
		"Directory that file:// and local:// session job jars must be in (symlinks may not leave it); empty refuses them.")
	fs.StringVar(&o.artifactNetworks, "artifact-allowed-networks", "",
		"Comma-separated CIDRs that session job jar downloads may connect to although they are not public addresses "+
			"(loopback, private, link-local, CGNAT and other special-purpose ranges are refused by default), "+
			"e.g. the range of an in-cluster artifact repository.")
	fs.StringVar(&o.zooKeeperNetworks, "zookeeper-allowed-networks", "",
		"Comma-separated CIDRs that ZooKeeper HA quorums (high-availability.zookeeper.quorum) may be in although they are not "+
			"public addresses (same policy as --artifact-allowed-networks), e.g. the pod or Service range of an in-cluster ZooKeeper.")
	fs.StringVar(&o.jarSchemes, "allowed-jar-schemes", strings.Join(validation.DefaultJarSchemes, ","),
		"Comma-separated jarURI schemes session jobs may use (upstream's user.artifacts.allowed-schemes).")
}

// Values of --webhook-cert-management.
const (
	certManagementExternal = "external"
	certManagementSelf     = "self"
)

// certRotator builds the webhook certificate rotator for --webhook-cert-management=self; nil
// when the certificate comes from elsewhere.
func (o *options) certRotator(cfg *rest.Config, scheme *runtime.Scheme) (*webhookcert.Rotator, error) {
	switch o.webhookCerts {
	case certManagementExternal, "": // empty: the default
		return nil, nil
	case certManagementSelf:
	default:
		return nil, fmt.Errorf("--webhook-cert-management %q: allowed: %s, %s", o.webhookCerts, certManagementSelf, certManagementExternal)
	}
	if !o.enableWebhooks {
		return nil, nil
	}
	if o.operatorNamespace == "" {
		return nil, errors.New("--webhook-cert-management=self needs the operator's namespace (env OPERATOR_NAMESPACE or POD_NAMESPACE)")
	}
	targets, err := webhookcert.ParseTargets(o.webhookCATargets)
	if err != nil {
		return nil, fmt.Errorf("--webhook-ca-targets: %w", err)
	}
	if o.webhookCertSecret == "" || o.webhookService == "" {
		return nil, errors.New("--webhook-cert-management=self needs --webhook-cert-secret and --webhook-service")
	}
	// Uncached: the rotator reads its objects by name only, which its RBAC is restricted to.
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("webhook certificate client: %w", err)
	}
	certDir := o.webhookCertDir
	if certDir == "" {
		certDir = filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs") // the webhook server's default
	}
	return &webhookcert.Rotator{Client: c, CertDir: certDir, Targets: targets,
		Secret:  types.NamespacedName{Namespace: o.operatorNamespace, Name: o.webhookCertSecret},
		Service: webhookcert.Service{Namespace: o.operatorNamespace, Name: o.webhookService},
		Log:     ctrl.Log.WithName("webhook-cert")}, nil
}

// intervals are the reconcilers' timing settings.
func (o *options) intervals() reconciler.Intervals {
	return reconciler.Intervals{Reconcile: o.reconcileInterval, ProgressCheck: o.progressInterval, Deadline: o.reconcileDeadline}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// leaderFence builds the fence of this replica's leader lease and the fenced lock the
// manager's election takes; both nil with leader election off (the only replica always
// leads). The fence lets a replica change clusters until its last renewal is as old as the
// renew deadline, when its elector would give up too: the lease duration minus the renew
// deadline is left for a call to arrive before a standby may take over.
func (o *options) leaderFence(cfg *rest.Config) (*leaderfence.Fence, *leaderfence.Election, error) {
	if !o.enableLeaderElection {
		return nil, nil, nil
	}
	lease, renew := o.leaseDuration, o.renewDeadline
	if lease <= 0 {
		lease = 15 * time.Second // controller-runtime's default
	}
	if renew <= 0 {
		renew = 10 * time.Second
	}
	fence, err := leaderfence.New(lease - renew)
	if err != nil {
		return nil, nil, fmt.Errorf("--leader-election-lease-duration (%s) must be longer than --leader-election-renew-deadline (%s): %w", lease, renew, err)
	}
	election, err := leaderfence.NewElection(fence, cfg, leaderelection.Options{LeaderElection: true,
		LeaderElectionID: o.leaderElectionID, LeaderElectionNamespace: o.leaderElectionNS, RenewDeadline: renew}, os.Getenv("POD_NAME"))
	if err != nil {
		return nil, nil, fmt.Errorf("leader election lock: %w", err)
	}
	return fence, election, nil
}

func durationOrNil(d time.Duration) *time.Duration {
	if d <= 0 {
		return nil // controller-runtime's default
	}
	return &d
}

// keyPatterns parses --secret-key-patterns; nil (the defaults) when unset.
func (o *options) keyPatterns() []string {
	var out []string
	for _, p := range strings.Split(o.secretKeyPatterns, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// artifacts builds the fetcher of session job jars.
func (o *options) artifacts() (*artifact.Fetcher, error) {
	networks, err := o.allowedNetworks()
	if err != nil {
		return nil, err
	}
	minThroughput := o.artifactMinThroughput
	switch {
	case minThroughput < 0:
		return nil, fmt.Errorf("--artifact-min-throughput must be 0 (off) or a positive number of bytes per second, not %d", minThroughput)
	case minThroughput == 0:
		minThroughput = -1 // the fetcher's zero is its default
	}
	return &artifact.Fetcher{MaxSize: o.artifactMaxSize, LocalDir: o.artifactLocalDir, AllowedNetworks: networks,
		MinThroughput: minThroughput}, nil
}

// namespaceShare is each controller's reconciles of one namespace at once
// (--max-concurrent-reconciles-per-namespace), resolved against the workers: 0 is a quarter of
// them.
func (o *options) namespaceShare() (int, error) {
	return nsshare.Resolve("--max-concurrent-reconciles-per-namespace", o.perNamespace, o.reconcileParallelism)
}

// allowedNetworks are the non-public ranges session job jars may come from
// (--artifact-allowed-networks): the fetcher connects to them and the validator accepts them.
func (o *options) allowedNetworks() ([]netip.Prefix, error) {
	return parseNetworks("--artifact-allowed-networks", o.artifactNetworks)
}

// zooKeeper is the policy for the ZooKeeper HA quorums tenants name
// (--zookeeper-allowed-networks): the operator reads and deletes HA metadata there.
func (o *options) zooKeeper() (hastore.ZooKeeperPolicy, error) {
	networks, err := parseNetworks("--zookeeper-allowed-networks", o.zooKeeperNetworks)
	if err != nil {
		return hastore.ZooKeeperPolicy{}, err
	}
	return hastore.ZooKeeperPolicy{AllowedNetworks: networks}, nil
}

func parseNetworks(flag, value string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(value, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// validator builds the validation rules the webhooks (and reconcilers) apply.
func (o *options) validator() *validation.Validator {
	var schemes []string
	for _, s := range strings.Split(o.jarSchemes, ",") {
		if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
			schemes = append(schemes, s)
		}
	}
	// Parse errors are reported where the fetcher is built (artifacts), before anything starts.
	networks, _ := o.allowedNetworks()
	v := &validation.Validator{AllowedJarSchemes: schemes, Resolver: net.DefaultResolver, AllowedNetworks: networks}
	if live := o.live; live != nil {
		// The webhook applies the operator-wide policy (pod security level, Ingress annotations)
		// in force now, as the reconcilers do.
		v.OperatorConfig = func() map[string]string { return live.Get().Defaults.Operator }
	}
	return v
}

// extensions are the custom validators and resource listeners of the operator configuration
// in force (kubernetes.operator.extension.*, pkg/extension), read at every use.
func (o *options) extensions(mgr ctrl.Manager) (*extvalidator.Chain, *extlistener.Dispatcher, error) {
	conf := func() map[string]string { return nil }
	if live := o.live; live != nil {
		conf = func() map[string]string { return live.Get().Defaults.Operator }
	}
	log := ctrl.Log.WithName("extension")
	custom := &extvalidator.Chain{OperatorConfig: conf, SecretKeyPatterns: o.keyPatterns(),
		OnFailure: func(name string, policy extendpoint.FailurePolicy, err error) {
			log.Info("custom validator did not answer", "validator", name, "failurePolicy", policy, "error", err.Error())
		}}
	m, err := extlistener.NewMetrics(ctrlmetrics.Registry)
	if err != nil {
		return nil, nil, err
	}
	// Every event and lifecycle change is also written to the operator's log (AuditLog).
	listeners := &extlistener.Dispatcher{OperatorConfig: conf, Metrics: m, Log: log,
		Embedded: []extlistener.Listener{extlistener.AuditLog{Log: ctrl.Log.WithName("audit")}}}
	if err := mgr.Add(listeners); err != nil { // stops the deliveries with the manager
		return nil, nil, fmt.Errorf("add resource listeners: %w", err)
	}
	return custom, listeners, nil
}

// namespaces parses the watched-namespaces option into the cache's per-namespace settings;
// nil means all namespaces.
func (o *options) namespaces() (map[string]cache.Config, error) {
	if strings.TrimSpace(o.watchNamespaces) == "" {
		return nil, nil
	}
	out := map[string]cache.Config{}
	for _, ns := range strings.Split(o.watchNamespaces, ",") {
		ns = strings.TrimSpace(ns)
		if ns == "" {
			continue
		}
		if strings.ContainsAny(ns, " /") {
			return nil, fmt.Errorf("--watch-namespaces: %q is not a namespace name", ns)
		}
		out[ns] = cache.Config{}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func newScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(flinkv1beta1.AddToScheme(scheme))
	return scheme
}

// newManager builds the manager from the options; controllers are added by their own packages.
// clusterObjects is the reader of the ownership check before a Flink cluster's objects are
// written: the caches, then the name index (--name-index), then the API server for a name
// someone else holds (cachescope.Lookup).
func (o options) clusterObjects(cfg *rest.Config, mgr manager.Manager, namespaces map[string]cache.Config) (client.Reader, error) {
	lookup := cachescope.Lookup{Cache: mgr.GetCache(), Live: mgr.GetAPIReader()}
	if !o.nameIndex {
		return lookup, nil
	}
	names, err := cachescope.NewNameIndex(cfg, mgr.GetScheme(), namespaces)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(names); err != nil {
		return nil, fmt.Errorf("add name index: %w", err)
	}
	// Ready only once the index has listed: before, every new cluster's ownership check asked
	// the API server for names it would have answered (404s the bench counts).
	if err := mgr.AddReadyzCheck("name-index", cacheSynced(names)); err != nil {
		return nil, fmt.Errorf("add readiness check: %w", err)
	}
	lookup.Names = names
	return lookup, nil
}

func newManager(cfg *rest.Config, o options) (manager.Manager, error) {
	namespaces, err := o.namespaces()
	if err != nil {
		return nil, err
	}
	selector, err := shard.Parse(o.labelSelector)
	if err != nil {
		return nil, fmt.Errorf("--label-selector: %w", err)
	}
	if o.restAddress != "" && o.restAddress != clients.RESTAddressService && o.restAddress != clients.RESTAddressPodIP {
		return nil, fmt.Errorf("--flink-rest-address %q: allowed: %s, %s", o.restAddress, clients.RESTAddressService, clients.RESTAddressPodIP)
	}
	var tlsOpts []func(*tls.Config)
	if !o.enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metrics := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.metricsSecure, TLSOpts: tlsOpts}
	if o.metricsSecure {
		// Callers authenticate with a bearer token (TokenReview) and need get on the
		// nonResourceURL /metrics (SubjectAccessReview): the metrics-reader ClusterRole.
		metrics.FilterProvider = metricsauth.FilterProvider
	}
	scheme := newScheme()
	rotator, err := o.certRotator(cfg, scheme)
	if err != nil {
		return nil, err
	}
	fence, election, err := o.leaderFence(cfg)
	if err != nil {
		return nil, err
	}
	var lock resourcelock.Interface
	if election != nil {
		lock = election.Lock
	}
	webhookServer := webhook.NewServer(webhook.Options{Host: o.webhookHost, Port: o.webhookPort, CertDir: o.webhookCertDir, TLSOpts: tlsOpts})
	if rotator != nil {
		webhookServer = webhookcert.GatedServer{Server: webhookServer, Ready: rotator.CertReady()}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metrics,
		WebhookServer:           webhookServer,
		HealthProbeBindAddress:  o.probeAddr,
		PprofBindAddress:        o.pprofAddr,
		LeaderElection:          o.enableLeaderElection,
		LeaderElectionID:        o.leaderElectionID,
		LeaderElectionNamespace: o.leaderElectionNS,
		LeaseDuration:           durationOrNil(o.leaseDuration),
		RenewDeadline:           durationOrNil(o.renewDeadline),
		RetryPeriod:             durationOrNil(o.retryPeriod),
		// The operator exits right after losing the lease, so stepping down early is safe
		// and lets a standby take over without waiting for the lease to expire.
		LeaderElectionReleaseOnCancel: true,
		// The lock is controller-runtime's own, wrapped so that the fence sees each renewal.
		LeaderElectionResourceLockInterface: lock,
		// The caches hold Flink's objects only, not every Pod, ConfigMap, Service, Deployment
		// and Ingress of the watched namespaces; the client confirms with the API server what
		// they do not hold (pkg/cachescope).
		Cache:     shardCache(cachescope.Options(namespaces), selector),
		NewClient: cachescope.NewClient,
		// run rebuilds the manager in-process when the watched namespaces change; controller
		// names are unique per manager, not per process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: o.reconcileParallelism},
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if election != nil {
		election.SetRecorders(mgr)
	}
	if err := o.addHealthChecks(mgr); err != nil {
		return nil, err
	}
	validator := o.validator()
	// Metrics go to controller-runtime's registry, served on the metrics endpoint with its own
	// controller, workqueue and client metrics.
	opMetrics := opmetrics.NewOperator(mgr.GetCache(), mgr.Elected())
	if err := opmetrics.Register(ctrlmetrics.Registry, opMetrics.Collectors()...); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	custom, listeners, err := o.extensions(mgr)
	if err != nil {
		return nil, err
	}
	artifacts, err := o.artifacts()
	if err != nil {
		return nil, err
	}
	zooKeeper, err := o.zooKeeper()
	if err != nil {
		return nil, err
	}
	restTLS := o.restTLS.WithEnv(os.Getenv)
	if err := restTLS.Check(); err != nil {
		return nil, fmt.Errorf("flink REST TLS: %w", err)
	}
	// One REST client factory for all reconcilers: same addressing, timeout, TLS and metrics.
	// The REST Service checked before every client (and the JobManager pods in pod-ip mode) is
	// read from the cache, which holds the cluster's labelled objects and asks the API server
	// only for a name it cannot see: a reconcile of a running cluster costs no request.
	flinkClients := &clients.Factory{URLTemplate: o.restURLTemplate, Address: o.restAddress,
		Endpoints: mgr.GetClient(), Timeout: o.restTimeout, OnCall: opMetrics.REST.Observe, TLS: restTLS, Fence: fence}
	// core/v1 Events, as upstream records them. GetEventRecorder (events.k8s.io) takes another
	// recorder interface throughout the controllers: a change of its own, not part of the
	// controller-runtime upgrade.
	recorder := mgr.GetEventRecorderFor("flink-operator") //nolint:staticcheck // SA1019: see above
	clusterObjects, err := o.clusterObjects(cfg, mgr, namespaces)
	if err != nil {
		return nil, err
	}
	if err := controllers.SetupReconcilers(mgr, controllers.Setup{
		ReconcilerOptions: reconciler.ReconcilerOptions{CustomValidator: custom, Listener: listeners, PriorityQueue: o.priorityQueue,
			Lifecycle: opMetrics.Lifecycle, SecretKeyPatterns: o.keyPatterns(), Live: o.live, RateLimits: o.rateLimits},
		Client: mgr.GetClient(), ClusterObjects: clusterObjects,
		// A snapshot's job (and a session job's cluster) may be in another shard: followed
		// through to the API server, not abandoned as missing (shard.ReadThrough).
		SnapshotClient: shard.ReadThrough{Client: mgr.GetClient(), Live: mgr.GetAPIReader()},
		Recorder:       recorder, Flink: flinkClients, Validator: validator, Intervals: o.intervals(),
		Autoscaling: &jobs.Autoscaling{Metrics: opMetrics.Autoscaler}, Artifacts: artifacts, Shard: selector, ZooKeeper: zooKeeper,
	}); err != nil {
		return nil, err
	}
	if err := o.addWebhooks(mgr, validator, custom, rotator); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("informers", cacheSynced(mgr.GetCache())); err != nil {
		return nil, fmt.Errorf("add readiness check: %w", err)
	}
	return mgr, nil
}

// addHealthChecks adds the liveness checks: the manager answers, and no reconcile has run for
// longer than twice the reconcile deadline.
func (o *options) addHealthChecks(mgr ctrl.Manager) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}
	if o.reconcileDeadline > 0 {
		if err := mgr.AddHealthzCheck(stuckReconcilesCheck, stuckReconciles(ctrlmetrics.Registry, 2*o.reconcileDeadline)); err != nil {
			return fmt.Errorf("add health check: %w", err)
		}
	}
	return nil
}

// addWebhooks serves the admission webhooks, when enabled, with their readiness checks and the
// certificate rotator when the operator issues its own certificate.
func (o *options) addWebhooks(mgr ctrl.Manager, validator *validation.Validator, custom *extvalidator.Chain, rotator *webhookcert.Rotator) error {
	if !o.enableWebhooks {
		return nil
	}
	if err := flinkwebhook.Setup(mgr, validator, custom); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return fmt.Errorf("add webhook readiness check: %w", err)
	}
	if rotator != nil {
		if err := mgr.Add(rotator); err != nil {
			return fmt.Errorf("add webhook certificate rotator: %w", err)
		}
		if err := mgr.AddReadyzCheck("webhook-cert", rotator.ReadyCheck()); err != nil {
			return fmt.Errorf("add webhook certificate readiness check: %w", err)
		}
	}
	return nil
}

// cacheSynced fails readiness until the informer caches have synced, so that a replica that
// cannot see the cluster is not reported ready.
func cacheSynced(c interface{ WaitForCacheSync(context.Context) bool }) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("informer caches are not synced")
		}
		return nil
	}
}

func main() {
	var o options
	o.bind(flag.CommandLine)
	zapOpts := zap.Options{Development: false}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")
	containerLimit := setMemoryLimit(log, memlimit.FromCgroup)
	percent := setGCPercent(log, os.Getenv)
	ctx := ctrl.SetupSignalHandler()
	if tuner := newMemoryTuner(os.Getenv, percent, containerLimit); tuner != nil {
		go tuner.run(ctx)
	}

	explicit := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	if watchNamespacesEnv(os.Getenv) != "" { // OLM's install modes set it; it wins, as upstream's env does
		explicit["watch-namespaces"] = true
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "no Kubernetes configuration (kubeconfig or in-cluster)")
		os.Exit(1)
	}
	if err := run(ctx, cfg, o, explicit); err != nil {
		log.Error(err, "operator stopped with an error")
		os.Exit(1)
	}
}

// errConfigMapDeleted is logged (at error level, the most visible) when the operator ConfigMap
// is deleted while the operator runs on the configuration loaded from it.
var errConfigMapDeleted = errors.New("operator ConfigMap deleted")

// run runs the manager until ctx ends. With --config-map, the ConfigMap is loaded first (a
// configuration that does not parse stops the start) and then watched: intervals, the REST
// timeout and default Flink configuration apply from the next reconcile; a change of the
// watched namespaces, label selector, lease or parallelism restarts the controllers in-process
// (the caches are per namespace and selector).
func run(ctx context.Context, cfg *rest.Config, o options, explicit map[string]bool) error {
	log := ctrl.Log.WithName("setup")
	limit, retry, err := operatorconfig.RateLimits(nil) // upstream's defaults; no flags
	if err != nil {
		return err
	}
	store := operatorconfig.NewStore(operatorconfig.Settings{ReconcileInterval: o.reconcileInterval,
		ProgressCheckInterval: o.progressInterval, RESTTimeout: o.restTimeout, WatchNamespaces: o.watchNamespaces,
		ReconcileParallelism: o.reconcileParallelism, LabelSelector: o.labelSelector, LeaseName: o.leaderElectionID,
		RateLimit: limit, Retry: retry})
	if err := watchOperatorConfig(ctx, cfg, o, explicit, store); err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	if err := waitForKinds(ctx, dc, flinkv1beta1.GroupVersion, servedKinds, 2*time.Second, 30*time.Second, log); err != nil {
		return err
	}
	o.live = store
	for {
		changed := store.Changed()
		settings := store.Get()
		o.watchNamespaces, o.reconcileParallelism = settings.WatchNamespaces, settings.ReconcileParallelism
		o.labelSelector, o.leaderElectionID = settings.LabelSelector, settings.LeaseName
		perNamespace, err := o.namespaceShare()
		if err != nil {
			return err
		}
		o.rateLimits = reconciler.RateLimits{Retry: settings.Retry, Limit: settings.RateLimit, PerNamespace: perNamespace}
		mgr, err := newManager(cfg, o)
		if err != nil {
			return err
		}
		mctx, cancel := context.WithCancel(ctx)
		restart := make(chan struct{})
		go func() {
			for {
				select {
				case <-mctx.Done():
					return
				case <-changed:
					changed = store.Changed()
					if needsRestart(settings, store.Get()) {
						close(restart)
						cancel()
						return
					}
				}
			}
		}()
		log.Info("starting manager", "watchNamespaces", settings.WatchNamespaces, "labelSelector", settings.LabelSelector,
			"leaderElection", o.enableLeaderElection, "lease", o.leaderElectionID)
		err = mgr.Start(mctx)
		cancel()
		select {
		case <-restart:
			now := store.Get()
			log.Info("watched namespaces, label selector, lease, reconcile parallelism, rate limits or retries changed; restarting the controllers",
				"watchNamespaces", now.WatchNamespaces, "labelSelector", now.LabelSelector, "lease", now.LeaseName,
				"reconcileParallelism", now.ReconcileParallelism)
			continue
		default:
		}
		return err
	}
}

// watchOperatorConfig loads the operator ConfigMap named by --config-map into store (a
// configuration that does not parse stops the start) and keeps watching it; nothing without
// --config-map.
func watchOperatorConfig(ctx context.Context, cfg *rest.Config, o options, explicit map[string]bool, store *operatorconfig.Store) error {
	if o.configMap == "" {
		return nil
	}
	if o.configMapNamespace == "" {
		return errors.New("--config-map needs --config-map-namespace (or env OPERATOR_NAMESPACE / POD_NAMESPACE)")
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	w := &operatorconfig.Watcher{Client: kc, Namespace: o.configMapNamespace, Name: o.configMap,
		Base: store.Get(), Explicit: explicit, Store: store,
		Log: func(msg string, kv ...any) { ctrl.Log.WithName("config").Info(msg, kv...) },
		Missing: func(m bool) {
			if m {
				opmetrics.ConfigMissing.Set(1)
			} else {
				opmetrics.ConfigMissing.Set(0)
			}
		},
		Warn: func(msg string, kv ...any) {
			ctrl.Log.WithName("config").Error(errConfigMapDeleted, msg, kv...)
		}}
	if err := w.Load(ctx); err != nil {
		return err
	}
	go w.Run(ctx)
	return nil
}
