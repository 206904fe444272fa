package freeport

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPortsAreDistinctFreeAndBelowTheEphemeralRange(t *testing.T) {
	ports, err := Ports(50)
	require.NoError(t, err)
	seen := map[int]bool{}
	for _, p := range ports {
		require.False(t, seen[p], "port %d returned twice", p)
		seen[p] = true
		require.GreaterOrEqual(t, p, lowest)
		require.Less(t, p, ephemeralStart())
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		require.NoError(t, err, "port %d", p)
		l.Close()
	}
}

func TestPortsSkipsAPortInUse(t *testing.T) {
	// Hold every candidate but a handful: Ports must still find a free one and never return a held one.
	held := map[int]bool{}
	for range 200 {
		p, err := Port()
		require.NoError(t, err)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
		held[p] = true
	}
	ports, err := Ports(20)
	require.NoError(t, err)
	for _, p := range ports {
		require.False(t, held[p], "port %d is held by the test", p)
	}
}
