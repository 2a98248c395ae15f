package engine

import (
	"errors"
	"testing"
)

// A Draft job's input is configured before its activation, each change an
// event of its history; once active, configuring it is an illegal
// transition that writes nothing.
func TestConfigureDraftJob(t *testing.T) {
	h := newHarness(t)
	id := h.must(&CreateJob{WorkflowID: "d", Type: "order", Queue: "q", Draft: true, Input: []byte(`[1]`)}).(*CreateResult).Job
	res := h.must(&ConfigureJob{Target: Target{WorkflowID: "d"}, Input: []byte(`[2]`)}).(*StatusResult)
	if res.Status != StatusDraft || res.Seq != 2 {
		t.Fatalf("configure = %+v", res)
	}
	h.must(&Activate{Target: Target{Job: id}})
	before := h.snapshot()
	_, err := h.apply(&ConfigureJob{Target: Target{Job: id}, Input: []byte(`[3]`)})
	var te *TransitionError
	if !errors.As(err, &te) || te.From != StatusQueued || !errors.Is(err, ErrIllegalTransition) {
		t.Fatalf("configure an active job: %v", err)
	}
	sameStore(t, before, h.snapshot())
	hist := h.history(id)
	if len(hist) != 3 || hist[1].Type != EventJobConfigured || string(hist[1].Payload) != `[2]` {
		t.Fatalf("history %+v", hist)
	}
	h.mustFail(&ConfigureJob{Target: Target{WorkflowID: "nobody"}}, ErrUnknownJob)
	h.verify()
}
