// Package podnet gives the local cluster pod addresses that Kubernetes accepts. EndpointSlices
// reject loopback addresses, so with pods on 127.x the API server cannot reach a Service's pods
// (an admission webhook, an aggregated API). A test binary that runs as root re-executes itself
// in a network namespace of its own (unshare --net), where a private range is routed to the
// namespace's loopback: pods bind addresses from it, EndpointSlices fill, and the API server
// (--enable-aggregator-routing) calls webhook Services through them. Nothing in that range ever
// leaves the namespace: it has no other interface. Where no namespace can be made (not root, no
// unshare), everything stays on the machine's loopback and Mode says so. Test code only.
package podnet

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// CIDR is the pod range inside the namespace.
const CIDR = "10.244.0.0/16"

// Prefix is what every pod address in CIDR starts with.
const Prefix = "10.244."

// Mode is how pods are addressed.
type Mode string

const (
	// Namespace: the process runs in its own network namespace with CIDR routed locally.
	Namespace Mode = "network namespace (pods on " + CIDR + ")"
	// Loopback: pods are on 127.1.0.0/16 of the machine's loopback; Services have no endpoints.
	Loopback Mode = "loopback (pods on 127.1.0.0/16; Services have no endpoints)"
)

// envInside marks the re-executed process.
const envInside = "FLINK_OPERATOR_PODNET_INSIDE"

// Current is the mode of this process.
func Current() Mode {
	if os.Getenv(envInside) != "" {
		return Namespace
	}
	return Loopback
}

// Reexec runs this binary again, with the same arguments, inside a new network namespace, and
// returns its exit code; ran is false when this process should go on itself: it is already
// inside, or no namespace can be made here (then why says so). Call it first in TestMain.
func Reexec() (ran bool, code int, why error) {
	if os.Getenv(envInside) != "" {
		return false, 0, setUp()
	}
	if os.Geteuid() != 0 {
		return false, 0, errors.New("not root: network namespaces need CAP_SYS_ADMIN")
	}
	if out, err := exec.Command("unshare", "--net", "--", "true").CombinedOutput(); err != nil {
		return false, 0, fmt.Errorf("unshare --net: %v: %s", err, out)
	}
	cmd := exec.Command("unshare", append([]string{"--net", "--", os.Args[0]}, os.Args[1:]...)...)
	cmd.Env = append(os.Environ(), envInside+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, 0, nil
	case errors.As(err, &exit):
		return true, exit.ExitCode(), nil
	default:
		return false, 0, fmt.Errorf("re-execute in a network namespace: %w", err)
	}
}

// setUp brings the new namespace's loopback up and routes the pod range to it, so any address
// of the range can be bound and reached from within the namespace.
func setUp() error {
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"route", "add", "local", CIDR, "dev", "lo"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %v: %v: %s", args, err, out)
		}
	}
	return nil
}

// Enter is the start of a TestMain of a suite named suite: it runs the rest of the test binary
// in a network namespace of its own (Reexec) and exits with that run's code. It exits with 1
// when the namespace was made but could not be set up, and, when required (the suite proves the
// path from the API server to a webhook Service, which needs pod addresses), also when no
// namespace can be made here. Otherwise it returns and the suite runs on the loopback (Mode
// Loopback), saying why.
func Enter(suite string, required bool) {
	ran, code, why := Reexec()
	if ran {
		os.Exit(code)
	}
	switch {
	case why != nil && Current() == Namespace:
		fmt.Fprintf(os.Stderr, "%s: network namespace: %v\n", suite, why)
		os.Exit(1)
	case required && (why != nil || Current() != Namespace):
		fmt.Fprintf(os.Stderr, "%s: the test needs a network namespace of its own (root, unshare): %v\n", suite, why)
		os.Exit(1)
	case why != nil:
		fmt.Printf("%s: no network namespace (%v)\n", suite, why)
	}
}
