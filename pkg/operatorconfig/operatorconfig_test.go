package operatorconfig

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-operator/flink-operator/pkg/options"
	"github.com/flink-operator/flink-operator/pkg/ratelimit"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		data map[string]string
		want map[string]string
		err  string
	}{
		{name: "flat config.yaml", data: map[string]string{"config.yaml": "kubernetes.operator.reconcile.interval: 15 s\ntaskmanager.numberOfTaskSlots: 2\n"},
			want: map[string]string{"kubernetes.operator.reconcile.interval": "15 s", "taskmanager.numberOfTaskSlots": "2"}},
		{name: "nested config.yaml", data: map[string]string{"config.yaml": "kubernetes:\n  operator:\n    watched:\n      namespaces: a,b\n"},
			want: map[string]string{"kubernetes.operator.watched.namespaces": "a,b"}},
		{name: "legacy flink-conf.yaml", data: map[string]string{"flink-conf.yaml": "# comment\nkubernetes.operator.flink.client.timeout: 30s\nenv.java.opts: -Da=b\n"},
			want: map[string]string{"kubernetes.operator.flink.client.timeout": "30s", "env.java.opts": "-Da=b"}},
		{name: "empty", data: nil, want: map[string]string{}},
		{name: "bad legacy line", data: map[string]string{"flink-conf.yaml": "not a pair"}, err: `line 1: "not a pair"`},
		{name: "bad yaml", data: map[string]string{"config.yaml": "a: [b"}, err: "config.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.data)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestBuild(t *testing.T) {
	base := Settings{ReconcileInterval: time.Minute, ProgressCheckInterval: 10 * time.Second, RESTTimeout: 10 * time.Second}
	conf := map[string]string{
		options.ReconcileInterval.Key: "15 s", options.ProgressCheckInterval.Key: "5s", options.RESTTimeout.Key: "1 min", options.WatchedNamespaces.Key: "team-a, team-b",
		"taskmanager.numberOfTaskSlots": "4",
		"kubernetes.operator.default-configuration.namespace.team-a.parallelism.default": "8",
	}
	s, err := Build(conf, base, nil)
	require.NoError(t, err)
	assert.Equal(t, 15*time.Second, s.ReconcileInterval)
	assert.Equal(t, 5*time.Second, s.ProgressCheckInterval)
	assert.Equal(t, time.Minute, s.RESTTimeout)
	assert.Equal(t, "team-a, team-b", s.WatchNamespaces)
	assert.Equal(t, "4", s.Defaults.Base["taskmanager.numberOfTaskSlots"])
	assert.Equal(t, "8", s.Defaults.Namespace["team-a"]["parallelism.default"])
	assert.NotContains(t, s.Defaults.Base, options.ReconcileInterval.Key, "operator options never reach Flink")

	s, err = Build(conf, base, map[string]bool{"reconcile-interval": true, "watch-namespaces": true})
	require.NoError(t, err)
	assert.Equal(t, time.Minute, s.ReconcileInterval, "an explicit flag wins")
	assert.Empty(t, s.WatchNamespaces)

	s, err = Build(map[string]string{options.WatchedNamespaces.Key: "JOSDK_ALL_NAMESPACES"}, Settings{WatchNamespaces: "x", ReconcileInterval: 1, ProgressCheckInterval: 1, RESTTimeout: 1}, nil)
	require.NoError(t, err)
	assert.Empty(t, s.WatchNamespaces, "upstream's all-namespaces value")

	_, err = Build(map[string]string{options.ReconcileInterval.Key: "soon"}, base, nil)
	require.ErrorContains(t, err, "kubernetes.operator.reconcile.interval")
	_, err = Build(map[string]string{options.ProgressCheckInterval.Key: "0"}, base, nil)
	require.ErrorContains(t, err, "must be positive")
}

func TestBuildReconcileParallelism(t *testing.T) {
	base := Settings{ReconcileInterval: time.Minute, ProgressCheckInterval: 10 * time.Second, RESTTimeout: 10 * time.Second, ReconcileParallelism: 25}
	s, err := Build(map[string]string{options.ReconcileParallelism.Key: "50"}, base, nil)
	require.NoError(t, err)
	assert.Equal(t, 50, s.ReconcileParallelism)
	s, err = Build(map[string]string{options.ReconcileParallelism.Key: "-1"}, base, nil)
	require.NoError(t, err)
	assert.Equal(t, unboundedParallelism, s.ReconcileParallelism, "upstream's unbounded")
	s, err = Build(map[string]string{options.ReconcileParallelism.Key: "50"}, base, map[string]bool{"reconcile-parallelism": true})
	require.NoError(t, err)
	assert.Equal(t, 25, s.ReconcileParallelism, "an explicit flag wins")
	for _, bad := range []string{"0", "-2", "many"} {
		_, err = Build(map[string]string{options.ReconcileParallelism.Key: bad}, base, nil)
		require.ErrorContains(t, err, options.ReconcileParallelism.Key, bad)
	}
}

func TestStoreNotifiesChanges(t *testing.T) {
	s := NewStore(Settings{ReconcileInterval: time.Second})
	ch := s.Changed()
	s.Set(Settings{ReconcileInterval: 2 * time.Second})
	select {
	case <-ch:
	default:
		t.Fatal("Changed was not closed by Set")
	}
	assert.Equal(t, 2*time.Second, s.Get().ReconcileInterval)
}

// TestBuildLabelSelectorAndLeaseName: the shard options from the ConfigMap, an explicit flag
// winning, and a selector that does not parse refused by name; at a reload the refused
// configuration leaves the last good selector in force.
func TestBuildLabelSelectorAndLeaseName(t *testing.T) {
	base := Settings{ReconcileInterval: time.Minute, ProgressCheckInterval: 10 * time.Second, RESTTimeout: 10 * time.Second,
		LeaseName: "flink-operator.flink.apache.org"}
	s, err := Build(map[string]string{options.LabelSelector.Key: " shard in (a,b) ", options.LeaseName.Key: "flink-operator-shard-a"}, base, nil)
	require.NoError(t, err)
	assert.Equal(t, "shard in (a,b)", s.LabelSelector)
	assert.Equal(t, "flink-operator-shard-a", s.LeaseName)

	s, err = Build(map[string]string{options.LabelSelector.Key: "shard=a", options.LeaseName.Key: "x"},
		Settings{ReconcileInterval: 1, ProgressCheckInterval: 1, RESTTimeout: 1, LabelSelector: "shard=b", LeaseName: "y"},
		map[string]bool{"label-selector": true, "leader-election-id": true})
	require.NoError(t, err)
	assert.Equal(t, "shard=b", s.LabelSelector, "an explicit --label-selector wins")
	assert.Equal(t, "y", s.LeaseName, "an explicit --leader-election-id wins")

	s, err = Build(map[string]string{options.LeaseName.Key: " "}, base, nil)
	require.NoError(t, err)
	assert.Equal(t, base.LeaseName, s.LeaseName, "an empty lease name keeps the default")

	_, err = Build(map[string]string{options.LabelSelector.Key: "shard in a"}, base, nil)
	require.ErrorContains(t, err, `kubernetes.operator.label.selector: "shard in a" is not a label selector`)

	store := NewStore(base)
	w := &Watcher{Namespace: "ops", Name: "flink-operator-config", Base: base, Store: store}
	require.NoError(t, w.apply(map[string]string{"config.yaml": "kubernetes.operator.label.selector: shard=a\n"}))
	assert.Equal(t, "shard=a", store.Get().LabelSelector)
	err = w.apply(map[string]string{"config.yaml": "kubernetes.operator.label.selector: shard=(a\n"})
	require.ErrorContains(t, err, "operator ConfigMap ops/flink-operator-config: kubernetes.operator.label.selector")
	assert.Equal(t, "shard=a", store.Get().LabelSelector, "a selector that does not parse leaves the last good one")
}

func TestRateLimits(t *testing.T) {
	limit, retry, err := RateLimits(nil)
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Limit{Max: 0, Period: 15 * time.Second}, limit, "no limit by default (upstream: 5), upstream's period")
	assert.Equal(t, ratelimit.Retry{InitialInterval: 5 * time.Second, Multiplier: 1.5, MaxAttempts: 15}, retry, "upstream's defaults; no max interval")

	base := Settings{ReconcileInterval: time.Minute, ProgressCheckInterval: 10 * time.Second, RESTTimeout: 10 * time.Second, ReconcileParallelism: 25}
	s, err := Build(map[string]string{"kubernetes.operator.rate-limiter.limit": "5"}, base, nil)
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Limit{Max: 5, Period: 15 * time.Second}, s.RateLimit, "upstream's pacing when asked for")
	s, err = Build(map[string]string{"kubernetes.operator.rate-limiter.limit": "0", "kubernetes.operator.retry.initial.interval": "100 ms",
		"kubernetes.operator.retry.interval.multiplier": "2", "kubernetes.operator.retry.max.attempts": "3",
		"kubernetes.operator.retry.max.interval": "1 min"}, base, nil)
	require.NoError(t, err)
	assert.False(t, s.RateLimit.Enabled(), "upstream: a limit <= 0 disables the limiter")
	assert.Equal(t, ratelimit.Retry{InitialInterval: 100 * time.Millisecond, Multiplier: 2, MaxAttempts: 3, MaxInterval: time.Minute}, s.Retry)

	for key, raw := range map[string]string{
		"kubernetes.operator.rate-limiter.limit":          "five",
		"kubernetes.operator.rate-limiter.refresh-period": "0 s",
		"kubernetes.operator.retry.initial.interval":      "0",
		"kubernetes.operator.retry.interval.multiplier":   "0.5",
		"kubernetes.operator.retry.max.attempts":          "-1",
		"kubernetes.operator.retry.max.interval":          "0 s",
	} {
		conf := map[string]string{key: raw}
		if key == "kubernetes.operator.rate-limiter.refresh-period" {
			conf["kubernetes.operator.rate-limiter.limit"] = "5" // a period matters only with a limit
		}
		_, err := Build(conf, base, nil)
		require.Error(t, err, key)
		assert.Contains(t, err.Error(), key, "the error names the option")
		assert.Contains(t, err.Error(), raw, "and the value")
	}
	_, err = Build(map[string]string{"kubernetes.operator.retry.interval.multiplier": "NaN"}, base, nil)
	assert.ErrorContains(t, err, "kubernetes.operator.retry.interval.multiplier")
}

