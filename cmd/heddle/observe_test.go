package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/internal/metricstest"
	"github.com/heddlewf/heddle/metrics"
)

func TestPprofAddrMustBeLoopback(t *testing.T) {
	cases := []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:6060", true},
		{"127.0.0.2:0", true},
		{"[::1]:6060", true},
		{"localhost:6060", true},
		{"0.0.0.0:6060", false},
		{":6060", false},
		{"[::]:6060", false},
		{"10.1.2.3:6060", false},
		{"example.com:6060", false},
		{"127.0.0.1", false},
	}
	for _, c := range cases {
		if err := checkPprofAddr(c.addr); (err == nil) != c.ok {
			t.Errorf("checkPprofAddr(%q) = %v, want ok %v", c.addr, err, c.ok)
		}
	}
	for _, args := range [][]string{
		{"dev", "--pprof-addr", "0.0.0.0:0"},
		{"server", "--id", "n1", "--dir", t.TempDir(), "--pprof-addr", ":6060"},
		{"cluster", "up", "--dir", t.TempDir(), "--pprof-addr", "192.168.1.1:6060"},
	} {
		if _, errOut, code := runCmd(t, args...); code != 2 || !strings.Contains(errOut, "loopback") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a word on loopback", args, code, errOut)
		}
	}
}

func TestLogFlagsAreChecked(t *testing.T) {
	for _, args := range [][]string{
		{"dev", "--log-format", "yaml"},
		{"dev", "--log-level", "loud"},
		{"server", "--id", "n1", "--dir", t.TempDir(), "--log-level", "verbose"},
	} {
		if _, errOut, code := runCmd(t, args...); code != 2 || !strings.Contains(errOut, "--log-") {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming the flag", args, code, errOut)
		}
	}
	f := &observeFlags{logFormat: "json", logLevel: "warn"}
	var b bytes.Buffer
	log, err := f.logger(&b)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hidden")
	log.Warn("shown", "k", 1)
	if out := b.String(); strings.Contains(out, "hidden") || !strings.HasPrefix(out, `{"time":`) || !strings.Contains(out, `"msg":"shown","k":1`) {
		t.Fatalf("JSON logs at warn: %q", out)
	}
}

// "heddle dev" serves its metrics, with the Go runtime's, and the probes.
func TestDevServesMetricsAndProbes(t *testing.T) {
	d, err := startDev(embedded.Config{Dir: t.TempDir()}, "127.0.0.1:0", &security{token: "tok"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := d.close(); err != nil {
			t.Error(err)
		}
	}()
	base := "http://" + d.api.addr()
	if _, err := d.engine.Create(t.Context(), engine.CreateJob{Type: "t", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %v %v", resp.Status, err)
	}
	fs, err := metricstest.Parse(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v", err)
	}
	if fs.Value(metrics.EngineJobs, "status", "Queued", "queue", "q") != 1 || fs["go_goroutines"] == nil || fs.Value(metrics.EngineSyncs) < 1 {
		t.Fatalf("exposition lacks the queued job, the runtime's metrics or the sync:\n%s", body)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close() // only the status matters
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s without a token: %s", path, resp.Status)
		}
	}
}

func TestPprofServes(t *testing.T) {
	p, err := startPprof("127.0.0.1:0", discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	resp, err := http.Get("http://" + p.addr() + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // only the status matters
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("pprof: %s", resp.Status)
	}
}

// A member that answers but is not ready shows why in the READY column.
func TestClusterStatusShowsNotReady(t *testing.T) {
	views := []clusterView{
		{Addr: "a:1", Ready: true, Status: &clusterStatusDoc{ID: "n1", State: "Leader", Term: 2, LeaderID: "n1"}},
		{Addr: "a:2", NotReady: "no leader is known (this node is Candidate)", Status: &clusterStatusDoc{ID: "n2", State: "Candidate", Term: 5}},
		{Addr: "a:3", Error: "connection refused"},
	}
	var b bytes.Buffer
	if err := printClusterStatus(&b, formatTable, views); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 || !strings.HasSuffix(lines[1], "yes") ||
		!strings.HasSuffix(lines[2], "no: no leader is known (this node is Candidate)") || !strings.Contains(lines[3], "unreachable") {
		t.Fatalf("cluster status table:\n%s", b.String())
	}
}

// The READY column keeps the shard a sharded node's refusal names: the
// row's state is the metadata group's, and "n1 Leader ... no: this
// Follower last heard from the leader n4" read as the member's own state
// (found by a probe, during a shard leader's failover).
func TestClusterStatusKeepsTheShardNotReady(t *testing.T) {
	for msg, want := range map[string]string{
		"httpapi: not ready: raftfsm: not ready: no leader is known (this node is Candidate)":                                    "no leader is known (this node is Candidate)",
		"httpapi: not ready: shard 0: raftfsm: not ready: this Follower last heard from the leader n4 2.023s ago (more than 2s)": "shard 0: this Follower last heard from the leader n4 2.023s ago (more than 2s)",
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if r.URL.Path == "/readyz" {
				w.WriteHeader(http.StatusServiceUnavailable)
				_ = json.NewEncoder(w).Encode(httpapi.ErrorBody{Name: "not_ready", Message: msg})
				return
			}
			_ = json.NewEncoder(w).Encode(httpapi.Health{Status: "ok"})
		}))
		c, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{srv.URL}})
		if err != nil {
			t.Fatal(err)
		}
		var v clusterView
		if err := probeMember(context.Background(), c, &v); err != nil || v.Ready || v.NotReady != want {
			t.Errorf("a member answering %q: ready %v, why %q, %v; want %q", msg, v.Ready, v.NotReady, err, want)
		}
		srv.Close()
	}
}
