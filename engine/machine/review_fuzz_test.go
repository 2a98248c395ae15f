package machine_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

func fuzzSampleReviewCommands() []engine.Command {
	return []engine.Command{
		&engine.CreateReview{Header: engine.Header{NowMS: 1, RequestID: "r1"}, Job: "j", Phase: "p", Queue: "q", ReviewQueue: "rq", Type: "w", Deps: []string{"a"},
			Draft: true, AutoReview: true, Config: engine.ReviewConfig{Objective: "o", Acceptance: []string{"x"}, Input: []byte("i")}},
		&engine.ReviewCommand{Header: engine.Header{NowMS: 1, RequestID: "r2"}, ReviewTarget: engine.ReviewTarget{ID: 1}, Op: engine.ReviewOpReject, By: "ann", Reason: "again", Expect: engine.ReviewApprovalRequired},
		&engine.ReviewCommand{Header: engine.Header{NowMS: 1}, ReviewTarget: engine.ReviewTarget{Job: "j", Phase: "p"}, Op: engine.ReviewOpConfig, Config: &engine.ReviewConfig{Details: "d"}},
		&engine.ClaimReviews{Header: engine.Header{NowMS: 1}, Role: engine.ReviewRoleReview, Queue: "q", Owner: "r", Max: 2, LeaseMS: 1000, Types: []string{"w"}},
		&engine.ReviewReport{Header: engine.Header{NowMS: 1}, ReviewLeaseRef: engine.ReviewLeaseRef{Review: 1, Attempt: 2}, Op: engine.ReviewReportVerdict,
			Assessment: &engine.Assessment{Verdict: engine.VerdictIntervene, Recommendations: []string{"r"}, Summary: "s"}},
		&engine.ReviewReport{Header: engine.Header{NowMS: 1}, ReviewLeaseRef: engine.ReviewLeaseRef{Review: 1, Attempt: 1}, Op: engine.ReviewReportOutput, Output: []byte("o"), Cost: 2.5},
		&engine.ReviewHeartbeat{Header: engine.Header{NowMS: 1}, Leases: []engine.ReviewLeaseRef{{Review: 1, Attempt: 1}}, LeaseMS: 1000},
		&engine.ReclaimReviews{Header: engine.Header{NowMS: 1}, Max: 3},
		&engine.ConfigureJob{Header: engine.Header{NowMS: 1, RequestID: "r3"}, Target: engine.Target{WorkflowID: "wf"}, Input: []byte(`["x"]`)},
	}
}

// The task commands decode from the log form like every command; a decoded
// one re-encodes to the same bytes, and applying it to a store with tasks
// either works or is refused, never corrupting what is stored.
func FuzzDecodeReviewCommand(f *testing.F) {
	for _, c := range fuzzSampleReviewCommands() {
		b, err := machine.EncodeCommand(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	h := newHarness(f)
	h.reviewTo("fz-a", engine.ReviewRunning)
	h.reviewTo("fz-b", engine.ReviewReviewing)
	h.reviewTo("fz-c", engine.ReviewDraft)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := machine.DecodeCommand(data)
		if err != nil {
			fuzzDecodeErr(t, "DecodeCommand", err)
			return
		}
		b, err := machine.EncodeCommand(c)
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		c2, err := machine.DecodeCommand(b)
		if err != nil {
			t.Fatalf("decoding the re-encoding: %v", err)
		}
		fuzzSameValue(t, "the command", c, c2)
		if b2, err := machine.EncodeCommand(c2); err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("encoding is not stable (%v)", err)
		}
		c.Head().NowMS = h.now
		_, _ = h.apply(c) // accepted or refused; Verify says whether the store stayed sound
		var errs []error
		viewOK(t, h.db, func(r *storage.Reader) error { errs = machine.Verify(r, 5); return nil })
		for _, err := range errs {
			t.Fatalf("after %T: %v", c, err)
		}
	})
}

// Stored task records and events decode or fail as corrupt, and a decoded
// one re-encodes stably.
func FuzzDecodeReviewRecords(f *testing.F) {
	f.Add(machine.EncodeReview(&engine.Review{ID: 1, Job: "j", Phase: "p", State: engine.ReviewReviewing, Deps: []engine.ReviewID{2}, Assessment: engine.Assessment{Verdict: engine.VerdictApprove}}))
	f.Add(machine.EncodeReviewEvent(&engine.ReviewEvent{Seq: 1, Type: engine.ReviewEventReviewed, From: engine.ReviewReviewing, To: engine.ReviewApprovalRequired,
		Assessment: &engine.Assessment{Verdict: engine.VerdictApprove, Summary: "ok"}, Config: &engine.ReviewConfig{Objective: "o"}}))
	for _, b := range fuzzGarbage(storage.KindReview) {
		f.Add(b)
	}
	for _, b := range fuzzGarbage(storage.KindReviewEvent) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if tk, err := machine.DecodeReview(data); err != nil {
			fuzzDecodeErr(t, "DecodeReview", err)
		} else if back, err := machine.DecodeReview(machine.EncodeReview(tk)); err != nil {
			t.Fatalf("task round trip: %v", err)
		} else {
			fuzzSameValue(t, "the task", tk, back)
		}
		if e, err := machine.DecodeReviewEvent(data); err != nil {
			fuzzDecodeErr(t, "DecodeReviewEvent", err)
		} else if back, err := machine.DecodeReviewEvent(machine.EncodeReviewEvent(e)); err != nil {
			t.Fatalf("task event round trip: %v", err)
		} else {
			fuzzSameValue(t, "the task event", e, back)
		}
	})
}

// Every field of every task command survives the log form (a msgpack key
// shared with the embedded Header would silently drop one).
func TestReviewCommandsRoundTrip(t *testing.T) {
	for _, c := range fuzzSampleReviewCommands() {
		b, err := machine.EncodeCommand(c)
		if err != nil {
			t.Fatal(err)
		}
		back, err := machine.DecodeCommand(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c, back) {
			t.Errorf("%s: %+v decoded as %+v", c.Kind(), c, back)
		}
	}
}