// TestUnhonouredOperatorOptionsAreLogged: an Apache operator option the
// operator configuration sets that has no effect here is logged with the reason, never
// silently ignored; an honoured one is not.
func TestUnhonouredOperatorOptionsAreLogged(t *testing.T) {
	base := Settings{ReconcileInterval: time.Minute, ProgressCheckInterval: 10 * time.Second, RESTTimeout: 10 * time.Second, ReconcileParallelism: 25}
	var logged []string
	w := &Watcher{Namespace: "ops", Name: "flink-operator-config", Base: base, Store: NewStore(base),
		Log: func(msg string, _ ...any) { logged = append(logged, msg) }}
	require.NoError(t, w.apply(map[string]string{"config.yaml": "kubernetes.operator.health.probe.port: 8085\n" +
		"kubernetes.operator.reconcile.interval: 30 s\nkubernetes.operator.leader-election.enabled: true\n"}))
	assert.Equal(t, []string{
		"Setting default configuration to {kubernetes.operator.health.probe.port=8085, kubernetes.operator.leader-election.enabled=true, kubernetes.operator.reconcile.interval=30 s}",
		"applied operator configuration",
		"ignored operator configuration option kubernetes.operator.health.probe.port (an Apache operator option) does not apply to this operator and is ignored: set with the operator's command-line flag --health-probe-bind-address (default :8081, upstream's 8085)",
		"ignored operator configuration option kubernetes.operator.leader-election.enabled (an Apache operator option) does not apply to this operator and is ignored: set with the operator's command-line flag --leader-elect (the Deployment of `make deploy` and the bundle turn it on)",
	}, logged)
}

