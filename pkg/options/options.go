// Package options is the one registry of the operator's own options: the
// kubernetes.operator.* keys a resource's flinkConfiguration (or the operator's default
// configuration) sets to tune how the operator treats it. Each option is declared once, with
// upstream's key, default and meaning; the controllers read them through typed accessors, the
// admission rules check every value against its type, and the configuration reference
// (docs/reference/configuration.md) is generated from this list by make docs. Values are parsed the way Flink parses configuration:
// booleans case-insensitively, durations in Flink's syntax ("30 s", "5 min", "1 d").
package options

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Type is the kind of value an option takes.
type Type string

// Types of option values.
const (
	TypeBool     Type = "boolean"
	TypeInt      Type = "integer"
	TypeDouble   Type = "double"
	TypeDuration Type = "duration"
	// TypeSchedule is a duration or a Quartz cron expression (periodic snapshots).
	TypeSchedule Type = "duration or cron"
	TypeString   Type = "string"
)

// Option describes one operator option.
type Option struct {
	Key string
	// Default is the value when the option is not set, as written in upstream's documentation
	// ("" when there is none, or when it is derived from other settings).
	Default     string
	Type        Type
	Description string
	// Allowed, when set, are the only values (compared without case).
	Allowed []string
	// DeprecatedKey, when set, is upstream's older key of the option, read when Key is not set.
	DeprecatedKey string
}

// Conf is a flattened Flink configuration.
type Conf = map[string]string

// raw is the trimmed value of the option in conf and whether it is set.
func (o Option) raw(conf Conf) (string, bool) {
	v, set := o.written(conf)
	return strings.TrimSpace(v), set
}

// written is the value of the option in conf as written, and whether it is set: a blank value
// is not set, and then the deprecated key is read.
func (o Option) written(conf Conf) (string, bool) {
	v := conf[o.Key]
	if strings.TrimSpace(v) == "" && o.DeprecatedKey != "" {
		v = conf[o.DeprecatedKey]
	}
	return v, strings.TrimSpace(v) != ""
}

// Check reports why conf's value of the option is not valid for its type (nil when valid or
// unset). Schedules are checked by their users (pkg/schedule parses cron expressions).
func (o Option) Check(conf Conf) error {
	v, set := o.raw(conf)
	if !set {
		return nil
	}
	var err error
	switch o.Type {
	case TypeBool:
		written, _ := o.written(conf)
		_, err = ParseBool(written)
	case TypeInt:
		_, err = strconv.Atoi(v)
		if err != nil {
			err = fmt.Errorf("%q is not an integer", v)
		}
	case TypeDouble:
		_, err = parseDouble(v)
	case TypeDuration:
		_, err = ParseDuration(v)
	}
	if err == nil && len(o.Allowed) > 0 {
		for _, a := range o.Allowed {
			if strings.EqualFold(a, v) {
				return nil
			}
		}
		err = fmt.Errorf("%q is not one of %s", v, strings.Join(o.Allowed, ", "))
	}
	return err
}

// BoolOption is an option holding true or false.
type BoolOption struct{ Option }

// Get is the option's value in conf; an unset or invalid value (rejected at admission) is the
// default.
func (o BoolOption) Get(conf Conf) bool {
	if b, set, err := o.Lookup(conf); set && err == nil {
		return b
	}
	b, _ := ParseBool(o.Default)
	return b
}

// Lookup is the option's value in conf and whether it is set; an invalid value is an error
// naming the key, for readers that refuse it rather than fall back to the default.
func (o BoolOption) Lookup(conf Conf) (value, set bool, err error) {
	v, set := o.written(conf)
	if !set {
		return false, false, nil
	}
	b, err := ParseBool(v)
	if err != nil {
		return false, true, fmt.Errorf("flinkConfiguration %s: %w", o.Key, err)
	}
	return b, true, nil
}

// IntOption is an option holding an integer.
type IntOption struct{ Option }

