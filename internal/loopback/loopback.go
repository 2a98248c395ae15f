// Package loopback hands out loopback addresses that a process may bind
// again later, for test clusters whose nodes restart on the same address.
package loopback

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// ErrNoPort means no port below the ephemeral range could be bound.
var ErrNoPort = errors.New("loopback: no free port below the ephemeral range")

// lowestPort is where the search starts: below it sit the well-known and
// registered services a machine may run.
const lowestPort = 10000

// defaultEphemeralLow is Linux's default first ephemeral port, used when the
// kernel's range cannot be read.
const defaultEphemeralLow = 32768

var (
	mu     sync.Mutex
	handed = map[int]bool{} // ports this process already handed out
)

// Reserve returns a 127.0.0.1 address whose port was free a moment ago and
// lies below the kernel's ephemeral range.
//
// Why not "127.0.0.1:0" then close: the kernel picks such a port from the
// ephemeral range, the same range it gives every outgoing connection, so
// between the close and the node's own bind another test's connection can
// take the port (CI saw exactly this). Ports below the range are only ever
// taken by an explicit bind, so the address stays free for the node unless
// another process picks the same one of some twenty thousand ports in that
// instant; Reserve never hands one port out twice in a process.
func Reserve() (string, error) {
	hi := ephemeralLow()
	if hi <= lowestPort+100 {
		hi = defaultEphemeralLow
	}
	mu.Lock()
	defer mu.Unlock()
	for range 200 {
		port := lowestPort + rand.IntN(hi-lowestPort)
		if handed[port] {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		if err := ln.Close(); err != nil {
			return "", fmt.Errorf("loopback: closing %s: %w", addr, err)
		}
		handed[port] = true
		return addr, nil
	}
	return "", ErrNoPort
}

// ephemeralLow reads the first port of the kernel's ephemeral range, or
// returns the Linux default where there is no such file.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return defaultEphemeralLow
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return defaultEphemeralLow
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return defaultEphemeralLow
	}
	return n
}
