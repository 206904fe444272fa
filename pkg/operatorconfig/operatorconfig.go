// Package operatorconfig holds the operator's own configuration as upstream shapes it: a
// ConfigMap with config.yaml (or the legacy flink-conf.yaml) whose kubernetes.operator.* keys
// configure the operator and whose other keys are default Flink configuration for every
// cluster (with per-namespace and per-Flink-version sections). The ConfigMap is watched, and
// a change takes effect at once without a restart; command-line flags given explicitly win.
package operatorconfig

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/extension/endpoint"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/options"
	"github.com/flink-operator/flink-operator/pkg/ratelimit"
	"github.com/flink-operator/flink-operator/pkg/redact"
	"github.com/flink-operator/flink-operator/pkg/shard"
	"github.com/flink-operator/flink-operator/pkg/upstreamoptions"
)

// unboundedParallelism stands for upstream's -1 ("unbounded") reconcile parallelism: workers are
// goroutines here, but each holds a JobManager connection, so there is still a ceiling.
const unboundedParallelism = 256

// Settings is one consistent view of the operator configuration.
type Settings struct {
	ReconcileInterval     time.Duration
	ProgressCheckInterval time.Duration
	RESTTimeout           time.Duration
	// WatchNamespaces is a comma-separated list; empty watches all namespaces.
	WatchNamespaces string
	// ReconcileParallelism is the number of workers of each controller.
	ReconcileParallelism int
	// LabelSelector limits the Flink resources served to those it selects (pkg/shard syntax);
	// empty serves all. Several instances with disjoint selectors split the resources.
	LabelSelector string
	// LeaseName is the leader election Lease; instances serving different shards need their own.
	LeaseName string
	// RateLimit and Retry pace each controller's reconciles (kubernetes.operator.rate-limiter.*
	// and retry.*); the controllers take them when they start.
	RateLimit ratelimit.Limit
	Retry     ratelimit.Retry
	// Defaults are the default Flink configuration of managed clusters.
	Defaults flinkconf.Defaults
}

// Parse reads the ConfigMap's data: config.yaml (flat or nested YAML) or flink-conf.yaml
// (flat "key: value" lines). An empty ConfigMap is an empty configuration.
func Parse(data map[string]string) (map[string]string, error) {
	if raw, ok := data["config.yaml"]; ok {
		js, err := yaml.YAMLToJSON([]byte(raw))
		if err != nil {
			return nil, fmt.Errorf("config.yaml: %w", err)
		}
		if strings.TrimSpace(string(js)) == "null" {
			return map[string]string{}, nil
		}
		var fc flinkv1beta1.FlinkConfiguration
		if err := json.Unmarshal(js, &fc); err != nil {
			return nil, fmt.Errorf("config.yaml: %w", err)
		}
		flat, err := fc.Flatten()
		if err != nil {
			return nil, fmt.Errorf("config.yaml: %w", err)
		}
		return flat, nil
	}
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(data["flink-conf.yaml"]))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("flink-conf.yaml line %d: %q is not \"key: value\"", n, line)
		}
		out[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
	}
	return out, nil
}

// Build derives settings from a parsed configuration over base (the command line), keeping
// the base value of every option named in explicit (flags given on the command line).
func Build(conf map[string]string, base Settings, explicit map[string]bool) (Settings, error) {
	out := base
	nc := flinkconf.Config(conf)
	durations := []struct {
		key  string
		dst  *time.Duration
		flag string
	}{
		{options.ReconcileInterval.Key, &out.ReconcileInterval, "reconcile-interval"},
		{options.ProgressCheckInterval.Key, &out.ProgressCheckInterval, "progress-check-interval"},
		{options.RESTTimeout.Key, &out.RESTTimeout, "flink-rest-timeout"},
	}
	for _, d := range durations {
		if explicit[d.flag] {
			continue
		}
		v, err := nc.Duration(d.key, *d.dst)
		if err != nil {
			return Settings{}, err
		}
		if v <= 0 {
			return Settings{}, fmt.Errorf("%s: must be positive, got %s", d.key, conf[d.key])
		}
		*d.dst = v
	}
	if raw, ok := conf[options.ReconcileParallelism.Key]; ok && !explicit["reconcile-parallelism"] {
		n, err := strconv.Atoi(strings.TrimSpace(raw))
		switch {
		case err != nil || n == 0 || n < -1:
			return Settings{}, fmt.Errorf("%s: %q is not a positive number of workers (or -1, unbounded)", options.ReconcileParallelism.Key, raw)
		case n == -1:
			n = unboundedParallelism
		}
		out.ReconcileParallelism = n
	}
	if ns, ok := conf[options.WatchedNamespaces.Key]; ok && !explicit["watch-namespaces"] {
		out.WatchNamespaces = strings.TrimSpace(ns)
		if out.WatchNamespaces == "JOSDK_ALL_NAMESPACES" { // upstream's spelling of "all"
			out.WatchNamespaces = ""
		}
	}
	if raw, ok := conf[options.LabelSelector.Key]; ok && !explicit["label-selector"] {
		if _, err := shard.Parse(raw); err != nil {
			return Settings{}, err
		}
		out.LabelSelector = strings.TrimSpace(raw)
	}
	if raw, ok := conf[options.LeaseName.Key]; ok && !explicit["leader-election-id"] && strings.TrimSpace(raw) != "" {
		out.LeaseName = strings.TrimSpace(raw)
	}
	var err error
	if out.RateLimit, out.Retry, err = RateLimits(conf); err != nil {
		return Settings{}, err
	}
	defaults, err := flinkconf.DefaultsFromOperatorConfig(conf)
	if err != nil {
		return Settings{}, err
	}
	// A custom validator or listener the administrator asked for cannot be left out unnoticed.
	if err := endpoint.Check(defaults.Operator); err != nil {
		return Settings{}, err
	}
	out.Defaults = defaults
	return out, nil
}

