package chaos

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer answers every line with the same line, standing in for a
// node's Raft listener.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, ln) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// The proxy cuts these connections on purpose: how the copy or
			// the close ends is no news.
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// dialAs opens a connection through the proxy the way a node does.
func dialAs(t *testing.T, proxy, from, target string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, c) })
	if _, err := fmt.Fprintf(c, "%s %s %s\n", Header, from, target); err != nil {
		t.Fatal(err)
	}
	return c
}

// closeOK closes c when the test ends, failing it if that fails.
func closeOK(t *testing.T, c io.Closer) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("closing %T: %v", c, err)
	}
}

// roundTrip reports whether a line sent on c comes back. The deadline only
// keeps a broken proxy from hanging the test; no assertion depends on it.
func roundTrip(c net.Conn, line string) bool {
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return false
	}
	// Clearing the deadline fails only on a connection the proxy cut, which
	// the next check of it finds.
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	if _, err := fmt.Fprintf(c, "%s\n", line); err != nil {
		return false
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && got == line+"\n"
}

// waitCut reports whether c was closed by the proxy: a read ends with an
// error rather than data.
func waitCut(c net.Conn) bool {
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return false // closed on this side, not cut by the proxy
	}
	_, err := c.Read(make([]byte, 1))
	return err == io.EOF || (err != nil && !isTimeout(err))
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func TestProxyCutsAndHealsDirectedPairs(t *testing.T) {
	a, b := echoServer(t), echoServer(t)
	p, err := NewProxy("127.0.0.1:0", map[string]string{a: "n1", b: "n2"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, p) })

	c12 := dialAs(t, p.Addr(), "n1", b)
	c21 := dialAs(t, p.Addr(), "n2", a)
	if !roundTrip(c12, "hello") || !roundTrip(c21, "hello") {
		t.Fatal("an unblocked pair does not relay")
	}

	p.SetRules([]Pair{{From: "n1", To: "n2"}}, nil)
	if !p.Blocked(Pair{"n1", "n2"}) || p.Blocked(Pair{"n2", "n1"}) {
		t.Fatal("Blocked does not report the rule just set")
	}
	if !waitCut(c12) {
		t.Fatal("blocking n1->n2 left its open connection up")
	}
	if !roundTrip(c21, "still") {
		t.Fatal("blocking n1->n2 cut n2->n1 too")
	}
	if fresh := dialAs(t, p.Addr(), "n1", b); !waitCut(fresh) {
		t.Fatal("a new n1->n2 connection was relayed while blocked")
	}

	p.Heal()
	if again := dialAs(t, p.Addr(), "n1", b); !roundTrip(again, "healed") {
		t.Fatal("n1->n2 does not relay after Heal")
	}
}

func TestProxyRefusesABadHeader(t *testing.T) {
	a := echoServer(t)
	p, err := NewProxy("127.0.0.1:0", map[string]string{a: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, p) })
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, c)
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\n"); err != nil {
		t.Fatal(err)
	}
	if !waitCut(c) {
		t.Fatal("a connection without the chaos header was relayed")
	}
	if _, _, err := parseHeader("HEDDLE-CHAOS/1 n1 127.0.0.1:1\n"); err != nil {
		t.Fatalf("the header format nodes write is refused: %v", err)
	}
}
