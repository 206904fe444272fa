// Package envflag reads the settings of the repository's bench commands from environment
// variables (make passes BENCH_N=... through): a missing or empty variable takes the default,
// a malformed one is an error naming the variable and what it accepts.
package envflag

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// String is the variable's value, or def when it is unset or empty.
func String(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// PositiveInt is the variable as a positive integer, or def when it is unset or empty.
func PositiveInt(key string, def int) (int, error) {
	v := os.Getenv(key)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive integer", key, v)
	}
	return n, nil
}

// Duration is the variable as a non-negative duration (60s, 2m), or def when it is unset or
// empty.
func Duration(key string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(key)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s=%q: want a duration such as 60s", key, v)
	}
	return d, nil
}
