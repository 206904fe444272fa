package options

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBoolParsesAsFlinkDoes(t *testing.T) {
	on := BoolOption{Option{Key: "k", Default: "false", Type: TypeBool}}
	// " true " is not a boolean to Flink (ConfigurationUtils.convertToBoolean does not trim):
	// admission refuses it and it reads as the default.
	for raw, want := range map[string]bool{"true": true, "TRUE": true, " true ": false, "false": false, "FALSE": false, "yes": false, "": false} {
		assert.Equal(t, want, on.Get(Conf{"k": raw}), "%q", raw)
	}
	off := BoolOption{Option{Key: "k", Default: "true", Type: TypeBool}}
	assert.True(t, off.Get(Conf{}), "unset: the default")
	assert.True(t, off.Get(Conf{"k": "nope"}), "invalid: the default (admission rejects it)")
	assert.False(t, off.Get(Conf{"k": "False"}))
	assert.Error(t, off.Check(Conf{"k": "nope"}))
	assert.NoError(t, off.Check(Conf{"k": "TRUE"}))
}

// TestOneBooleanParser: every boolean (registered options, the options declared outside the
// table, Flink's own keys read through Bool) is parsed by ParseBool, as Flink's
// ConfigurationUtils.convertToBoolean parses one: true or false in any letter case, nothing
// around it.
func TestOneBooleanParser(t *testing.T) {
	for _, tc := range []struct {
		raw       string
		want, bad bool
	}{
		{raw: "true", want: true}, {raw: "True", want: true}, {raw: "FALSE"},
		{raw: " true ", bad: true}, {raw: "true\n", bad: true}, {raw: "false ", bad: true}, {raw: "1", bad: true}, {raw: "on", bad: true},
	} {
		got, err := ParseBool(tc.raw)
		if tc.bad {
			assert.ErrorContains(t, err, "is not a boolean", "%q", tc.raw)
		} else {
			require.NoError(t, err, "%q", tc.raw)
			assert.Equal(t, tc.want, got, "%q", tc.raw)
		}
		v, set, err := Bool(Conf{"security.ssl.rest.enabled": tc.raw}, "security.ssl.rest.enabled")
		assert.True(t, set)
		assert.Equal(t, tc.bad, err != nil, "%q", tc.raw)
		if err != nil {
			assert.ErrorContains(t, err, "security.ssl.rest.enabled", "the error names the key")
		} else {
			assert.Equal(t, tc.want, v)
		}
		assert.Equal(t, tc.bad, DisposeOnDelete.Check(Conf{DisposeOnDelete.Key: tc.raw}) != nil, "admission of %q", tc.raw)
	}
	_, set, err := Bool(Conf{"k": "  "}, "k")
	assert.False(t, set, "a blank value is not set")
	assert.NoError(t, err)
	assert.True(t, JMStartupProbe.Get(nil), "unset: the default")
	_, _, err = PodTemplateMergeArraysByName.Lookup(Conf{PodTemplateMergeArraysByName.Key: "yes"})
	assert.ErrorContains(t, err, PodTemplateMergeArraysByName.Key)
}

// TestOperatorKeys: the operator's and the autoscaler's keys never reach Flink.
func TestOperatorKeys(t *testing.T) {
	for _, k := range []string{RestartFailed.Key, AutoscalerPrefix + "enabled", LegacyAutoscalerPrefix + "enabled", NamespaceDefaultsPrefix + "ns.parallelism.default"} {
		assert.True(t, IsOperatorKey(k), k)
	}
	for _, k := range []string{"parallelism.default", "kubernetes.namespace", "job.name"} {
		assert.False(t, IsOperatorKey(k), k)
	}
}

func TestDurationsAndIntegers(t *testing.T) {
	d := DurationOption{Option{Key: "d", Default: "5 min", Type: TypeDuration}}
	assert.Equal(t, 5*time.Minute, d.Get(Conf{}))
	assert.Equal(t, 30*time.Second, d.Get(Conf{"d": "30 s"}))
	assert.Equal(t, 1500*time.Millisecond, d.Get(Conf{"d": "1500"}))
	assert.Equal(t, 24*time.Hour, d.Get(Conf{"d": "1 d"}))
	assert.Equal(t, 5*time.Minute, d.Get(Conf{"d": "soon"}))
	assert.Error(t, d.Check(Conf{"d": "soon"}))
	n := IntOption{Option{Key: "n", Default: "64", Type: TypeInt}}
	assert.Equal(t, 64, n.Get(Conf{}))
	assert.Equal(t, 3, n.Get(Conf{"n": " 3 "}))
	assert.Error(t, n.Check(Conf{"n": "three"}))
}

func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, o := range All() {
		require.False(t, seen[o.Key], "%s registered twice", o.Key)
		seen[o.Key] = true
		assert.NotEmpty(t, o.Description, o.Key)
		assert.NoError(t, o.Check(Conf{o.Key: o.Default}), "%s: the default is valid", o.Key)
	}
	got, ok := Lookup(RestartFailed.Key)
	require.True(t, ok)
	assert.Equal(t, TypeBool, got.Type)
}

// TestDurationOverflow: "200000 d" wrapped around to a negative duration (found by
// FuzzPeriodic in pkg/schedule); it is refused, and the largest exact value still parses.
func TestDurationOverflow(t *testing.T) {
	for _, s := range []string{"200000 d", "9223372036854775807 ms", "2562048 h"} {
		_, err := ParseDuration(s)
		assert.ErrorContains(t, err, "too long", s)
	}
	d, err := ParseDuration("106751 d")
	require.NoError(t, err)
	assert.Equal(t, 106751*24*time.Hour, d)
}

func TestDoubles(t *testing.T) {
	f := DoubleOption{Option{Key: "f", Default: "1.5", Type: TypeDouble}}
	assert.Equal(t, 1.5, f.Get(Conf{}))
	assert.Equal(t, 2.0, f.Get(Conf{"f": " 2 "}))
	assert.Equal(t, 1.5, f.Get(Conf{"f": "NaN"}), "not a number: the default")
	for _, bad := range []string{"x", "NaN", "Inf", "1,5"} {
		assert.Error(t, f.Check(Conf{"f": bad}), bad)
	}
	assert.NoError(t, f.Check(Conf{"f": "1e1"}))
}
