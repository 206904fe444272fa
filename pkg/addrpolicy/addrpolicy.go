// Package addrpolicy is the address policy for endpoints a tenant names (artifact URLs, a
// ZooKeeper quorum): the operator dials them from inside the cluster, so the addresses it
// actually connects to are checked, not the names.
package addrpolicy

import (
	"errors"
	"net/netip"

	"code.dny.dev/ssrf"
)

// NewGuard refuses IANA's special-purpose ranges (loopback, RFC 1918, link-local with the
// metadata services, CGNAT with Alibaba's metadata address, benchmarking, reserved; for IPv6
// everything outside global unicast, which includes NAT64 and IPv4-mapped addresses), except
// for allowed; any port. Its Safe method is a net.Dialer Control function.
func NewGuard(allowed []netip.Prefix) *ssrf.Guardian {
	return ssrf.New(ssrf.WithAnyPort(), ssrf.WithAllowedV4Prefixes(family(allowed, true)...),
		ssrf.WithAllowedV6Prefixes(family(allowed, false)...))
}

// Refused reports whether err is the guard refusing an address.
func Refused(err error) bool {
	return errors.Is(err, ssrf.ErrProhibitedIP) || errors.Is(err, ssrf.ErrProhibitedNetwork) ||
		errors.Is(err, ssrf.ErrProhibitedPort) || errors.Is(err, ssrf.ErrInvalidHostPort)
}

func family(all []netip.Prefix, v4 bool) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range all {
		if p.Addr().Is4() == v4 {
			out = append(out, p)
		}
	}
	return out
}