// RateLimits reads upstream's rate-limiter and retry options from conf, their defaults where
// unset (RateLimits(nil) is the defaults). A value out of range is an error naming the option.
func RateLimits(conf map[string]string) (ratelimit.Limit, ratelimit.Retry, error) {
	for _, o := range []options.Option{options.RateLimiterLimit.Option, options.RateLimiterRefreshPeriod.Option,
		options.RetryInitialInterval.Option, options.RetryIntervalMultiplier.Option, options.RetryMaxAttempts.Option,
		options.RetryMaxInterval.Option} {
		if err := o.Check(conf); err != nil {
			return ratelimit.Limit{}, ratelimit.Retry{}, fmt.Errorf("%s: %w", o.Key, err)
		}
	}
	limit := ratelimit.Limit{Max: options.RateLimiterLimit.Get(conf), Period: options.RateLimiterRefreshPeriod.Get(conf)}
	if limit.Enabled() && limit.Period <= 0 {
		return ratelimit.Limit{}, ratelimit.Retry{}, fmt.Errorf("%s: must be positive while %s is above 0, got %q",
			options.RateLimiterRefreshPeriod.Key, options.RateLimiterLimit.Key, conf[options.RateLimiterRefreshPeriod.Key])
	}
	retry := ratelimit.Retry{InitialInterval: options.RetryInitialInterval.Get(conf), Multiplier: options.RetryIntervalMultiplier.Get(conf),
		MaxAttempts: options.RetryMaxAttempts.Get(conf), MaxInterval: options.RetryMaxInterval.Get(conf)}
	for _, c := range []struct {
		key  string
		bad  bool
		want string
	}{
		{options.RetryInitialInterval.Key, retry.InitialInterval <= 0, "a positive duration"},
		{options.RetryIntervalMultiplier.Key, retry.Multiplier < 1, "a number of at least 1"},
		{options.RetryMaxAttempts.Key, retry.MaxAttempts < 0, "0 or more"},
		{options.RetryMaxInterval.Key, options.RetryMaxInterval.IsSet(conf) && retry.MaxInterval <= 0, "a positive duration, or unset (none)"},
	} {
		if c.bad {
			return ratelimit.Limit{}, ratelimit.Retry{}, fmt.Errorf("%s: must be %s, got %q", c.key, c.want, conf[c.key])
		}
	}
	return limit, retry, retry.Validate()
}

// Store holds the current settings and tells subscribers when they change.
type Store struct {
	mu      sync.Mutex
	current Settings
	changed chan struct{}
}

// NewStore starts with initial settings.
func NewStore(initial Settings) *Store {
	return &Store{current: initial, changed: make(chan struct{})}
}

// Get returns the current settings.
func (s *Store) Get() Settings {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current
}

// Set replaces the settings and wakes every Changed channel handed out before.
func (s *Store) Set(v Settings) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current = v
	close(s.changed)
	s.changed = make(chan struct{})
}

// Changed is closed at the next Set.
func (s *Store) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Watcher keeps a Store in line with a ConfigMap.
type Watcher struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string
	// Base is the command line's settings; Explicit names the flags given explicitly.
	Base     Settings
	Explicit map[string]bool
	Store    *Store
	// Log reports each applied configuration and each rejected one.
	Log func(msg string, keysAndValues ...any)
	// Missing, when set, is told whether the ConfigMap exists (at Load and at every change):
	// the operator's flink_operator_config_missing gauge.
	Missing func(missing bool)
	// Warn reports the ConfigMap's deletion.
	Warn func(msg string, keysAndValues ...any)

	// loaded: a configuration was applied from the ConfigMap. Its deletion then keeps that
	// configuration: the operator-wide policy in it (pod security level, Ingress allowlists,
	// validators) must not fail open because an object was deleted.
	loaded atomic.Bool
}