// TestAppliedConfigurationIsLoggedAsSet: each configuration applied is logged as the ConfigMap
// sets it, in the line the Apache operator writes (its e2e suite waits for it after patching
// the ConfigMap), secret values masked.
func TestAppliedConfigurationIsLoggedAsSet(t *testing.T) {
	base := Settings{ReconcileInterval: time.Minute, ProgressCheckInterval: 10 * time.Second, RESTTimeout: 10 * time.Second, ReconcileParallelism: 25}
	var logged []string
	w := &Watcher{Namespace: "ops", Name: "flink-operator-config", Base: base, Store: NewStore(base),
		Log: func(msg string, _ ...any) { logged = append(logged, msg) }}
	require.NoError(t, w.apply(map[string]string{"config.yaml": "kubernetes.operator.watched.namespaces: default,flink,dynamic\n"}))
	require.NoError(t, w.apply(map[string]string{"flink-conf.yaml": "kubernetes.operator.watched.namespaces: default\n" +
		"kubernetes.operator.metrics.reporter.x.password: hunter2\n"}))
	assert.Contains(t, logged, "Setting default configuration to {kubernetes.operator.watched.namespaces=default,flink,dynamic}")
	assert.Contains(t, logged, "Setting default configuration to {kubernetes.operator.metrics.reporter.x.password=******, kubernetes.operator.watched.namespaces=default}")
	for _, l := range logged {
		assert.NotContains(t, l, "hunter2")
	}
}
