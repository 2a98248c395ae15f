package httpapi

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// A body over MaxBodyBytes reaches the Go client as payload_too_large, not
// as a broken connection it would retry until RetryTimeout.
func TestClientSeesOversizedBody(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e, MaxBodyBytes: 64 << 10})
	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	for _, n := range []int{128 << 10, 4 << 20} {
		_, err := c.Create(context.Background(), engine.CreateJob{Type: "T", Queue: "q", Input: bytes.Repeat([]byte{'x'}, n)})
		if !errors.Is(err, engine.ErrPayloadTooLarge) {
			t.Fatalf("%d bytes: %v, want ErrPayloadTooLarge", n, err)
		}
	}
}
