package main

// These tests drive how a server stops its HTTP API: a request in flight
// gets its answer, and a connection a client opened but never used does
// not hold the stop up.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine/embedded"
)

func TestAPICloseAnswersRequestsAndCutsUnusedConnections(t *testing.T) {
	d, err := startDev(embedded.Config{Dir: t.TempDir()}, "127.0.0.1:0", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			if err := d.close(); err != nil {
				t.Error(err)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// A long poll that nothing will answer before the server stops.
	type answer struct {
		status int
		body   string
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+d.api.addr()+"/v1/jobs/claim?wait=60000ms",
			strings.NewReader(`{"queue":"nobody-serves-this","owner":"test","max":1,"lease_ms":1000}`))
		if err != nil {
			answered <- answer{err: err}
			return
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		body, err := io.ReadAll(resp.Body)
		answered <- answer{status: resp.StatusCode, body: string(body), err: errors.Join(err, resp.Body.Close())}
	}()
	// A connection that never sends a request.
	unused, err := net.Dial("tcp", d.api.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := unused.Close(); err != nil {
			t.Error(err)
		}
	}()
	// Stop only once the server holds both: the poll being served, the
	// other connection accepted and waiting for its first request.
	for {
		n := d.api.connections()
		if n[http.StateActive] == 1 && n[http.StateNew] == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the server never saw both connections: %v", n)
		case <-time.After(5 * time.Millisecond):
		}
	}

	closed = true
	if err := d.close(); err != nil {
		t.Errorf("close: %v", err)
	}
	// The poll is answered, not cut: the API ends it with its own
	// answer (503, shutting down), which a client retries elsewhere.
	a := <-answered
	if a.err != nil || a.status != http.StatusServiceUnavailable || !json.Valid([]byte(a.body)) {
		t.Errorf("the long poll in flight: status %d, body %q, error %v; want the API's 503", a.status, a.body, a.err)
	}
	// The server closed the unused connection: a read ends at once. (The
	// deadline only keeps a regression from hanging the test.)
	if err := unused.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	n, err := unused.Read(make([]byte, 1))
	var netErr net.Error
	if n != 0 || err == nil || (errors.As(err, &netErr) && netErr.Timeout()) {
		t.Errorf("read on the unused connection after close: %d bytes, %v; want it closed by the server", n, err)
	}
}
