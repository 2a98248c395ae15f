package machine_test

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// Every failure names its seed. Replay one with
//
//	go test ./engine/machine -run TestResourceUnitsAcrossShardsProperty -units.seed=N -v
var (
	unitSeed  = flag.Int64("units.seed", 0, "run only this seed of the cross-shard resource property test")
	unitSeeds = flag.Int("units.seeds", 8, "how many seeds the cross-shard resource property test runs")
)

// TestResourceUnitsAcrossShardsProperty drives two shards, the pool's
// (0) and another (1), with runs on both whose steps need units of a pool
// of three units, through random leases, commits, retries, lease
// expiries, run ends, and deliveries and acknowledgements of the outbox in
// a random interleaving (repeated deliveries included, each pair in
// order, as the deliverer keeps it). After every command both stores pass
// VerifyShard and together VerifyAcrossShards: no unit is used beyond its
// capacity, leaked, or held by a step the pool does not count. At the end
// every run ends and the outboxes drain: every unit is back and the pool
// keeps no record of another shard's steps.
func TestResourceUnitsAcrossShardsProperty(t *testing.T) {
	seeds := []int64{}
	if *unitSeed != 0 {
		seeds = append(seeds, *unitSeed)
	} else {
		for i := range *unitSeeds {
			seeds = append(seeds, int64(9001+i*104729))
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("seed %d", seed)
			w := newUnitWorld(t, seed)
			w.run(600)
			t.Logf("outcomes met: %v", w.seen)
		})
	}
}

// unitRun is one run of the property test and what the test knows of it.
type unitRun struct {
	shard int
	ref   engine.LeaseRef
	step  int // its current step, from 1; 0 when it ended
	ended bool
}

type unitWorld struct {
	t      *testing.T
	r      *rand.Rand
	seed   int64
	h      [2]*harness
	runs   []*unitRun
	layout [2]engine.ShardLayout
	// answers are the first outcome of each delivered entry, which its
	// acknowledgement carries.
	answers map[engine.DeliveryRef]engine.DeliverResult
	// seen counts the kinds of unit outcomes the run met, by name.
	seen map[string]int
}

const unitSteps = 5

func newUnitWorld(t *testing.T, seed int64) *unitWorld {
	w := &unitWorld{t: t, seed: seed, r: rand.New(rand.NewPCG(uint64(seed), 7)), answers: map[engine.DeliveryRef]engine.DeliverResult{}, seen: map[string]int{}}
	for k := range 2 {
		w.layout[k] = engine.ShardLayout{Index: k, Count: 2}
		w.h[k] = newShardHarness(t, w.layout[k])
	}
	w.h[0].must(&engine.AddResource{ID: "r-a", Capabilities: []string{"x"}, Capacity: 2})
	w.h[0].must(&engine.AddResource{ID: "r-b", Capabilities: []string{"x", "y"}, Capacity: 1})
	for i, shard := range []int{0, 1, 1, 1, 0, 1, 1, 1} {
		h := w.h[shard]
		wf := keyOnShard(fmt.Sprintf("run%d-", i), shard, 2)
		h.must(&engine.CreateJob{WorkflowID: wf, Type: "t", Queue: fmt.Sprintf("q%d", i)})
		res := h.must(&engine.Claim{Queue: fmt.Sprintf("q%d", i), Owner: "w", LeaseMS: 3_600_000, Max: 1}).(*engine.ClaimResult)
		c := res.Jobs[0]
		w.runs = append(w.runs, &unitRun{shard: shard, ref: engine.LeaseRef{Job: c.Job, Attempt: c.Attempt, Token: c.LeaseToken}, step: 1})
	}
	return w
}

func (w *unitWorld) fail(format string, args ...any) {
	w.t.Helper()
	w.t.Fatalf("seed %d: "+format, append([]any{w.seed}, args...)...)
}

// caps is what step n of a run needs: every other one also y, which one
// resource offers.
func caps(n int) []string {
	if n%2 == 0 {
		return []string{"x", "y"}
	}
	return []string{"x"}
}

func (w *unitWorld) lease(u *unitRun) *engine.StepResult {
	res, err := w.h[u.shard].apply(&engine.LeaseStep{LeaseRef: u.ref, Step: fmt.Sprint(u.step), Name: "Use", LeaseMS: 10_000,
		Capabilities: caps(u.step), Start: true})
	if err != nil {
		w.fail("lease step %d of job %d: %v", u.step, u.ref.Job, err)
	}
	return res.(*engine.StepResult)
}

func (w *unitWorld) run(ops int) {
	for range ops {
		w.op()
		w.check()
	}
	for _, u := range w.runs {
		if !u.ended {
			w.h[u.shard].must(&engine.Terminate{Target: engine.Target{Job: u.ref.Job}, Reason: "done"})
			u.ended = true
			w.check()
		}
	}
	for w.pump() {
		w.check()
	}
	viewOK(w.t, w.h[0].db, func(r *storage.Reader) error {
		rs, err := machine.ReadResources(r)
		for _, x := range rs {
			if len(x.Holders) != 0 {
				w.fail("after every run ended, %s still holds %+v", x.ID, x.Holders)
			}
		}
		units, uerr := machine.ReadRemoteUnits(r)
		if len(units) != 0 {
			w.fail("after every run ended, the pool keeps %d remote unit records", len(units))
		}
		return errors.Join(err, uerr)
	})
}

