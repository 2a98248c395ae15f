package client_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	stdlog "log"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/sdk/client"
)

// ConnectionOptions.TLS is used when HostPort is dialled: a node behind
// TLS is reached with its CA as RootCAs (a bare host:port then means
// https), and not without; Credentials send the node's token.
func TestDialOverTLSWithCredentials(t *testing.T) {
	e := openEngine(t)
	s, err := httpapi.NewServer(httpapi.ServerConfig{Service: e, AuthToken: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(s)
	hs.Config.ErrorLog = stdlog.New(io.Discard, "", 0) // the refused handshakes below are expected
	hs.StartTLS()
	t.Cleanup(func() {
		s.Close()
		hs.CloseClientConnections()
		hs.Close()
	})
	roots := x509.NewCertPool()
	roots.AddCert(hs.Certificate())
	addr := hs.Listener.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	c, err := client.Dial(client.Options{HostPort: addr, Credentials: client.NewAPIKeyStaticCredentials("s3cret"),
		ConnectionOptions: client.ConnectionOptions{TLS: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "over-tls", TaskQueue: "tls"}, "Anything"); err != nil {
		t.Fatalf("a start over TLS with the token: %v", err)
	}
	if page, err := c.ListWorkflows(ctx, engine.ListQuery{}); err != nil || len(page.Jobs) != 1 {
		t.Fatalf("list over TLS: %v, %v", page, err)
	}
	c.Close()

	// The same node without the token is refused.
	c, err = client.Dial(client.Options{HostPort: addr,
		ConnectionOptions: client.ConnectionOptions{TLS: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}})
	if err == nil {
		_, err = c.ListWorkflows(ctx, engine.ListQuery{})
		c.Close()
	}
	if err == nil {
		t.Fatal("a client without the token listed the node's runs")
	}

	// Without the CA the node's certificate is not trusted; the health
	// check then fails at Dial, or, when disabled, at the first call.
	if _, err := client.Dial(client.Options{HostPort: hs.URL}); err == nil {
		t.Fatal("Dial trusted a certificate of an unknown CA")
	}
	c, err = client.Dial(client.Options{HostPort: hs.URL, Credentials: client.NewAPIKeyStaticCredentials("s3cret"),
		ConnectionOptions: client.ConnectionOptions{DisableHealthCheck: true}})
	if err != nil {
		t.Fatalf("Dial with the health check disabled: %v", err)
	}
	defer c.Close()
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	if _, err := c.ListWorkflows(short, engine.ListQuery{}); err == nil {
		t.Fatal("a call trusted a certificate of an unknown CA")
	}
}

// tokenHeaders is a HeadersProvider that hands out the current token, as
// Temporal's JWT sample does, and counts its calls.
type tokenHeaders struct {
	mu    sync.Mutex
	token string
	calls int
	err   error
}

func (p *tokenHeaders) set(token string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.token, p.err = token, err
}

func (p *tokenHeaders) GetHeaders(context.Context) (map[string]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if p.err != nil {
		return nil, p.err
	}
	return map[string]string{"authorization": "Bearer " + p.token}, nil
}

// Options.HeadersProvider's headers go with every request, asked for each
// one: its authorization header authenticates to a node with a token, a
// wrong token is refused, and the provider's error fails the call.
func TestDialWithHeadersProvider(t *testing.T) {
	e := openEngine(t)
	s, err := httpapi.NewServer(httpapi.ServerConfig{Service: e, AuthToken: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		s.Close()
		hs.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := &tokenHeaders{token: "s3cret"}
	c, err := client.Dial(client.Options{HostPort: hs.Listener.Addr().String(), HeadersProvider: p})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "with-headers", TaskQueue: "h"}, "Anything"); err != nil {
		t.Fatalf("a start with the provider's token: %v", err)
	}
	if page, err := c.ListWorkflows(ctx, engine.ListQuery{}); err != nil || len(page.Jobs) != 1 {
		t.Fatalf("list with the provider's token: %v, %v", page, err)
	}
	p.mu.Lock()
	calls := p.calls
	p.mu.Unlock()
	if calls < 3 { // Dial's health check, the start, the list
		t.Fatalf("the provider was asked %d times, want one per request (3 at least)", calls)
	}

	p.set("wrong", nil)
	if _, err := c.ListWorkflows(ctx, engine.ListQuery{}); !errors.Is(err, httpapi.ErrUnauthorized) {
		t.Fatalf("a wrong token: %v, want httpapi.ErrUnauthorized", err)
	}
	boom := errors.New("no key")
	p.set("", boom)
	if _, err := c.ListWorkflows(ctx, engine.ListQuery{}); !errors.Is(err, boom) {
		t.Fatalf("the provider's error: got %v, want it to wrap %v", err, boom)
	}
	p.set("s3cret", nil)
	if _, err := c.ListWorkflows(ctx, engine.ListQuery{}); err != nil {
		t.Fatalf("the token renewed: %v", err)
	}
}
