package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/storage"
)

// openEngine opens an in-memory engine without a scheduler, so nothing but
// the test's own commands ever changes the store.
func openEngine(t testing.TB, lim engine.Limits) *embedded.Engine {
	t.Helper()
	e, err := embedded.Open(embedded.Config{InMemory: true, Limits: lim, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the engine: %v", err)
		}
	})
	return e
}

// deadAddr returns a loopback address nothing listens on (one that did a
// moment ago, so connecting to it is refused).
func deadAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// droppingAddr returns the address of a listener that reads what it is
// sent and closes the connection without an answer: a node that may have
// applied the request before the connection broke. It closes with the test.
func droppingAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = conn.Read(make([]byte, 64<<10)) // the request, then nothing
			_ = conn.Close()
		}
	}()
	return ln.Addr().String()
}

// serve starts a Server for cfg on 127.0.0.1 and returns it with its base URL.
func serve(t testing.TB, cfg ServerConfig) (*Server, *httptest.Server) {
	t.Helper()
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		s.Close()
		hs.CloseClientConnections()
		hs.Close()
	})
	return s, hs
}

// newClient returns a Client of addrs with a short RetryTimeout, so a test
// that expects a call to give up does not wait long.
func newClient(t testing.TB, cfg ClientConfig) *Client {
	t.Helper()
	if cfg.RetryTimeout == 0 {
		cfg.RetryTimeout = 5 * time.Second
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// keyspaceHash hashes every key and value in the store.
func keyspaceHash(t testing.TB, e *embedded.Engine) string {
	t.Helper()
	h := sha256.New()
	err := e.View(context.Background(), func(r *storage.Reader) error {
		return r.Scan(nil, nil, true, func(k, v []byte) (bool, error) {
			var n [8]byte
			for _, b := range [][]byte{k, v} {
				binary.BigEndian.PutUint64(n[:], uint64(len(b)))
				h.Write(n[:])
				h.Write(b)
			}
			return true, nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// rawResponse is a response read whole.
type rawResponse struct {
	status int
	header http.Header
	body   []byte
}

// doRaw sends one request with the given headers ("" values are left out).
func doRaw(t testing.TB, method, url string, body []byte, headers map[string]string) rawResponse {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err == nil {
		err = resp.Body.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: b}
}

// postJSON posts v as JSON and decodes a 200 answer into out.
func postJSON(t testing.TB, url string, v, out any) rawResponse {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	r := doRaw(t, http.MethodPost, url, b, map[string]string{"Content-Type": contentJSON})
	if r.status == http.StatusOK && out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			t.Fatalf("%s: %v in %s", url, err, r.body)
		}
	}
	return r
}

// errorBodyOf decodes an error answer, failing the test if it is not one.
func errorBodyOf(t testing.TB, r rawResponse) ErrorBody {
	t.Helper()
	var b ErrorBody
	f, ok := parseFormat(r.header.Get("Content-Type"))
	if !ok || decodeAnswer(f, r.body, &b) != nil || b.Name == "" {
		t.Fatalf("status %d with a body that is not an ErrorBody: %q", r.status, r.body)
	}
	return b
}

// hostOf strips the scheme of a test server's URL.
func hostOf(url string) string { return strings.TrimPrefix(url, "http://") }
