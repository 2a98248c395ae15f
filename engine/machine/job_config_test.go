package machine_test

import (
	"errors"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// A Draft job's input is configured before its activation, each change an
// event of its history; once active, configuring it is an illegal
// transition that writes nothing.
func TestConfigureDraftJob(t *testing.T) {
	h := newHarness(t)
	id := h.must(&engine.CreateJob{WorkflowID: "d", Type: "order", Queue: "q", Draft: true, Input: []byte(`[1]`)}).(*engine.CreateResult).Job
	res := h.must(&engine.ConfigureJob{Target: engine.Target{WorkflowID: "d"}, Input: []byte(`[2]`)}).(*engine.StatusResult)
	if res.Status != engine.StatusDraft || res.Seq != 2 {
		t.Fatalf("configure = %+v", res)
	}
	h.must(&engine.Activate{Target: engine.Target{Job: id}})
	before := h.snapshot()
	_, err := h.apply(&engine.ConfigureJob{Target: engine.Target{Job: id}, Input: []byte(`[3]`)})
	var te *engine.TransitionError
	if !errors.As(err, &te) || te.From != engine.StatusQueued || !errors.Is(err, engine.ErrIllegalTransition) {
		t.Fatalf("configure an active job: %v", err)
	}
	sameStore(t, before, h.snapshot())
	hist := h.history(id)
	if len(hist) != 3 || hist[1].Type != engine.EventJobConfigured || string(hist[1].Payload) != `[2]` {
		t.Fatalf("history %+v", hist)
	}
	h.mustFail(&engine.ConfigureJob{Target: engine.Target{WorkflowID: "nobody"}}, engine.ErrUnknownJob)
	h.verify()
}
