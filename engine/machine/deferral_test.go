package machine_test

import (
	"fmt"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// readyCount is the number of entries in queue's ready index.
func (h *harness) readyCount(queue string) int {
	h.t.Helper()
	n := 0
	err := h.db.View(func(r *storage.Reader) error {
		return r.Scan(storage.ReadyPrefix(queue), nil, false, func([]byte, []byte) (bool, error) { n++; return true, nil })
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

// A claimer that does not run a job's type passes it over: the job stays
// Queued with no event written, leaves the ready index for the delayed one,
// and its record says why. The delayed sweep puts it back exactly when its
// backoff ends (1 s, 2 s, 4 s, … capped at 30 s, counting deferrals in a
// row), and a claim by a claimer that runs it resets the count.
func TestClaimDefersTypesItDoesNotRun(t *testing.T) {
	h := newHarness(t)
	a1 := h.must(&engine.CreateJob{Type: "a", Queue: "q"}).(*engine.CreateResult).Job
	b := h.must(&engine.CreateJob{Type: "b", Queue: "q"}).(*engine.CreateResult).Job
	a2 := h.must(&engine.CreateJob{Type: "a", Queue: "q"}).(*engine.CreateResult).Job
	onlyA := &engine.Claim{Queue: "q", Owner: "w-a", Max: 5, LeaseMS: 60_000, Types: []string{"a", "x"}}
	r := h.must(onlyA).(*engine.ClaimResult)
	if len(r.Jobs) != 2 || r.Jobs[0].Job != a1 || r.Jobs[1].Job != a2 || len(r.Deferred) != 1 || r.Deferred[0] != b {
		t.Fatalf("claim = %+v, want jobs %d, %d and job %d deferred", r, a1, a2, b)
	}
	wantReason := `no worker on queue "q" registers type "b" (asked by owner "w-a")`
	for i, wantDelay := range []int64{1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000} {
		j := h.job(b)
		if j.Status != engine.StatusQueued || j.LastSeq != 1 || j.Deferrals != uint32(i+1) || j.DeferredReason != wantReason ||
			j.DeferredUntilMS != h.now+wantDelay {
			t.Fatalf("deferral %d: record %+v; want Queued, 1 event, %d deferrals, until now+%d, reason %q",
				i+1, *j, i+1, wantDelay, wantReason)
		}
		if n := h.readyCount("q"); n != 0 {
			t.Fatalf("deferral %d: %d jobs in the ready index, want none", i+1, n)
		}
		h.verify()
		// Not a millisecond early, …
		h.now += wantDelay - 1
		if rel := h.must(&engine.ReleaseDelayed{Max: 10}).(*engine.SweepResult); len(rel.Jobs) != 0 {
			t.Fatalf("deferral %d: released early: %+v", i+1, rel)
		}
		if c := h.must(&engine.Claim{Queue: "q", Owner: "w-any", Max: 5, LeaseMS: 1000}).(*engine.ClaimResult); len(c.Jobs) != 0 {
			t.Fatalf("deferral %d: a deferred job was claimed: %+v", i+1, c)
		}
		// … and exactly on time.
		h.now++
		rel := h.must(&engine.ReleaseDelayed{Max: 10}).(*engine.SweepResult)
		if len(rel.Jobs) != 1 || rel.Jobs[0] != b || len(rel.Ready) != 1 {
			t.Fatalf("deferral %d: release = %+v", i+1, rel)
		}
		if j := h.job(b); j.DeferredUntilMS != 0 || j.ReadyAtMS != h.now || j.LastSeq != 1 || h.readyCount("q") != 1 {
			t.Fatalf("deferral %d: released record %+v, %d ready", i+1, *j, h.readyCount("q"))
		}
		h.verify()
		h.now += 10
		if r := h.must(onlyA).(*engine.ClaimResult); len(r.Jobs) != 0 || len(r.Deferred) != 1 {
			t.Fatalf("deferral %d: claim again = %+v", i+2, r)
		}
	}
	h.now += 30_000
	h.must(&engine.ReleaseDelayed{Max: 10})
	c := h.must(&engine.Claim{Queue: "q", Owner: "w-b", Max: 5, LeaseMS: 60_000, Types: []string{"b"}}).(*engine.ClaimResult)
	if len(c.Jobs) != 1 || c.Jobs[0].Job != b || len(c.Deferred) != 0 {
		t.Fatalf("claim by a worker of b = %+v", c)
	}
	j := h.job(b)
	if j.Deferrals != 0 || j.DeferredReason != "" || j.DeferredUntilMS != 0 {
		t.Fatalf("claimed record keeps its deferral: %+v", *j)
	}
	var types []engine.EventType
	for _, ev := range h.history(b) {
		types = append(types, ev.Type)
	}
	if fmt.Sprint(types) != "[job_created job_leased]" {
		t.Fatalf("history %v: deferrals wrote events", types)
	}
	h.verify()
}

// One claim defers at most engine.MaxDeferralsPerClaim jobs; the next goes on
// from where it stopped.
func TestClaimDefersABoundedNumber(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < engine.MaxDeferralsPerClaim+10; i++ {
		h.must(&engine.CreateJob{Type: "b", Queue: "q"})
	}
	a := h.must(&engine.CreateJob{Type: "a", Queue: "q"}).(*engine.CreateResult).Job
	claim := &engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 1000, Types: []string{"a"}}
	r := h.must(claim).(*engine.ClaimResult)
	if len(r.Jobs) != 0 || len(r.Deferred) != engine.MaxDeferralsPerClaim {
		t.Fatalf("first claim took %d, deferred %d; want 0 and %d", len(r.Jobs), len(r.Deferred), engine.MaxDeferralsPerClaim)
	}
	r = h.must(claim).(*engine.ClaimResult)
	if len(r.Jobs) != 1 || r.Jobs[0].Job != a || len(r.Deferred) != 10 {
		t.Fatalf("second claim = %d jobs, %d deferred; want job %d and 10", len(r.Jobs), len(r.Deferred), a)
	}
	h.verify()
}

// A claim that took no job leaves its request id unused even though it
// deferred jobs (it wrote): the next turn of a long poll with the same id
// claims afresh instead of being answered "nothing" again.
func TestDeferringClaimLeavesItsRequestIDUnused(t *testing.T) {
	h := newHarness(t)
	h.must(&engine.CreateJob{Type: "b", Queue: "q"})
	claim := func() *engine.ClaimResult {
		c := &engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 1000, Types: []string{"a"}}
		c.RequestID = "poll-1"
		return h.must(c).(*engine.ClaimResult)
	}
	if r := claim(); len(r.Jobs) != 0 || len(r.Deferred) != 1 {
		t.Fatalf("first claim = %+v", r)
	}
	a := h.must(&engine.CreateJob{Type: "a", Queue: "q"}).(*engine.CreateResult).Job
	r := claim()
	if len(r.Jobs) != 1 || r.Jobs[0].Job != a {
		t.Fatalf("second claim with the same id = %+v, want job %d", r, a)
	}
	if again := claim(); len(again.Jobs) != 1 || again.Jobs[0].Job != r.Jobs[0].Job || again.Jobs[0].Attempt != r.Jobs[0].Attempt {
		t.Fatalf("a retry of the claim that took a job = %+v, want its jobs again", again)
	}
	h.verify()
}
