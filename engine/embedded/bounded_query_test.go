package embedded

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// boundedRun is a run holding payloads on both sides of a bound: its
// input, two signals, an appended event, and the questions of two steps.
type boundedRun struct {
	e     *Engine
	job   engine.JobID
	small []byte
	big   []byte
}

func newBoundedRun(t *testing.T) boundedRun {
	t.Helper()
	e, err := Open(Config{Dir: t.TempDir(), DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, e) })
	b := boundedRun{e: e, small: []byte(`{"n":1}`), big: bytes.Repeat([]byte{0xff}, 300<<10)}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	cr, err := e.Create(bg, engine.CreateJob{WorkflowID: "wf", Type: "t", Queue: "q", Input: b.big})
	must(cr, err)
	b.job = cr.Job
	must(e.Signal(bg, engine.Signal{Target: engine.Target{Job: b.job}, Name: "small", Payload: b.small}))
	must(e.Signal(bg, engine.Signal{Target: engine.Target{Job: b.job}, Name: "big", Payload: b.big}))
	jobs, err := e.Claim(bg, engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 60_000})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %+v, %v", jobs, err)
	}
	ref := jobs[0].Lease()
	must(e.Append(bg, engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: "activity_completed", Step: "9", Name: "F", Payload: b.big}}}))
	for step, q := range map[string][]byte{"1": b.small, "2": b.big} {
		must(e.LeaseStep(bg, engine.LeaseStep{LeaseRef: ref, Step: step, Name: "Ask", LeaseMS: 60_000}))
		must(e.EndStepAttempt(bg, engine.EndStepAttempt{LeaseRef: ref, Step: step, Name: "Ask", StepAttempt: 1, Outcome: engine.OutcomeNeedsUser, Payload: q}))
	}
	return b
}

// QueryHistory with MaxPayloadBytes returns History's events, each
// payload longer than the bound left out and its length told instead, in
// the same pages.
func TestQueryHistoryLeavesOutLargePayloads(t *testing.T) {
	b := newBoundedRun(t)
	const bound = 1000
	whole, err := b.e.History(bg, b.job, 0, engine.MaxPage)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.e.QueryHistory(bg, engine.HistoryQuery{Job: b.job, Limit: engine.MaxPage, MaxPayloadBytes: bound})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != len(whole.Events) || got.Next != whole.Next {
		t.Fatalf("%d events (next %d), History %d (next %d)", len(got.Events), got.Next, len(whole.Events), whole.Next)
	}
	elided := 0
	for i, ev := range got.Events {
		want := whole.Events[i]
		if len(want.Payload) > bound {
			if ev.Payload != nil || ev.ElidedPayloadBytes != len(want.Payload) {
				t.Errorf("event %d (%s): payload of %d bytes, elided %d; want none, elided %d", ev.Seq, ev.Type, len(ev.Payload), ev.ElidedPayloadBytes, len(want.Payload))
			}
			want.Payload, want.ElidedPayloadBytes = nil, len(want.Payload)
			elided++
		}
		if !reflect.DeepEqual(ev, want) {
			t.Errorf("event %d: %+v, want %+v", ev.Seq, ev, want)
		}
	}
	// The input, the big signal, the appended event and the big question.
	if elided != 4 {
		t.Errorf("%d payloads left out, want 4", elided)
	}
	// Pages: the same cursor as History's.
	p1, err := b.e.QueryHistory(bg, engine.HistoryQuery{Job: b.job, AfterSeq: 1, Limit: 2, MaxPayloadBytes: bound})
	if err != nil {
		t.Fatal(err)
	}
	w1, _ := b.e.History(bg, b.job, 1, 2)
	if len(p1.Events) != 2 || p1.Events[0].Seq != 2 || p1.Next != w1.Next || p1.Next != 3 {
		t.Errorf("page after 1 of 2: %+v, History's next %d", p1, w1.Next)
	}
	// 0 is History itself.
	if p, err := b.e.QueryHistory(bg, engine.HistoryQuery{Job: b.job, Limit: engine.MaxPage}); err != nil || !reflect.DeepEqual(p, whole) {
		t.Errorf("MaxPayloadBytes 0: %v, not History's page", err)
	}
	for _, q := range []engine.HistoryQuery{{Job: b.job, MaxPayloadBytes: -1}, {Job: b.job, Limit: engine.MaxPage + 1, MaxPayloadBytes: 1}} {
		if _, err := b.e.QueryHistory(bg, q); !errors.Is(err, engine.ErrInvalidCommand) {
			t.Errorf("%+v: %v, want engine.ErrInvalidCommand", q, err)
		}
	}
	if _, err := b.e.QueryHistory(bg, engine.HistoryQuery{Job: 999, MaxPayloadBytes: 1}); !errors.Is(err, engine.ErrUnknownJob) {
		t.Errorf("an unknown job: %v", err)
	}
}