// Get is the option's value in conf, or its default when unset or invalid.
func (o IntOption) Get(conf Conf) int {
	if v, set := o.raw(conf); set {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	n, _ := strconv.Atoi(o.Default)
	return n
}

// DoubleOption is an option holding a floating-point number (Java's Double).
type DoubleOption struct{ Option }

// Get is the option's value in conf, or its default when unset or invalid.
func (o DoubleOption) Get(conf Conf) float64 {
	if v, set := o.raw(conf); set {
		if f, err := parseDouble(v); err == nil {
			return f
		}
	}
	f, _ := parseDouble(o.Default)
	return f
}

// parseDouble accepts a finite decimal number ("1.5", "2", "1e1").
func parseDouble(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return f, nil
}

// DurationOption is an option holding a duration in Flink's syntax.
type DurationOption struct{ Option }

// Get is the option's value in conf, or its default when unset or invalid.
func (o DurationOption) Get(conf Conf) time.Duration {
	if v, set := o.raw(conf); set {
		if d, err := ParseDuration(v); err == nil {
			return d
		}
	}
	d, _ := ParseDuration(o.Default)
	return d
}

// IsSet says whether conf sets the option.
func (o Option) IsSet(conf Conf) bool {
	_, set := o.raw(conf)
	return set
}

// StringOption is an option holding text.
type StringOption struct{ Option }

// Get is the option's value in conf, or its default.
func (o StringOption) Get(conf Conf) string {
	if v, set := o.raw(conf); set {
		return v
	}
	return o.Default
}

// ParseBool is the one boolean parser of the operator: it accepts what Flink's configuration
// accepts (ConfigurationUtils.convertToBoolean), true or false in any letter case and nothing
// around it. " true " is not a boolean there, so it is none here: Flink refuses it when the
// option is read, and admission refuses it here rather than read it one way in one place and
// another way elsewhere.
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean: want true or false", s)
}

// Bool reads a boolean key of conf that is not an operator option (one of Flink's own, such as
// security.ssl.rest.enabled) with ParseBool; a blank or absent key is not set.
func Bool(conf Conf, key string) (value, set bool, err error) {
	return BoolOption{Option{Key: key, Type: TypeBool}}.Lookup(conf)
}

// durationUnits are the unit spellings Flink's TimeUtils accepts.
var durationUnits = map[string]time.Duration{
	"": time.Millisecond, "ns": time.Nanosecond, "nano": time.Nanosecond, "nanos": time.Nanosecond, "nanosecond": time.Nanosecond, "nanoseconds": time.Nanosecond,
	"us": time.Microsecond, "micro": time.Microsecond, "micros": time.Microsecond, "microsecond": time.Microsecond, "microseconds": time.Microsecond,
	"ms": time.Millisecond, "milli": time.Millisecond, "millis": time.Millisecond, "millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
}

// ParseDuration parses Flink's duration syntax: a number and an optional unit (milliseconds
// without one).
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%q is not a duration: want a number with an optional unit (ms, s, min, h, d)", s)
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	unit, ok := durationUnits[strings.ToLower(strings.TrimSpace(s[i:]))]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q, allowed: ms, s, min, h, d", s, strings.TrimSpace(s[i:]))
	}
	if n > math.MaxInt64/int64(unit) {
		// The product would wrap around to a short or negative interval (a periodic savepoint
		// on every reconcile).
		return 0, fmt.Errorf("%q is too long: at most %v", s, time.Duration(math.MaxInt64/int64(unit))*unit)
	}
	return time.Duration(n) * unit, nil
}

// All lists every registered option, sorted by key.
func All() []Option {
	out := make([]Option, len(registry))
	copy(out, registry)
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Lookup finds a registered option by key.
func Lookup(key string) (Option, bool) {
	for _, o := range registry {
		if o.Key == key {
			return o, true
		}
	}
	return Option{}, false
}

// MarkdownTable is the table of the operator options in the configuration reference
// (docs/reference/configuration.md, written by hack/docgen).
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| Option | Type | Default | Meaning |\n|---|---|---|---|\n")
	for _, o := range All() {
		def := o.Default
		if def == "" {
			def = "none"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", o.Key, o.Type, def, o.Description)
	}
	return b.String()
}
