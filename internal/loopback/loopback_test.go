package loopback

import (
	"net"
	"strconv"
	"testing"
)

func TestReserveIsBelowTheEphemeralRangeAndBindable(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		addr, err := Reserve()
		if err != nil {
			t.Fatal(err)
		}
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
		host, portText, err := net.SplitHostPort(addr)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("Reserve() = %q, want a 127.0.0.1 address (%v)", addr, err)
		}
		port, _ := strconv.Atoi(portText)
		if port < lowestPort || port >= max(ephemeralLow(), defaultEphemeralLow) {
			t.Fatalf("port %d outside [%d, %d)", port, lowestPort, ephemeralLow())
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("binding the reserved %s: %v", addr, err)
		}
		_ = ln.Close()
	}
}

func TestReserveSkipsABoundPort(t *testing.T) {
	// Hold every port Reserve hands out; none may come back while held.
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			_ = ln.Close()
		}
	}()
	for range 20 {
		addr, err := Reserve()
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("%s was handed out but cannot be bound: %v", addr, err)
		}
		held = append(held, ln)
	}
}
