package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// Through the HTTP API, two workers with tokens of
// their own, and a client. The attempt of a job is public (describe shows
// it), so a worker that does not hold a job's lease can name it; without
// the lease token the claim gave the holder, its writes are refused, and
// so is a client's child or async completion under a run it does not hold.
func TestLeaseTokenOverHTTP(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	tk := &Tokens{}
	for _, g := range []struct {
		name, token string
		role        Role
	}{{"holder", "hdl_holder", RoleWorker}, {"other", "hdl_other", RoleWorker}, {"app", "hdl_app", RoleClient}} {
		if err := tk.Add(g.name, g.role, g.token); err != nil {
			t.Fatal(err)
		}
	}
	_, hs := serve(t, ServerConfig{Service: e, Tokens: tk})
	holder := newClient(t, ClientConfig{Addrs: []string{hs.URL}, Token: "hdl_holder"})
	other := newClient(t, ClientConfig{Addrs: []string{hs.URL}, Token: "hdl_other"})
	app := newClient(t, ClientConfig{Addrs: []string{hs.URL}, Token: "hdl_app"})
	ctx := context.Background()

	run, err := app.Create(ctx, engine.CreateJob{WorkflowID: "order-7", Type: "Order", Queue: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := holder.Claim(ctx, engine.Claim{Queue: "orders", Owner: "holder", Max: 1, LeaseMS: 60_000})
	if err != nil || len(jobs) != 1 || len(jobs[0].LeaseToken) != 32 {
		t.Fatalf("claim over HTTP: %+v %v", jobs, err)
	}
	lease := jobs[0].Lease()

	// What anyone who may read sees: the attempt, never the token.
	j, err := other.Describe(ctx, engine.Target{Job: run.Job})
	if err != nil || j.Attempt != lease.Attempt || len(j.LeaseDigest) == 0 {
		t.Fatalf("describe: %+v %v", j, err)
	}
	for _, accept := range []string{contentJSON, contentMsgpack} {
		r := doRaw(t, "GET", hs.URL+"/v1/workflows/order-7", nil, map[string]string{"Authorization": "Bearer hdl_other", "Accept": accept})
		if r.status != http.StatusOK || strings.Contains(string(r.body), lease.Token) {
			t.Fatalf("describe as %s: %d, holds the token: %v", accept, r.status, strings.Contains(string(r.body), lease.Token))
		}
	}

	// The other worker names the public attempt: refused, nothing written.
	public := engine.LeaseRef{Job: run.Job, Attempt: j.Attempt}
	if _, err := other.Complete(ctx, engine.Complete{LeaseRef: public, Result: []byte(`"forged"`)}); !isWrongToken(err) {
		t.Fatalf("complete by another worker: %v, want a stale attempt without the lease token", err)
	}
	if _, err := other.CommitStep(ctx, engine.CommitStep{LeaseRef: public, Step: "1", Type: "activity_completed", Payload: []byte(`"forged"`)}); !isWrongToken(err) {
		t.Fatalf("commit-step by another worker: %v", err)
	}
	hb, err := other.Heartbeat(ctx, engine.Heartbeat{Leases: []engine.LeaseRef{public}, LeaseMS: 3_600_000})
	if err != nil || len(hb.Refused) != 1 || hb.Refused[0].Code != engine.StaleAttemptCode {
		t.Fatalf("heartbeat by another worker: %+v %v, want refused", hb, err)
	}
	// Nor may a client start a child (or a remote activity, or a review
	// task) of the run: its end would write into the run's step 1.
	for _, pl := range []*engine.LeaseRef{nil, &public} {
		_, err := app.Create(ctx, engine.CreateJob{WorkflowID: "evil", Type: "@activity:x", Queue: "evil", ParentID: run.Job, ParentStep: "1", ParentLease: pl})
		if pl == nil && !errors.Is(err, engine.ErrInvalidCommand) || pl != nil && !isWrongToken(err) {
			t.Fatalf("child with parent lease %+v: %v", pl, err)
		}
	}
	if _, err := app.CreateReview(ctx, engine.CreateReview{Job: "evil", Phase: "p", Queue: "evil", Type: "w", ParentJob: run.Job, ParentStep: "1", ParentLease: &public}); !isWrongToken(err) {
		t.Fatalf("task under the run: %v", err)
	}
	if h, err := holder.History(ctx, run.Job, 0, 0); err != nil || len(h.Events) != 2 {
		t.Fatalf("the refused writes wrote: %+v %v", h, err)
	}

	// The holder starts the run's activity on another queue, whose worker
	// parks it for asynchronous completion; its task token's lease token
	// is what completes it.
	act, err := holder.Create(ctx, engine.CreateJob{WorkflowID: "order-7/1/1", Type: engine.ActivityTypePrefix + "Charge", Queue: "acts",
		ParentID: run.Job, ParentStep: "1", ParentLease: &lease})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := other.Claim(ctx, engine.Claim{Queue: "acts", Owner: "other", Max: 1, LeaseMS: 60_000})
	if err != nil || len(tasks) != 1 {
		t.Fatalf("claim of the activity: %+v %v", tasks, err)
	}
	if _, err := other.Wait(ctx, engine.Wait{LeaseRef: tasks[0].Lease(), Spec: engine.WaitSpec{Signals: []string{engine.AsyncCompletionSignal}, Park: true}, SeenSeq: tasks[0].LastSeq}); err != nil {
		t.Fatal(err)
	}
	forged := engine.CompleteAsync{LeaseRef: engine.LeaseRef{Job: act.Job, Attempt: tasks[0].Attempt}, Result: []byte(`"forged"`)}
	if _, err := app.CompleteAsync(ctx, forged); !isWrongToken(err) {
		t.Fatalf("complete-async with a forged task token: %v", err)
	}
	if _, err := app.CompleteAsync(ctx, engine.CompleteAsync{LeaseRef: tasks[0].Lease(), Result: []byte(`"paid"`)}); err != nil {
		t.Fatalf("complete-async with the task token: %v", err)
	}
	if eff, err := app.Effect(ctx, run.Job, "1"); err != nil || string(eff.Payload) != `"paid"` {
		t.Fatalf("the run's step 1: %+v %v", eff, err)
	}
	if _, err := holder.Complete(ctx, engine.Complete{LeaseRef: lease, Result: []byte(`"done"`)}); err != nil {
		t.Fatalf("complete by the holder: %v", err)
	}
}

// isWrongToken reports a refusal of a write without its lease's token,
// in-process or over the wire.
func isWrongToken(err error) bool {
	return errors.Is(err, engine.ErrStaleAttempt) && strings.Contains(err.Error(), "without the lease token")
}

// A caller cannot choose the nonce a claim's tokens come from: a msgpack
// body may name one, and the server's engine replaces it, so the token is
// not the one that nonce would give.
func TestClaimNonceFromTheBodyIsIgnored(t *testing.T) {
	e := openEngine(t, engine.Limits{})
	_, hs := serve(t, ServerConfig{Service: e})
	cr, err := e.Create(context.Background(), engine.CreateJob{Type: "T", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	nonce := []byte("0123456789abcdef")
	body := mustMsgpack(t, map[string]any{"nc": nonce, "qu": "q", "ow": "w", "mx": 1, "ls": 60_000})
	r := doRaw(t, "POST", hs.URL+"/v1/jobs/claim", body, map[string]string{"Content-Type": contentMsgpack, "Accept": contentJSON})
	var res engine.ClaimResult
	if r.status != http.StatusOK || json.Unmarshal(r.body, &res) != nil || len(res.Jobs) != 1 || len(res.Jobs[0].LeaseToken) != 32 {
		t.Fatalf("claim: %d %s", r.status, r.body)
	}
	// The engine's derivation (engine/leasetoken.go), from the caller's nonce.
	h := sha256.New()
	h.Write([]byte("heddle lease token\x00job\x00"))
	h.Write(nonce)
	var n [16]byte
	binary.BigEndian.PutUint64(n[:8], uint64(cr.Job))
	binary.BigEndian.PutUint64(n[8:], 1)
	h.Write(n[:])
	if chosen := hex.EncodeToString(h.Sum(nil)[:16]); res.Jobs[0].LeaseToken == chosen {
		t.Fatalf("the token %s is the one the caller's nonce gives", chosen)
	}
}
