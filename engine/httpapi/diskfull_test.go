package httpapi

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/storage"
)

// A write refused for want of disk space reaches the client as 507
// Insufficient Storage, named no_space with the storage code, and is not
// retried; reads go on.
func TestDiskFullIs507(t *testing.T) {
	var free atomic.Uint64
	free.Store(1 << 40)
	e, err := embedded.Open(embedded.Config{Dir: t.TempDir(), DisableScheduler: true, Storage: storage.Options{
		ReserveBytes: 1 << 30,
		FreeBytes:    func(string) (uint64, error) { return free.Load(), nil },
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	_, hs := serve(t, ServerConfig{Service: e})
	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	ctx := context.Background()
	first, err := c.Create(ctx, engine.CreateJob{Type: "T", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}

	free.Store(1 << 20)
	_, err = c.Create(ctx, engine.CreateJob{Type: "T", Queue: "q"})
	var re *RemoteError
	if !errors.As(err, &re) || !errors.Is(err, engine.ErrNoSpace) {
		t.Fatalf("create on a full disk: %v, want a no_space RemoteError", err)
	}
	if re.Status != http.StatusInsufficientStorage || re.Body.Name != "no_space" || re.Code() != storage.NoSpaceCode {
		t.Fatalf("create on a full disk: %d %+v", re.Status, re.Body)
	}
	if retryable(err) {
		t.Error("a full disk is retried")
	}
	if _, err := c.Describe(ctx, engine.Target{Job: first.Job}); err != nil {
		t.Fatalf("a read on a full disk: %v", err)
	}

	free.Store(1 << 40)
	if _, err := c.Create(ctx, engine.CreateJob{Type: "T", Queue: "q"}); err != nil {
		t.Fatalf("create once space returned: %v", err)
	}
}
