package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// The API's views never decode a payload: a history page and a run's steps
// carry payloads as bytes (base64 in JSON; a step's question as JSON text),
// so a payload nested 800,000 levels deep (the one that killed the web UI)
// or declaring four billion elements costs them a few times its size, in
// JSON and in msgpack. Before the fix a question of JSON nested 10,000
// levels was embedded as it was, and encoding/json refused the document
// ("exceeded max depth"): GET /v1/jobs/{job}/steps answered 500 for the
// run. A question nested deeper than 32 levels is now a JSON string.
func TestHostilePayloadsInTheAPIViews(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	c := newClient(t, ClientConfig{Addrs: []string{hs.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, p := range [][]byte{
		append(bytes.Repeat([]byte{0x91}, 800_000), 0xc0),
		append(bytes.Repeat([]byte("["), 10_000), bytes.Repeat([]byte("]"), 10_000)...),
		append([]byte{0x91, 0xdd, 0xff, 0xff, 0xff, 0xff}, bytes.Repeat([]byte{0xc0}, 1000)...),
	} {
		queue := fmt.Sprintf("q%d", i)
		cr, err := c.Create(ctx, engine.CreateJob{Type: "T", Queue: queue, Input: p})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Signal(ctx, engine.Signal{Target: engine.Target{Job: cr.Job}, Name: "s", Payload: p}); err != nil {
			t.Fatal(err)
		}
		jobs, err := c.Claim(ctx, engine.Claim{Queue: queue, Owner: "w", Max: 1, LeaseMS: 60_000})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim: %v", err)
		}
		ref := jobs[0].Lease()
		if _, err := c.LeaseStep(ctx, engine.LeaseStep{LeaseRef: ref, Step: "1", Name: "Ask", LeaseMS: 60_000}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.EndStepAttempt(ctx, engine.EndStepAttempt{LeaseRef: ref, Step: "1", Name: "Ask", StepAttempt: 1, Outcome: engine.OutcomeNeedsUser, Payload: p}); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{fmt.Sprintf("/v1/jobs/%d/history", cr.Job), fmt.Sprintf("/v1/jobs/%d/steps", cr.Job)} {
			for _, accept := range []string{contentJSON, contentMsgpack} {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Accept", accept)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				runtime.ReadMemStats(&after)
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("%s as %s: HTTP %d, %v", path, accept, resp.StatusCode, err)
				}
				// Three payloads at most (input, signal, question), each
				// at most six times its size (a byte that is not UTF-8
				// becomes the six characters \ufffd in a JSON string).
				if limit := 18*len(p) + 64<<10; len(body) > limit {
					t.Errorf("%s as %s: %d bytes for a payload of %d", path, accept, len(body), len(p))
				}
				if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(200*len(p)+16<<20) {
					t.Errorf("%s as %s: the server and client allocated %d MiB for a payload of %d bytes", path, accept, alloc>>20, len(p))
				}
			}
		}
		page, err := c.History(ctx, cr.Job, 0, engine.MaxPage)
		if err != nil || !bytes.Equal(page.Events[0].Payload, p) {
			t.Fatalf("the input does not read back: %v", err)
		}
	}
}
