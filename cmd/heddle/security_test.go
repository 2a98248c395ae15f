package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
)

// runOK runs the binary with args and returns its stdout, failing t unless
// it exits 0.
func runOK(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(args, &out, &errOut); code != 0 {
		t.Fatalf("heddle %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
	}
	return out.String()
}

// A cluster set up as docs/security.md says: heddle cert for a CA and each
// node's certificate, heddle token for the callers, the API over TLS and
// Raft over mutual TLS. Nodes join with their certificates; a caller needs
// the CA and a token with the right role; the caller's name is recorded.
func TestSecureClusterFromTheCommandLine(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HEDDLE_TOKEN", "")
	t.Setenv("HEDDLE_TLS_CA", "")
	runOK(t, "cert", "ca", "--dir", dir)
	for _, id := range []string{"n1", "n2"} {
		runOK(t, "cert", "node", id, "--dir", dir, "--hosts", "127.0.0.1")
	}
	if info, err := os.Stat(filepath.Join(dir, "n1.key")); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("n1.key: %v %v", info, err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"cert", "ca", "--dir", dir}, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), "exists") {
		t.Fatalf("a second CA over the first: exit %d %s", code, errOut.String())
	}
	tokens := filepath.Join(dir, "tokens")
	adminTok := strings.TrimSpace(runOK(t, "token", "--file", tokens, "--name", "ops", "--role", "admin"))
	clientTok := strings.TrimSpace(runOK(t, "token", "--file", tokens, "--name", "carl", "--role", "client"))
	if b, _ := os.ReadFile(tokens); strings.Contains(string(b), clientTok) || !strings.Contains(string(b), httpapi.TokenDigest(clientTok)) {
		t.Fatalf("the token file holds the token, or not its digest:\n%s", b)
	}
	if code := run([]string{"token", "--file", tokens, "--name", "carl", "--role", "reader"}, &out, &errOut); code != 2 {
		t.Fatalf("a second token for carl: exit %d", code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var nodes []*clusterNode
	t.Cleanup(func() {
		for i := len(nodes) - 1; i >= 0; i-- {
			if err := nodes[i].close(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	})
	var first string
	for i, id := range []string{"n1", "n2"} {
		sf := secFlags{tlsCert: filepath.Join(dir, id+".crt"), tlsKey: filepath.Join(dir, id+".key"),
			tlsCA: filepath.Join(dir, "ca.crt"), tokenFile: tokens}
		sec, err := sf.load(id)
		if err != nil {
			t.Fatal(err)
		}
		o := nodeOptions{id: id, dir: filepath.Join(dir, "data-"+id), httpAddr: "127.0.0.1:0", raftAddr: "127.0.0.1:0",
			grace: time.Second, bootstrap: i == 0, sec: sec}
		if i > 0 {
			o.join = []string{first}
		}
		n, err := startNode(ctx, o)
		if err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
		nodes = append(nodes, n)
		if i == 0 {
			first = n.api.addr()
			if _, err := n.node.WaitLeader(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	// n1's certificate cannot start n2.
	sf := secFlags{tlsCert: filepath.Join(dir, "n1.crt"), tlsKey: filepath.Join(dir, "n1.key"), tlsCA: filepath.Join(dir, "ca.crt")}
	if _, err := sf.load("n2"); err == nil || !strings.Contains(err.Error(), `names node "n1", not "n2"`) {
		t.Fatalf("n1's certificate for n2: %v", err)
	}

	addrs := nodes[1].api.addr() // the follower: it forwards to the leader
	start := []string{"workflow", "start", "--addr", addrs, "--tls-ca", filepath.Join(dir, "ca.crt"), "--type", "T", "-t", "q", "-w", "wf-1"}
	if code := run(append(start, "--token", "nope"), &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "not one this server knows") {
		t.Fatalf("an unknown token: exit %d %s", code, errOut.String())
	}
	errOut.Reset()
	if code := run(append(start[:len(start):len(start)], "--addr", "http://"+addrs, "--token", clientTok), &out, &errOut); code != 1 {
		t.Fatalf("plain HTTP to a TLS node: exit %d %s", code, errOut.String())
	}
	runOK(t, append(start, "--token", clientTok)...)
	j, err := nodes[0].node.Engine().Describe(ctx, engine.Target{WorkflowID: "wf-1"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := nodes[0].node.Engine().History(ctx, j.ID, 0, 1)
	if err != nil || h.Events[0].By != "carl" {
		t.Fatalf("the start is recorded as by %q (%v), want carl", h.Events[0].By, err)
	}
	term := []string{"workflow", "terminate", "wf-1", "--addr", addrs, "--tls-ca", filepath.Join(dir, "ca.crt")}
	errOut.Reset()
	if code := run(append(term, "--token", clientTok), &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "needs the admin role") {
		t.Fatalf("terminate with a client's token: exit %d %s", code, errOut.String())
	}
	runOK(t, append(term, "--token", adminTok)...)
	st := runOK(t, "cluster", "status", "--addr", first+","+addrs, "--tls-ca", filepath.Join(dir, "ca.crt"), "--token", clientTok)
	if strings.Count(st, "n1") < 2 || !strings.Contains(st, "Leader") || !strings.Contains(st, "Follower") {
		t.Fatalf("cluster status:\n%s", st)
	}
}

// A server refuses to listen where others reach it without TLS and
// tokens, or to run Raft there without mutual TLS, unless --insecure.
func TestNonLoopbackNeedsTLSAndTokens(t *testing.T) {
	withTLS := &security{cert: new(tls.Certificate)}
	cases := []struct {
		name       string
		sec        *security
		http, raft string
		refused    string
	}{
		{"loopback", &security{}, "127.0.0.1:7280", "127.0.0.1:7281", ""},
		{"localhost", &security{}, "localhost:7280", "[::1]:7281", ""},
		{"all interfaces", &security{}, ":7280", "", "--http-addr :7280 is not a loopback address"},
		{"0.0.0.0", &security{}, "0.0.0.0:7280", "", "--tls-cert and --tls-key and require tokens"},
		{"TLS without tokens", withTLS, "10.0.0.5:7280", "", "is not a loopback address"},
		{"tokens without TLS", &security{token: "t"}, "10.0.0.5:7280", "", "is not a loopback address"},
		{"TLS and tokens", &security{cert: withTLS.cert, token: "t"}, "10.0.0.5:7280", "127.0.0.1:7281", ""},
		{"Raft in the clear", &security{cert: withTLS.cert, token: "t"}, "10.0.0.5:7280", "10.0.0.5:7281", "--raft-addr 10.0.0.5:7281 is not a loopback address"},
		{"--insecure", &security{insecure: true}, "0.0.0.0:7280", "0.0.0.0:7281", ""},
	}
	for _, c := range cases {
		err := c.sec.checkExposure(c.http, c.raft)
		var ue *usageError
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.refused != "" && (!errors.As(err, &ue) || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("%s: %v, want a usage error containing %q", c.name, err, c.refused)
		}
	}
	// And the commands say so before opening anything.
	var out, errOut bytes.Buffer
	if code := run([]string{"dev", "--http-addr", "0.0.0.0:0"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "--insecure") {
		t.Fatalf("heddle dev on 0.0.0.0: exit %d %s", code, errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"server", "--id", "n1", "--dir", t.TempDir(), "--http-addr", "0.0.0.0:0"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "not a loopback address") {
		t.Fatalf("heddle server on 0.0.0.0: exit %d %s", code, errOut.String())
	}
}