// Load reads the ConfigMap once (a missing ConfigMap is an empty configuration).
func (w *Watcher) Load(ctx context.Context) error {
	cm, err := w.Client.CoreV1().ConfigMaps(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("operator ConfigMap %s/%s: %w", w.Namespace, w.Name, err)
	}
	if err != nil { // not found: upstream's defaults, as without a ConfigMap
		w.setMissing(true)
		return w.apply(nil)
	}
	if err := w.apply(cm.Data); err != nil {
		return err
	}
	w.loaded.Store(true)
	w.setMissing(false)
	return nil
}

func (w *Watcher) setMissing(missing bool) {
	if w.Missing != nil {
		w.Missing(missing)
	}
}

// deleted handles the ConfigMap's deletion: the configuration loaded from it stays in force
// (until it is created again, or the operator restarts), and the deletion is reported.
func (w *Watcher) deleted() {
	w.setMissing(true)
	if !w.loaded.Load() {
		return // never loaded: the defaults are in force already
	}
	if w.Warn != nil {
		w.Warn("operator ConfigMap deleted; keeping the last configuration loaded from it until it is created again (a restart would fall back to the defaults)",
			"configMap", w.Namespace+"/"+w.Name)
	}
}

func (w *Watcher) apply(data map[string]string) error {
	conf, err := Parse(data)
	if err != nil {
		return fmt.Errorf("operator ConfigMap %s/%s: %w", w.Namespace, w.Name, err)
	}
	s, err := Build(conf, w.Base, w.Explicit)
	if err != nil {
		return fmt.Errorf("operator ConfigMap %s/%s: %w", w.Namespace, w.Name, err)
	}
	w.Store.Set(s)
	if w.Log != nil {
		// The options as the ConfigMap sets them, in the words the Apache operator logs them
		// with: runbooks and scripts written for it wait for this line after a change.
		w.Log("Setting default configuration to "+describe(conf), "configMap", w.Namespace+"/"+w.Name)
		w.Log("applied operator configuration", "configMap", w.Namespace+"/"+w.Name,
			"reconcileInterval", s.ReconcileInterval.String(), "progressCheckInterval", s.ProgressCheckInterval.String(),
			"restTimeout", s.RESTTimeout.String(), "watchNamespaces", s.WatchNamespaces, "labelSelector", s.LabelSelector,
			"leaseName", s.LeaseName)
		// Upstream's options this configuration sets that have no effect here are said, never
		// silently ignored (pkg/upstreamoptions says why for each).
		for _, f := range upstreamoptions.Unhonoured(conf) {
			w.Log(f.Message("ignored operator configuration option "), "configMap", w.Namespace+"/"+w.Name)
		}
	}
	return nil
}

// describe writes conf as {key=value, ...} in key order, secret values masked.
func describe(conf map[string]string) string {
	keys := make([]string, 0, len(conf))
	for k := range conf {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		v := conf[k]
		if redact.IsSecretKey(k, nil) {
			v = redact.Mask
		}
		b.WriteString(k + "=" + v)
	}
	b.WriteByte('}')
	return b.String()
}

// Run watches the ConfigMap until ctx ends. A configuration that does not parse is reported
// and ignored: the last good one stays in force.
func (w *Watcher) Run(ctx context.Context) {
	factory := informers.NewSharedInformerFactoryWithOptions(w.Client, 0, informers.WithNamespace(w.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", w.Name).String()
		}))
	inf := factory.Core().V1().ConfigMaps().Informer()
	onChange := func(obj any) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			return
		}
		w.setMissing(false)
		if err := w.apply(cm.Data); err != nil {
			if w.Log != nil {
				w.Log("rejected operator configuration; keeping the previous one", "error", err.Error())
			}
			return
		}
		w.loaded.Store(true)
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onChange,
		UpdateFunc: func(_, obj any) { onChange(obj) },
		DeleteFunc: func(any) { w.deleted() },
	})
	factory.Start(ctx.Done())
	// Deleted between Load and the first list: no delete event comes for it.
	if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		if _, exists, err := inf.GetStore().GetByKey(w.Namespace + "/" + w.Name); err == nil && !exists && w.loaded.Load() {
			w.deleted()
		}
	}
	<-ctx.Done()
	factory.Shutdown()
}
