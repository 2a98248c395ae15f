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
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
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
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "%s %s %s\n", Header, from, target)
	return c
}

// roundTrip reports whether a line sent on c comes back. The deadline only
// keeps a broken proxy from hanging the test; no assertion depends on it.
func roundTrip(c net.Conn, line string) bool {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := fmt.Fprintf(c, "%s\n", line); err != nil {
		return false
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && got == line+"\n"
}

// waitCut reports whether c was closed by the proxy: a read ends with an
// error rather than data.
func waitCut(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
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
	t.Cleanup(func() { p.Close() })

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
	t.Cleanup(func() { p.Close() })
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET / HTTP/1.1\n")
	if !waitCut(c) {
		t.Fatal("a connection without the chaos header was relayed")
	}
	if _, _, err := parseHeader("HEDDLE-CHAOS/1 n1 127.0.0.1:1\n"); err != nil {
		t.Fatalf("the header format nodes write is refused: %v", err)
	}
}