// Reading a history without its payloads costs what it returns, not the
// payloads left out: they are neither copied nor decoded.
func TestQueryHistoryDoesNotCopyWhatItLeavesOut(t *testing.T) {
	b := newBoundedRun(t)
	for i := range 40 {
		if _, err := b.e.Signal(bg, engine.Signal{Target: engine.Target{Job: b.job}, Name: fmt.Sprint(i), Payload: b.big}); err != nil {
			t.Fatal(err)
		}
	}
	alloc := func(read func() error) uint64 {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		if err := read(); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&m1)
		return m1.TotalAlloc - m0.TotalAlloc
	}
	whole := alloc(func() error { _, err := b.e.History(bg, b.job, 0, engine.MaxPage); return err })
	bounded := alloc(func() error {
		_, err := b.e.QueryHistory(bg, engine.HistoryQuery{Job: b.job, Limit: engine.MaxPage, MaxPayloadBytes: 1 << 10})
		return err
	})
	steps := alloc(func() error {
		_, err := b.e.QuerySteps(bg, engine.StepsQuery{Target: engine.Target{Job: b.job}, MaxQuestionBytes: 1 << 10})
		return err
	})
	t.Logf("44 payloads of %d KiB: History allocated %d KiB, QueryHistory %d KiB, QuerySteps %d KiB", len(b.big)>>10, whole>>10, bounded>>10, steps>>10)
	// A copy of one payload is 300 KiB.
	if bounded > 256<<10 {
		t.Errorf("QueryHistory allocated %d KiB", bounded>>10)
	}
	if steps > 256<<10 {
		t.Errorf("QuerySteps allocated %d KiB", steps>>10)
	}
}

// QuerySteps leaves out a question over its bound, telling its length,
// and with Step returns that step alone, its question whole.
func TestQueryStepsLeavesOutLargeQuestions(t *testing.T) {
	b := newBoundedRun(t)
	whole, err := b.e.Steps(bg, engine.Target{Job: b.job})
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.e.QuerySteps(bg, engine.StepsQuery{Target: engine.Target{Job: b.job}, MaxQuestionBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(whole) || len(got) != 3 {
		t.Fatalf("%d steps, Steps %d, want 3", len(got), len(whole))
	}
	for i, si := range got {
		want := whole[i]
		if si.Step == "2" {
			if si.Question != nil || si.ElidedQuestionBytes != len(b.big) {
				t.Errorf("step 2: question of %d bytes, elided %d", len(si.Question), si.ElidedQuestionBytes)
			}
			want.Question, want.ElidedQuestionBytes = nil, len(b.big)
		}
		if !reflect.DeepEqual(si, want) {
			t.Errorf("step %s: %+v, want %+v", si.Step, si, want)
		}
	}
	one, err := b.e.QuerySteps(bg, engine.StepsQuery{Target: engine.Target{Job: b.job}, Step: "2"})
	if err != nil || len(one) != 1 || !reflect.DeepEqual(one[0], whole[1]) {
		t.Errorf("step 2 alone: %+v, %v", one, err)
	}
	if none, err := b.e.QuerySteps(bg, engine.StepsQuery{Target: engine.Target{Job: b.job}, Step: "nope"}); err != nil || len(none) != 0 {
		t.Errorf("a step the job does not have: %+v, %v", none, err)
	}
	if _, err := b.e.QuerySteps(bg, engine.StepsQuery{Target: engine.Target{Job: b.job}, MaxQuestionBytes: -1}); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Errorf("a negative bound: %v", err)
	}
}

// A History page ends before its payloads pass engine.MaxPageBytes, with a
// Next to go on from, so no request reads a gigabyte of payloads at once;
// paging reads every event once, in order, and a page always holds one
// event however large. QueryHistory's pages are bounded the same way.
func TestHistoryPagesAreBoundedInBytes(t *testing.T) {
	e, err := Open(Config{Dir: t.TempDir(), DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, e) })
	cr, err := e.Create(bg, engine.CreateJob{WorkflowID: "wf", Type: "t", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{0xab}, 900<<10)
	const signals = 12
	for i := range signals {
		if _, err := e.Signal(bg, engine.Signal{Target: engine.Target{Job: cr.Job}, Name: fmt.Sprint(i), Payload: big}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(page func(after uint64) (*engine.HistoryPage, error)) (seqs []uint64, pages int) {
		t.Helper()
		for after := uint64(0); ; {
			p, err := page(after)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			size := 0
			for i, ev := range p.Events {
				seqs = append(seqs, ev.Seq)
				if i > 0 {
					size += len(ev.Payload)
				}
			}
			if len(p.Events) == 0 || size > engine.MaxPageBytes {
				t.Fatalf("page %d after %d: %d events, %d payload bytes past its first", pages, after, len(p.Events), size)
			}
			if p.Next == 0 {
				return seqs, pages
			}
			after = p.Next
		}
	}
	want := make([]uint64, signals+1)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	seqs, pages := read(func(after uint64) (*engine.HistoryPage, error) { return e.History(bg, cr.Job, after, engine.MaxPage) })
	if !reflect.DeepEqual(seqs, want) || pages < 3 {
		t.Fatalf("History read %v in %d pages, want %v in at least 3", seqs, pages, want)
	}
	seqs, _ = read(func(after uint64) (*engine.HistoryPage, error) {
		return e.QueryHistory(bg, engine.HistoryQuery{Job: cr.Job, AfterSeq: after, Limit: engine.MaxPage, MaxPayloadBytes: 1 << 20})
	})
	if !reflect.DeepEqual(seqs, want) {
		t.Fatalf("QueryHistory read %v, want %v", seqs, want)
	}
}
