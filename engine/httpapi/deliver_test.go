package httpapi

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
)

// TestDeliverTakesOnlyNodes: POST /v1/cluster/deliver, which applies a
// command on a shard on another shard's behalf, is refused to a worker's
// and a client's token (only a node, or an admin, delivers); an admin
// reaching a node of no sharded cluster is told so.
func TestDeliverTakesOnlyNodes(t *testing.T) {
	e, err := embedded.Open(embedded.Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	_, hs := serve(t, ServerConfig{Service: e, Tokens: testTokens(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := &engine.Deliver{DeliveryRef: engine.DeliveryRef{Source: 0, Target: 1, Seq: 1}, Command: []byte{1}}
	for _, tok := range []string{workerToken, clientToken} {
		if _, err := (NodeSender{Token: tok}).Deliver(ctx, hs.URL, d); !errors.Is(err, ErrForbidden) {
			t.Fatalf("a delivery with a non-admin token: %v, want ErrForbidden", err)
		}
	}
	if _, err := (NodeSender{Token: adminToken}).Deliver(ctx, hs.URL, d); !errors.Is(err, ErrNoCluster) {
		t.Fatalf("a delivery to an unsharded node: %v, want ErrNoCluster", err)
	}
}
