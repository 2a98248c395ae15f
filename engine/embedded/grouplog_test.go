package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// Tests of LocalLog's group commit, meant to run under -race. Tests that need
// a particular batch use a gatedLog: its OnCommit can be made to block, which
// holds the log's goroutine inside a commit while proposals pile up in the
// channel; the test waits (by polling the channel's length, never by timing)
// until exactly the proposals it wants are queued, then opens the gate, and
// the log drains them all into one applyBatch call. Nothing asserted depends
// on the scheduler of the machine.

// gatedLog is a LocalLog (over an in-memory store unless so names a Dir)
// whose commits can be held.
type gatedLog struct {
	t       testing.TB
	db      *storage.DB
	log     *LocalLog
	commits atomic.Int64 // OnCommit calls: one per durable batch
	gates   int          // gate proposals so far

	mu      sync.Mutex
	gate    chan struct{} // non-nil: the next OnCommit blocks until it is closed
	entered chan struct{} // closed when that OnCommit has started blocking
}

func newGatedLog(t testing.TB, so storage.Options, lim engine.Limits, maxCmds int) *gatedLog {
	t.Helper()
	so.InMemory = so.Dir == ""
	db, err := storage.Open(so)
	if err != nil {
		t.Fatal(err)
	}
	m, err := machine.NewMachine(lim)
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedLog{t: t, db: db}
	g.log, err = NewLocalLog(LocalLogConfig{DB: db, Machine: m, MaxBatchCommands: maxCmds, OnCommit: g.onCommit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		closeOK(t, g.log)
		closeOK(t, db)
	})
	return g
}

func (g *gatedLog) onCommit(_, _ []uint64) {
	g.commits.Add(1)
	g.mu.Lock()
	gate, entered := g.gate, g.entered
	g.gate, g.entered = nil, nil
	g.mu.Unlock()
	if gate != nil {
		close(entered)
		<-gate
	}
}

// hold blocks the log's goroutine inside the commit of a harmless proposal
// and returns the function that lets it go. Until then every proposal stays
// in the channel.
func (g *gatedLog) hold() (release func()) {
	g.t.Helper()
	gate, entered := make(chan struct{}), make(chan struct{})
	g.mu.Lock()
	g.gate, g.entered = gate, entered
	g.mu.Unlock()
	// The gate proposal must write something, or there is no commit to call
	// OnCommit after: a job of its own, in a queue no test claims from.
	g.gates++
	gc := &engine.CreateJob{WorkflowID: fmt.Sprintf("gate-%d", g.gates), Type: "gate", Queue: "gate"}
	if _, err := g.log.Propose(bg, gc); err != nil {
		g.t.Fatalf("gate proposal: %v", err)
	}
	select {
	case <-entered:
	case <-time.After(30 * time.Second): // only turns a hang into a failure
		g.t.Fatal("the gate proposal's commit never called OnCommit")
	}
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	g.t.Cleanup(release) // never leave the log stuck if the test fails early
	return release
}

// waitQueued waits until exactly n proposals wait in the log's channel.
func (g *gatedLog) waitQueued(n int) {
	g.t.Helper()
	glWaitFor(g.t, fmt.Sprintf("%d queued proposals", n), func() bool { return len(g.log.proposals) == n })
}

// glWaitFor polls cond. The deadline only turns a hang into a failure; no
// assertion depends on how fast anything happens.
func glWaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

type glOutcome struct {
	res engine.Result
	err error
}

// proposeAsync proposes cmd on its own goroutine; the answer arrives on the channel.
func (g *gatedLog) proposeAsync(ctx context.Context, cmd engine.Command) <-chan glOutcome {
	ch := make(chan glOutcome, 1)
	go func() {
		res, err := g.log.Propose(ctx, cmd)
		ch <- glOutcome{res, err}
	}()
	return ch
}

// inOrder queues cmds one after another, each only once the one before it
// is in the channel, so the log applies them in exactly this order.
func (g *gatedLog) inOrder(cmds ...engine.Command) []<-chan glOutcome {
	g.t.Helper()
	base := len(g.log.proposals)
	out := make([]<-chan glOutcome, len(cmds))
	for i, c := range cmds {
		out[i] = g.proposeAsync(bg, c)
		g.waitQueued(base + i + 1)
	}
	return out
}

