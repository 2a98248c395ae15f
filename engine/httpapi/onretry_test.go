package httpapi

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// OnRetry sees each try that failed without an answer, with the address it
// went to, and the error it returns ends the call at once instead of the
// retries going on until RetryTimeout.
func TestClientOnRetryEndsTheCall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now: every try is refused
	stop := errors.New("stop: nothing listens")
	var seen []string
	c := newClient(t, ClientConfig{Addrs: []string{addr}, RetryTimeout: time.Hour, OnRetry: func(a string, err error) error {
		seen = append(seen, a+" "+err.Error())
		if len(seen) == 2 {
			return stop
		}
		return nil
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = c.Describe(ctx, engine.Target{Job: 1})
	if !errors.Is(err, stop) {
		t.Fatalf("Describe = %v, want OnRetry's error", err)
	}
	if len(seen) != 2 || !strings.Contains(seen[0], addr) || !strings.Contains(seen[0], "refused") {
		t.Fatalf("OnRetry saw %q; want two tries of %s, refused", seen, addr)
	}
}