// op applies one random command.
func (w *unitWorld) op() {
	u := w.runs[w.r.IntN(len(w.runs))]
	switch n := w.r.IntN(20); {
	case n < 5 && !u.ended:
		w.lease(u)
	case n < 8 && !u.ended:
		// The worker's next look adopts a grant, and the try ends: it
		// succeeds, or fails to be tried again.
		res := w.lease(u)
		if !res.Granted {
			return
		}
		if w.r.IntN(3) == 0 {
			w.h[u.shard].must(&engine.EndStepAttempt{LeaseRef: u.ref, Step: fmt.Sprint(u.step), Name: "Use",
				StepAttempt: res.StepAttempt, Outcome: engine.OutcomeRetry})
			return
		}
		w.h[u.shard].must(&engine.CommitStep{LeaseRef: u.ref, Step: fmt.Sprint(u.step), Type: engine.EventActivityCompleted,
			StepAttempt: res.StepAttempt})
		if u.step++; u.step > unitSteps {
			w.h[u.shard].must(&engine.Complete{LeaseRef: u.ref})
			u.ended = true
		}
	case n == 8 && !u.ended:
		w.h[u.shard].must(&engine.Terminate{Target: engine.Target{Job: u.ref.Job}, Reason: "enough"})
		u.ended = true
	case n == 9:
		// Time passes: step leases (10 s) run out.
		for _, h := range w.h {
			h.now += 6_000
			h.must(&engine.ExpireSteps{Max: 100})
		}
	default:
		w.deliverOne()
	}
}

// pending returns the pending entries of shard k, in order per target.
func (w *unitWorld) pending(k int) []*engine.OutboxEntry {
	var es []*engine.OutboxEntry
	viewOK(w.t, w.h[k].db, func(r *storage.Reader) (err error) {
		es, err = machine.PendingEntries(r, 0)
		return err
	})
	return es
}

// deliverOne takes the first pending entry of a random shard: delivers it
// (again, if it was), or acknowledges it once delivered.
func (w *unitWorld) deliverOne() {
	k := w.r.IntN(2)
	es := w.pending(k)
	if len(es) == 0 {
		return
	}
	e := es[0]
	if _, done := w.answers[e.DeliveryRef]; done && w.r.IntN(3) != 0 {
		w.h[k].must(&engine.AckDelivery{DeliveryRef: e.DeliveryRef, Answer: w.answers[e.DeliveryRef]})
		return
	}
	w.deliver(e)
}

// deliver applies entry e on its target as the deliverer does: a refusal
// is delivered again as the entry's outcome. The first outcome is kept.
func (w *unitWorld) deliver(e *engine.OutboxEntry) {
	t := w.h[e.Target]
	d := &engine.Deliver{DeliveryRef: e.DeliveryRef, Command: e.Command, AckedBelow: e.Seq}
	res, err := t.apply(d)
	if err != nil {
		d.Refusal = &engine.DeliverResult{Kind: e.Kind, Error: err.Error(), Outcome: machine.Outcome(err)}
		res, err = t.apply(d)
		if err != nil {
			w.fail("deliver %s with its refusal: %v", e.DeliveryRef, err)
		}
	}
	ans := *res.(*engine.DeliverResult)
	ans.Duplicate = false
	if _, ok := w.answers[e.DeliveryRef]; !ok {
		w.answers[e.DeliveryRef] = ans
		w.count(e.Kind, ans)
	} else {
		w.seen["delivered again"]++
	}
}

// count notes the outcome ans of a unit command of kind k.
func (w *unitWorld) count(k engine.CommandKind, ans engine.DeliverResult) {
	if ans.Error != "" {
		w.seen[k.String()+" refused"]++
		return
	}
	_, r, err := machine.DecodeResult(ans.Result)
	if err != nil {
		w.fail("an answer's result: %v", err)
	}
	u, ok := r.(*engine.UnitResult)
	switch {
	case !ok:
	case u.Queued:
		w.seen[k.String()+" queued"]++
	case u.Declined:
		w.seen[k.String()+" declined"]++
	case u.Released:
		w.seen[k.String()+" released"]++
	case u.Resource != "":
		w.seen[k.String()+" granted"]++
	default:
		w.seen[k.String()+" found nothing"]++
	}
}

// pump delivers and acknowledges the first pending entry of either shard,
// and reports whether there was one.
func (w *unitWorld) pump() bool {
	for k := range 2 {
		if es := w.pending(k); len(es) > 0 {
			e := es[0]
			if _, done := w.answers[e.DeliveryRef]; !done {
				w.deliver(e)
			}
			w.h[k].must(&engine.AckDelivery{DeliveryRef: e.DeliveryRef, Answer: w.answers[e.DeliveryRef]})
			return true
		}
	}
	return false
}

func (w *unitWorld) check() {
	w.t.Helper()
	for k, h := range w.h {
		viewOK(w.t, h.db, func(r *storage.Reader) error {
			for _, err := range machine.VerifyShard(r, 5, w.layout[k]) {
				w.fail("shard %d: %v", k, err)
			}
			return nil
		})
	}
	errs := machine.VerifyAcrossShards(2, func(k int, fn func(r *storage.Reader) error) error { return w.h[k].db.View(fn) }, 5)
	for _, err := range errs {
		w.fail("across shards: %v", err)
	}
}