func (g *gatedLog) must(cmd engine.Command) engine.Result {
	g.t.Helper()
	res, err := g.log.Propose(bg, cmd)
	if err != nil {
		g.t.Fatalf("%s: %v", cmd.Kind(), err)
	}
	return res
}

func (g *gatedLog) job(id engine.JobID) *engine.Job {
	g.t.Helper()
	var j *engine.Job
	if err := g.db.View(func(r *storage.Reader) (err error) { j, err = machine.ReadJob(r, id); return err }); err != nil {
		g.t.Fatal(err)
	}
	return j
}

func (g *gatedLog) history(id engine.JobID) []engine.Event {
	g.t.Helper()
	var evs []engine.Event
	if err := g.db.View(func(r *storage.Reader) (err error) { evs, _, err = machine.ReadHistory(r, id, 0, 0); return err }); err != nil {
		g.t.Fatal(err)
	}
	return evs
}

// glKeys returns every key and value under the given prefixes.
func glKeys(t testing.TB, db *storage.DB, prefixes ...[]byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := db.View(func(r *storage.Reader) error {
		for _, p := range prefixes {
			if err := r.Scan(p, nil, true, func(k, v []byte) (bool, error) {
				out[string(k)] = string(v)
				return true, nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func glVerify(t testing.TB, db *storage.DB) {
	t.Helper()
	var errs []error
	if err := db.View(func(r *storage.Reader) error { errs = machine.Verify(r, 10); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		t.Error(err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
}

func glMemEngine(t testing.TB) *Engine {
	t.Helper()
	e, err := Open(Config{InMemory: true, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, e) })
	return e
}

// Many goroutines propose at once; each gets exactly its own answer, and a
// retry by request id gets the first answer again.
func TestGroupCommitEachCallerGetsItsOwnResult(t *testing.T) {
	e := glMemEngine(t)
	const workers, perWorker = 64, 20
	var mu sync.Mutex
	byJob := map[engine.JobID]string{}
	byWF := map[string]engine.JobID{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				wf := fmt.Sprintf("wf-%d-%d", w, i)
				c := engine.CreateJob{WorkflowID: wf, Type: "order", Queue: "q", Input: []byte(wf)}
				if i%2 == 0 {
					c.RequestID = "req-" + wf
				}
				r, err := e.Create(bg, c)
				if err != nil {
					errs <- fmt.Errorf("create %s: %w", wf, err)
					return
				}
				if r.WorkflowID != wf || r.Existing || r.Job == 0 {
					errs <- fmt.Errorf("create %s answered %+v", wf, r)
					return
				}
				mu.Lock()
				if other, dup := byJob[r.Job]; dup {
					mu.Unlock()
					errs <- fmt.Errorf("job %d handed to both %s and %s", r.Job, other, wf)
					return
				}
				byJob[r.Job], byWF[wf] = wf, r.Job
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	if len(byJob) != workers*perWorker {
		t.Fatalf("%d distinct jobs, want %d", len(byJob), workers*perWorker)
	}

	// Retries of the request ids, all at once: each gets its own first answer
	// back and nothing new is created.
	errs = make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i += 2 {
				wf := fmt.Sprintf("wf-%d-%d", w, i)
				r, err := e.Create(bg, engine.CreateJob{Header: engine.Header{RequestID: "req-" + wf}, WorkflowID: wf, Type: "order", Queue: "q", Input: []byte(wf)})
				if err != nil || r.Job != byWF[wf] || r.WorkflowID != wf {
					errs <- fmt.Errorf("retry of %s: %+v, %v; want job %d", wf, r, err, byWF[wf])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for wf, id := range byWF {
		j, err := e.Describe(bg, engine.Target{WorkflowID: wf})
		if err != nil || j.ID != id || j.Status != engine.StatusQueued {
			t.Fatalf("describe %s: %+v, %v; want job %d Queued", wf, j, err, id)
		}
	}
	page, err := e.List(bg, engine.ListQuery{Limit: engine.MaxPage})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(page.Jobs); n != engine.MaxPage || page.NextPageToken == "" {
		t.Fatalf("list: %d jobs, next %q; want a full page and more", n, page.NextPageToken)
	}
	glVerify(t, e.DB())
}

// Concurrent claims never hand one job to two callers, and concurrent
// fenced writes of the claimed jobs each land on their own job.
func TestGroupCommitClaimsAreExclusive(t *testing.T) {
	e := glMemEngine(t)
	const jobs, workers = 1000, 64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < jobs; i += workers {
				if _, err := e.Create(bg, engine.CreateJob{WorkflowID: fmt.Sprintf("c-%d", i), Type: "order", Queue: "q"}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	var mu sync.Mutex
	claimedBy := map[engine.JobID]int{}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("w%d", w)
			for n := 0; ; n++ {
				got, err := e.Claim(bg, engine.Claim{Queue: "q", Owner: owner, Max: 1 + n%3, LeaseMS: 60_000})
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return // the queue is empty: every job was handed out
				}
				for _, c := range got {
					mu.Lock()
					prev, dup := claimedBy[c.Job]
					claimedBy[c.Job] = w
					mu.Unlock()
					if dup {
						t.Errorf("job %d claimed by worker %d and worker %d", c.Job, prev, w)
						return
					}
					if c.Attempt != 1 {
						t.Errorf("job %d: first claim has attempt %d", c.Job, c.Attempt)
					}
					ref := c.Lease()
					step := fmt.Sprintf("step-%d", c.Job)
					ar, err := e.CommitStep(bg, engine.CommitStep{LeaseRef: ref, Step: step, Type: "activity_completed", Payload: []byte(owner)})
					if err != nil || ar.FirstSeq != c.LastSeq+1 {
						t.Errorf("commit on job %d: %+v, %v (claim at seq %d)", c.Job, ar, err, c.LastSeq)
						return
					}
					sr, err := e.Complete(bg, engine.Complete{LeaseRef: ref})
					if err != nil || sr.Job != c.Job || sr.Status != engine.StatusCompleted || sr.Seq != ar.LastSeq+1 {
						t.Errorf("complete job %d: %+v, %v", c.Job, sr, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if len(claimedBy) != jobs {
		t.Fatalf("%d jobs claimed, want %d", len(claimedBy), jobs)
	}
	for id, w := range claimedBy {
		h, err := e.History(bg, id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		evs := h.Events
		if len(evs) != 4 || evs[1].Name != fmt.Sprintf("w%d", w) || evs[2].Step != fmt.Sprintf("step-%d", id) ||
			string(evs[2].Payload) != fmt.Sprintf("w%d", w) || evs[3].Type != engine.EventJobCompleted {
			t.Fatalf("job %d (worker %d) history %+v", id, w, evs)
		}
	}
	glVerify(t, e.DB())
}

// One batch holds commands that succeed and commands that fail; each failing
// command gets its own error, judged on the state left by the commands before
// it in the same batch, and writes nothing, while the others all land.
func TestGroupCommitFailureIsolated(t *testing.T) {
	g := newGatedLog(t, storage.Options{}, engine.Limits{}, 0)
	var ids [4]engine.JobID
	for i := range ids {
		ids[i] = g.must(&engine.CreateJob{WorkflowID: fmt.Sprintf("iso-%d", i), Type: "order", Queue: "q"}).(*engine.CreateResult).Job
	}
	claimed := g.must(&engine.Claim{Queue: "q", Owner: "w", Max: 4, LeaseMS: 60_000}).(*engine.ClaimResult).Jobs
	if len(claimed) != 4 {
		t.Fatalf("claimed %d jobs, want 4", len(claimed))
	}
	a, b, c, d := ids[0], ids[1], ids[2], ids[3]
	ref := func(id engine.JobID) engine.LeaseRef { return engine.LeaseRef{Job: id, Attempt: 1} }
	bBefore := glKeys(t, g.db, storage.JobKey(uint64(b)), storage.EventPrefix(uint64(b)), storage.EffectPrefix(uint64(b)))

	release := g.hold()
	before := g.commits.Load()
	outs := g.inOrder(
		&engine.AppendEvents{LeaseRef: ref(a), Events: []engine.NewEvent{{Type: "activity_started", Step: "s"}}},                   // 0 ok
		&engine.AppendEvents{LeaseRef: engine.LeaseRef{Job: b, Attempt: 2}, Events: []engine.NewEvent{{Type: "activity_started"}}}, // 1 stale attempt
		&engine.Complete{LeaseRef: ref(c), Result: []byte("done")},                                                                 // 2 ok
		&engine.AppendEvents{LeaseRef: ref(c), Events: []engine.NewEvent{{Type: "late"}}},                                          // 3 stale: c completed just before
		&engine.CommitStep{LeaseRef: ref(d), Step: "pay", Type: "activity_completed", Payload: []byte("1")},                        // 4 ok
		&engine.CommitStep{LeaseRef: ref(d), Step: "pay", Type: "activity_completed", Payload: []byte("2")},                        // 5 step already committed (by 4)
		&engine.CreateJob{WorkflowID: "bad", Queue: "q"},                                                                           // 6 invalid: no type
		&engine.CreateJob{WorkflowID: "dup", Type: "order", Queue: "q"},                                                            // 7 ok
		&engine.CreateJob{WorkflowID: "dup", Type: "order", Queue: "q", ReusePolicy: engine.IDReuseRejectDuplicate},                // 8 exists (by 7)
		&engine.Signal{Target: engine.Target{WorkflowID: "dup"}, Name: "go"},                                                       // 9 ok: sees 7
	)
	release()
	res := make([]glOutcome, len(outs))
	for i, ch := range outs {
		res[i] = <-ch
	}
	if n := g.commits.Load() - before; n != 1 {
		t.Fatalf("%d commits after the gate's, want one for the whole batch", n)
	}
	wantErr := map[int]error{1: engine.ErrStaleAttempt, 3: engine.ErrStaleAttempt, 5: engine.ErrStepCommitted, 6: engine.ErrInvalidCommand, 8: engine.ErrWorkflowExists}
	for i, o := range res {
		if want := wantErr[i]; want != nil {
			if !errors.Is(o.err, want) || o.res != nil {
				t.Errorf("command %d: got %v, %v; want error %v", i, o.res, o.err, want)
			}
		} else if o.err != nil || o.res == nil {
			t.Errorf("command %d: got %v, %v; want success", i, o.res, o.err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	var stale *engine.StaleAttemptError
	if !errors.As(res[3].err, &stale) || stale.Status != engine.StatusCompleted || stale.Job != c {
		t.Fatalf("command 3 error %v, want a stale attempt on completed job %d", res[3].err, c)
	}

	// The failing commands wrote nothing.
	sameStore(t, bBefore, glKeys(t, g.db, storage.JobKey(uint64(b)), storage.EventPrefix(uint64(b)), storage.EffectPrefix(uint64(b))))
	if h := g.history(c); len(h) != 3 || h[2].Type != engine.EventJobCompleted {
		t.Fatalf("job c history %+v, want created, leased, completed", h)
	}
	if h := g.history(d); len(h) != 3 || !h[2].Commit || string(h[2].Payload) != "1" {
		t.Fatalf("job d history %+v, want one commit with payload 1", h)
	}
	dup := res[7].res.(*engine.CreateResult)
	if h := g.history(dup.Job); len(h) != 2 || h[1].Type != engine.EventSignalReceived {
		t.Fatalf("dup history %+v", h)
	}
	if got := glKeys(t, g.db, storage.WorkflowKey("bad")); len(got) != 0 {
		t.Fatalf("invalid create wrote %v", got)
	}
	if j := g.job(a); j.LastSeq != 3 || j.Status != engine.StatusRunning {
		t.Fatalf("job a %+v", j)
	}
	glVerify(t, g.db)
}

// N proposals that pile up while the log is busy go into fewer than N
// commits: exactly ceil(N / MaxBatchCommands) of them.
func TestGroupCommitBatchesConcurrentProposals(t *testing.T) {
	const n, maxCmds = 64, 16
	g := newGatedLog(t, storage.Options{}, engine.Limits{}, maxCmds)
	release := g.hold()
	before := g.commits.Load()
	outs := make([]<-chan glOutcome, n)
	for i := range outs {
		outs[i] = g.proposeAsync(bg, &engine.CreateJob{WorkflowID: fmt.Sprintf("b-%d", i), Type: "order", Queue: "q", Input: make([]byte, 200)})
	}
	g.waitQueued(n)
	release()
	seen := map[engine.JobID]bool{}
	for i, ch := range outs {
		o := <-ch
		if o.err != nil {
			t.Fatalf("create %d: %v", i, o.err)
		}
		r := o.res.(*engine.CreateResult)
		if r.WorkflowID != fmt.Sprintf("b-%d", i) || seen[r.Job] {
			t.Fatalf("create %d answered %+v", i, r)
		}
		seen[r.Job] = true
	}
	if got := g.commits.Load() - before; got != n/maxCmds {
		t.Fatalf("%d commits for %d proposals, want %d", got, n, n/maxCmds)
	}
	glVerify(t, g.db)
}

// Close applies what was accepted, then refuses with ErrClosed.
func TestLocalLogClose(t *testing.T) {
	g := newGatedLog(t, storage.Options{}, engine.Limits{}, 0)
	release := g.hold()
	outs := g.inOrder(
		&engine.CreateJob{WorkflowID: "c1", Type: "order", Queue: "q"},
		&engine.CreateJob{WorkflowID: "c2", Type: "order", Queue: "q"},
		&engine.CreateJob{WorkflowID: "c3", Type: "order", Queue: "q"},
	)
	closed := make(chan struct{})
	go func() {
		closeOK(t, g.log)
		close(closed)
	}()
	glWaitFor(t, "close to start", func() bool {
		g.log.mu.RLock()
		defer g.log.mu.RUnlock()
		return g.log.closed
	})
	if _, err := g.log.Propose(bg, &engine.CreateJob{WorkflowID: "late", Type: "order", Queue: "q"}); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("propose while closing: %v, want ErrClosed", err)
	}
	select {
	case <-closed:
		t.Fatal("Close returned before the accepted proposals were applied")
	default:
	}
	release()
	<-closed
	for i, ch := range outs {
		if o := <-ch; o.err != nil || o.res.(*engine.CreateResult).WorkflowID != fmt.Sprintf("c%d", i+1) {
			t.Fatalf("accepted proposal %d: %+v, %v", i, o.res, o.err)
		}
	}
	if _, err := g.log.Propose(bg, &engine.CreateJob{WorkflowID: "after", Type: "order", Queue: "q"}); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("propose after close: %v, want ErrClosed", err)
	}
	if err := g.log.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if got := glKeys(t, g.db, storage.WorkflowKey("late"), storage.WorkflowKey("after")); len(got) != 0 {
		t.Fatalf("refused proposals wrote %v", got)
	}
	for i := range outs {
		wf := fmt.Sprintf("c%d", i+1)
		if err := g.db.View(func(r *storage.Reader) error {
			_, err := machine.ReadTarget(r, engine.Target{WorkflowID: wf})
			return err
		}); err != nil {
			t.Fatalf("%s was not stored: %v", wf, err)
		}
	}

	e := glMemEngine(t)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Create(bg, engine.CreateJob{Type: "order", Queue: "q"}); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("engine create after close: %v, want ErrClosed", err)
	}
}

// A proposal whose context ends before its answer returns the context's
// error; the command may still be applied, and a retry with its request id
// learns the first result without applying it twice.
func TestLocalLogContextCancelled(t *testing.T) {
	g := newGatedLog(t, storage.Options{}, engine.Limits{}, 0)
	release := g.hold()

	// Cancelled before proposing: the log is held, so no answer can win.
	done, cancel := context.WithCancel(bg)
	cancel()
	if _, err := g.log.Propose(done, &engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 1000}); !errors.Is(err, context.Canceled) {
		t.Fatalf("propose with a cancelled context: %v", err)
	}
	expired, cancel2 := context.WithTimeout(bg, -time.Second)
	defer cancel2()
	if _, err := g.log.Propose(expired, &engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 1000}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("propose with an expired context: %v", err)
	}

	// Cancelled while queued.
	ctx, cancel3 := context.WithCancel(bg)
	base := len(g.log.proposals)
	out := g.proposeAsync(ctx, &engine.CreateJob{Header: engine.Header{RequestID: "r1"}, WorkflowID: "cx", Type: "order", Queue: "q"})
	g.waitQueued(base + 1)
	cancel3()
	if o := <-out; !errors.Is(o.err, context.Canceled) || o.res != nil {
		t.Fatalf("propose cancelled while queued: %+v, %v", o.res, o.err)
	}
	release()

	r1 := g.must(&engine.CreateJob{Header: engine.Header{RequestID: "r1"}, WorkflowID: "cx", Type: "order", Queue: "q"}).(*engine.CreateResult)
	r2 := g.must(&engine.CreateJob{Header: engine.Header{RequestID: "r1"}, WorkflowID: "cx", Type: "order", Queue: "q"}).(*engine.CreateResult)
	if *r1 != *r2 || r1.WorkflowID != "cx" {
		t.Fatalf("retries answered %+v and %+v", r1, r2)
	}
	var runs int
	viewOK(t, g.db, func(r *storage.Reader) error {
		return r.Scan(storage.JobPrefix, nil, true, func(k, v []byte) (bool, error) {
			j, err := machine.DecodeJob(v)
			if err == nil && j.WorkflowID == "cx" {
				runs++
			}
			return true, err
		})
	})
	if runs != 1 {
		t.Fatalf("workflow cx has %d runs, want 1", runs)
	}
	glVerify(t, g.db)
}

// A batch whose writes overflow one Badger transaction is split into several
// commits, and every command in it still lands; a command too large for even
// an empty transaction fails alone.
func TestGroupCommitSplitsOversizedBatch(t *testing.T) {
	// On disk, so the inputs go through the value log as in production.
	so := storage.Options{MemTableBytes: 1 << 20}
	lim := engine.Limits{MaxPayloadBytes: 32 << 10}
	cfg := Config{Dir: t.TempDir(), Storage: so, Limits: lim, DisableScheduler: true}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	maxBatch := storage.MaxBatchBytes(so)
	gso := so
	gso.Dir = t.TempDir()
	g := newGatedLog(t, gso, lim, 0)

	// The job whose oversized append must fail on its own.
	big := g.must(&engine.CreateJob{WorkflowID: "big", Type: "order", Queue: "big"}).(*engine.CreateResult).Job
	bc := g.must(&engine.Claim{Queue: "big", Owner: "w", Max: 1, LeaseMS: 60_000}).(*engine.ClaimResult).Jobs[0]
	bigBefore := glKeys(t, g.db, storage.JobKey(uint64(big)), storage.EventPrefix(uint64(big)))

	const n = 40
	input := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 30<<10) }
	release := g.hold()
	before := g.commits.Load()
	outs := make([]<-chan glOutcome, n)
	for i := range outs {
		outs[i] = g.proposeAsync(bg, &engine.CreateJob{WorkflowID: fmt.Sprintf("o-%d", i), Type: "order", Queue: "q", Input: input(i)})
	}
	events := make([]engine.NewEvent, 5)
	for i := range events {
		events[i] = engine.NewEvent{Type: "chunk", Payload: make([]byte, 32<<10)}
	}
	tooBig := g.proposeAsync(bg, &engine.AppendEvents{LeaseRef: engine.LeaseRef{Job: big, Attempt: bc.Attempt}, Events: events})
	g.waitQueued(n + 1)
	release()

	for i, ch := range outs {
		o := <-ch
		if o.err != nil {
			t.Fatalf("create %d: %v", i, o.err)
		}
		r := o.res.(*engine.CreateResult)
		if r.WorkflowID != fmt.Sprintf("o-%d", i) {
			t.Fatalf("create %d answered %+v", i, r)
		}
		if h := g.history(r.Job); len(h) != 1 || !bytes.Equal(h[0].Payload, input(i)) {
			t.Fatalf("create %d: job %d history lost its input", i, r.Job)
		}
	}
	if o := <-tooBig; !errors.Is(o.err, engine.ErrPayloadTooLarge) {
		t.Fatalf("oversized append: %+v, %v; want ErrPayloadTooLarge", o.res, o.err)
	}
	sameStore(t, bigBefore, glKeys(t, g.db, storage.JobKey(uint64(big)), storage.EventPrefix(uint64(big))))

	// The inputs alone need this many transactions.
	minCommits := (int64(n*30<<10) + maxBatch - 1) / maxBatch
	if got := g.commits.Load() - before; got < minCommits || got > n {
		t.Fatalf("%d commits for %d creates of 30 KiB (batch limit %d bytes), want between %d and %d", got, n, maxBatch, minCommits, n)
	}
	glVerify(t, g.db)

	// The same configuration through Open: concurrent creates that overflow
	// a transaction all land.
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.Create(bg, engine.CreateJob{WorkflowID: fmt.Sprintf("e-%d", i), Type: "order", Queue: "q", Input: input(i)}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i := range n {
		j, err := e.Describe(bg, engine.Target{WorkflowID: fmt.Sprintf("e-%d", i)})
		if err != nil || j.LastSeq != 1 {
			t.Fatalf("e-%d: %+v, %v", i, j, err)
		}
	}
	glVerify(t, e.DB())
}

// A command whose writes Badger would refuse (a value over its limit: 1 MiB
// in memory) fails alone with ErrPayloadTooLarge and leaves nothing in the
// batch it shared with others. Regression test: storage.Batch.Add used to
// copy a command's writes one Set at a time and stop at the first Set Badger
// refused, so the writes before it were committed with the rest of the
// group (here: the append's first event, past the record's last seq).
func TestGroupCommitRefusedWriteLeavesNoTrace(t *testing.T) {
	g := newGatedLog(t, storage.Options{}, engine.Limits{}, 0)
	id := g.must(&engine.CreateJob{WorkflowID: "r", Type: "order", Queue: "q"}).(*engine.CreateResult).Job
	c := g.must(&engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000}).(*engine.ClaimResult).Jobs[0]
	ref := engine.LeaseRef{Job: id, Attempt: c.Attempt}
	before := glKeys(t, g.db, storage.JobKey(uint64(id)), storage.EventPrefix(uint64(id)))
	release := g.hold()
	outs := g.inOrder(
		&engine.CreateJob{WorkflowID: "x", Type: "order", Queue: "other"},
		// 5000 bytes: over Badger's default in-memory value threshold, stored.
		&engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: "medium", Payload: make([]byte, 5000)}}},
		&engine.CreateJob{WorkflowID: "y", Type: "order", Queue: "other"},
		// Within Limits (1 MiB payloads), but the encoded event is over 1 MiB.
		&engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: "small"}, {Type: "big", Payload: make([]byte, 1<<20)}}},
	)
	release()
	res := make([]glOutcome, len(outs))
	for i, ch := range outs {
		res[i] = <-ch
	}
	if !errors.Is(res[3].err, engine.ErrPayloadTooLarge) {
		msg := fmt.Sprint(res[3].err)
		if len(msg) > 200 { // Badger's refusal carries a hex dump of the value
			msg = msg[:200] + "..."
		}
		t.Fatalf("oversized append: %T, %s; want ErrPayloadTooLarge", res[3].res, msg)
	}
	for _, i := range []int{0, 1, 2} {
		if res[i].err != nil {
			t.Fatalf("command %d: %v", i, res[i].err)
		}
	}
	if ar := res[1].res.(*engine.AppendResult); ar.FirstSeq != 3 {
		t.Fatalf("medium append got seq %d, want 3", ar.FirstSeq)
	}
	// Nothing of the refused append: not its first event at seq 4.
	if h := g.history(id); len(h) != 3 || h[2].Type != "medium" || len(h[2].Payload) != 5000 {
		t.Fatalf("history %+v, want created, leased, medium", h)
	}
	after := glKeys(t, g.db, storage.JobKey(uint64(id)), storage.EventPrefix(uint64(id)))
	if len(after) != len(before)+1 {
		t.Fatalf("%d keys of the job before, %d after; want exactly the one new event", len(before), len(after))
	}
	glVerify(t, g.db)
}
