// Package freeport picks loopback TCP ports for processes a test starts and that bind their
// port themselves (etcd, kube-apiserver, a JobManager). Test tool only.
//
// A port the kernel hands out for 127.0.0.1:0 lies in its ephemeral range, the same range
// it takes the source port of every outgoing connection from. Between the moment a test
// releases such a port and the moment its process binds it, which for an API server starting
// on a loaded machine is seconds, any client connection on the machine can take it as its
// source port, and the process fails to bind. Ports below the ephemeral range are never given
// to client connections, so only another test picking the same port can collide, and the
// random choice over thousands of ports makes that rare.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowest is the lowest port picked: above the well-known and most registered service ports.
const lowest = 10000

// Ports returns n distinct loopback ports, each free (bindable on 127.0.0.1) when checked and
// below the kernel's ephemeral port range.
func Ports(n int) ([]int, error) {
	highest := ephemeralStart() - 1
	if highest-lowest < 1000 {
		return nil, fmt.Errorf("the ephemeral port range starts at %d: too few ports below it", highest+1)
	}
	var out []int
	seen := map[int]bool{}
	for attempts := 0; len(out) < n; attempts++ {
		if attempts > 1000 {
			return nil, errors.New("no free loopback port below the ephemeral range after 1000 attempts")
		}
		port := lowest + rand.IntN(highest-lowest+1)
		if seen[port] {
			continue
		}
		seen[port] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		l.Close()
		out = append(out, port)
	}
	return out, nil
}

// Port is Ports(1).
func Port() (int, error) {
	ports, err := Ports(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// ephemeralStart reads the first port of the kernel's ephemeral range; Linux's default when
// it cannot be read.
func ephemeralStart() int {
	const linuxDefault = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return linuxDefault
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return linuxDefault
	}
	start, err := strconv.Atoi(fields[0])
	if err != nil || start <= lowest {
		return linuxDefault
	}
	return start
}
