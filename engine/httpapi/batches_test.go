package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
)

// TestClientCoversTheBatches starts, describes, lists and stops batches
// through the Client and the Server against an engine that runs them,
// with the roles the routes need: a reader reads batches, only an admin
// starts or stops one, and the batch records who started it.
func TestClientCoversTheBatches(t *testing.T) {
	e, err := embedded.Open(embedded.Config{InMemory: true, BatchRunsPerSecond: 100000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	tokens := &Tokens{}
	for _, tk := range []struct {
		name string
		role Role
	}{{"rita", RoleReader}, {"carl", RoleClient}, {"ada", RoleAdmin}} {
		if err := tokens.Add(tk.name, tk.role, tk.name+"-token"); err != nil {
			t.Fatal(err)
		}
	}
	_, hs := serve(t, ServerConfig{Service: e, Tokens: tokens})
	admin := newClient(t, ClientConfig{Addrs: []string{hs.URL}, Token: "ada-token"})
	client := newClient(t, ClientConfig{Addrs: []string{hs.URL}, Token: "carl-token"})
	reader := newClient(t, ClientConfig{Addrs: []string{hs.URL}, Token: "rita-token"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 5 {
		if _, err := admin.Create(ctx, engine.CreateJob{WorkflowID: fmt.Sprintf("o-%d", i), Type: "order", Queue: "q"}); err != nil {
			t.Fatal(err)
		}
	}
	spec := engine.BatchSpec{Operation: engine.BatchTerminate, Query: `WorkflowType = "order"`, Reason: "cleanup"}
	if _, err := client.StartBatch(ctx, engine.StartBatch{ID: "b1", BatchSpec: spec}); !errors.Is(err, ErrForbidden) {
		t.Fatalf("a client starting a batch: %v, want ErrForbidden", err)
	}
	res, err := admin.StartBatch(ctx, engine.StartBatch{ID: "b1", BatchSpec: spec})
	if err != nil || res.Batch.Total != 5 || res.Batch.By != "ada" {
		t.Fatalf("start: %+v %v", res, err)
	}
	if _, err := admin.StartBatch(ctx, engine.StartBatch{ID: "b1", BatchSpec: spec}); !errors.Is(err, engine.ErrBatchExists) {
		t.Fatalf("second start: %v", err)
	}
	var b *engine.Batch
	for {
		// The commit channel is taken before the read: a batch that
		// completes between the two closes it, where one taken after the
		// read would wait for a commit that never comes.
		committed := e.Committed()
		if b, err = reader.DescribeBatch(ctx, "b1"); err != nil {
			t.Fatal(err)
		}
		if b.State != engine.BatchRunning {
			break
		}
		select {
		case <-committed:
		case <-ctx.Done():
			t.Fatalf("batch still running: %+v", b)
		}
	}
	if b.State != engine.BatchCompleted || b.Done != 5 {
		t.Fatalf("batch ended %+v", b)
	}
	if _, err := reader.StopBatch(ctx, engine.StopBatch{ID: "b1"}); !errors.Is(err, ErrForbidden) {
		t.Fatalf("a reader stopping a batch: %v, want ErrForbidden", err)
	}
	if _, err := admin.StopBatch(ctx, engine.StopBatch{ID: "b1"}); !errors.Is(err, engine.ErrIllegalTransition) {
		t.Fatalf("stopping a completed batch: %v, want ErrIllegalTransition", err)
	}
	// An id chosen by the client, and a stop before the runner is done
	// (a rate of one run a second leaves it running).
	slow := spec
	slow.Query, slow.RunsPerSecond = "", 1
	res, err = admin.StartBatch(ctx, engine.StartBatch{BatchSpec: slow})
	if err != nil || !strings.HasPrefix(res.Batch.ID, "batch-") {
		t.Fatalf("start without an id: %+v %v", res, err)
	}
	st, err := admin.StopBatch(ctx, engine.StopBatch{ID: res.Batch.ID, Reason: "enough"})
	if err != nil || st.Batch.State != engine.BatchTerminated || st.Batch.StopBy != "ada" {
		t.Fatalf("stop: %+v %v", st, err)
	}
	page, err := reader.ListBatches(ctx, engine.BatchListQuery{Limit: 1})
	if err != nil || len(page.Batches) != 1 || page.Batches[0].ID != "b1" || page.Next != "b1" {
		t.Fatalf("list: %+v %v", page, err)
	}
	if _, err := reader.DescribeBatch(ctx, "missing"); !errors.Is(err, engine.ErrUnknownBatch) {
		t.Fatalf("describe missing: %v", err)
	}

	// JSON, as curl would send it.
	var out engine.BatchResult
	r := postJSONAuth(t, hs.URL+"/v1/batches", "ada-token", map[string]any{
		"batch_id": "j", "operation": "signal", "query": "type=nothing", "signal_name": "poke",
	}, &out)
	if r.status != http.StatusOK || out.Batch == nil || out.Batch.SignalName != "poke" {
		t.Fatalf("JSON start: %d %s", r.status, r.body)
	}
	r = doRaw(t, http.MethodGet, hs.URL+"/v1/batches/j", nil, map[string]string{"Authorization": "Bearer rita-token"})
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"operation":"signal"`) {
		t.Fatalf("JSON describe: %d %s", r.status, r.body)
	}
	r = doRaw(t, http.MethodGet, hs.URL+"/v1/batches/missing", nil, map[string]string{"Authorization": "Bearer rita-token"})
	if b := errorBodyOf(t, r); r.status != http.StatusNotFound || b.Name != "unknown_batch" {
		t.Fatalf("JSON describe missing: %d %s", r.status, r.body)
	}
}

// postJSONAuth is postJSON with a bearer token.
func postJSONAuth(t testing.TB, url, token string, v, out any) rawResponse {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	r := doRaw(t, http.MethodPost, url, b, map[string]string{"Content-Type": contentJSON, "Authorization": "Bearer " + token})
	if r.status == http.StatusOK && out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			t.Fatalf("%s: %v in %s", url, err, r.body)
		}
	}
	return r
}
