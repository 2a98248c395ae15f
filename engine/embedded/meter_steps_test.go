package embedded

import (
	"context"
	"maps"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/metricstest"
	"github.com/heddlewf/heddle/metrics"
)

// steps returns the step gauge of each state that is not zero.
func (h *meterHarness) steps() map[string]float64 {
	fs := h.scrape()
	out := map[string]float64{}
	for _, s := range engine.StepStates() {
		if v := fs.Value(metrics.EngineStepsByState, "state", s.String()); v != 0 {
			out[s.String()] = v
		}
	}
	return out
}

// The step transitions counted are the projection's path of every step
// event (a straight-path step's whole path when its result lands), and
// the step gauge follows the step records of open jobs: a question, its
// answer, a resource waited for, a job's end.
func TestMeterFollowsSteps(t *testing.T) {
	h := newMeterHarness(t)
	h.do(&engine.AddResource{ID: "r", Capabilities: []string{"c"}, Capacity: 1})
	h.do(&engine.CreateJob{Type: "t", Queue: "q", WorkflowID: "a"})
	h.do(&engine.CreateJob{Type: "t", Queue: "q", WorkflowID: "b"})
	a, b := h.claim(), h.claim()
	refA, refB := a.Lease(), b.Lease()

	// A straight-path step of a: a failed try, then its result.
	h.do(&engine.AppendEvents{LeaseRef: refA, Events: []engine.NewEvent{{Type: engine.EventActivityAttemptFailed, Step: "1", Name: "x", StepAttempt: 1}}})
	h.do(&engine.CommitStep{LeaseRef: refA, Step: "1", Name: "x", Type: engine.EventActivityCompleted, StepAttempt: 2})
	// An explicit step of a that asks a person; b waits for the unit.
	h.do(&engine.LeaseStep{LeaseRef: refA, Step: "2", Name: "x", LeaseMS: 1000, Capabilities: []string{"c"}, Start: true})
	h.do(&engine.LeaseStep{LeaseRef: refB, Step: "1", Name: "x", LeaseMS: 1000, Capabilities: []string{"c"}})
	if got := h.steps(); len(got) != 2 || got["RUNNING"] != 1 || got["PENDING"] != 1 {
		t.Fatalf("gauge after the leases: %v", got)
	}
	h.do(&engine.EndStepAttempt{LeaseRef: refA, Step: "2", Name: "x", StepAttempt: 1, Outcome: engine.OutcomeNeedsUser, Payload: []byte(`"?"`)})
	if got := h.steps(); len(got) != 2 || got["NEEDS_USER"] != 1 || got["PENDING"] != 1 {
		t.Fatalf("gauge with a question: %v", got)
	}
	// a ends: its step's unit goes to b's, which is leased.
	h.do(&engine.Complete{LeaseRef: refA})
	if got := h.steps(); len(got) != 1 || got["LEASED"] != 1 {
		t.Fatalf("gauge after a ended: %v", got)
	}
	fs := h.scrape()
	for _, c := range []struct {
		from, to string
		want     float64
	}{
		{"PENDING", "LEASED", 3}, {"LEASED", "RUNNING", 2}, {"RUNNING", "FAILED_RETRYABLE", 1},
		{"FAILED_RETRYABLE", "RETRYING", 1}, {"RETRYING", "RUNNING", 1}, {"RUNNING", "SUCCEEDED", 1},
		{"RUNNING", "NEEDS_USER", 1},
	} {
		if got := fs.Value(metrics.EngineStepTransitions, "from_state", c.from, "to_state", c.to); got != c.want {
			t.Errorf("%s → %s: %v, want %v", c.from, c.to, got, c.want)
		}
	}
}

// Opening a store counts the step gauge from the step records of its
// open jobs.
func TestOpenCountsSteps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	e, err := Open(Config{Dir: dir, DisableScheduler: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		if _, err := e.Create(ctx, engine.CreateJob{Type: "t", Queue: "q", WorkflowID: id}); err != nil {
			t.Fatal(err)
		}
	}
	js, err := e.Claim(ctx, engine.Claim{Queue: "q", Owner: "w", Max: 2, LeaseMS: 60_000})
	if err != nil || len(js) != 2 {
		t.Fatal(js, err)
	}
	for _, j := range js {
		ref := j.Lease()
		if _, err := e.LeaseStep(ctx, engine.LeaseStep{LeaseRef: ref, Step: "1", Name: "x", LeaseMS: 60_000, Start: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Complete(ctx, engine.Complete{LeaseRef: js[1].Lease()}); err != nil {
		t.Fatal(err)
	}
	closeOK(t, e)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	e, err = Open(Config{Dir: dir, DisableScheduler: true, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, e)
	fs, err := metricstest.Gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.Value(metrics.EngineStepsByState, "state", "RUNNING"); got != 1 {
		t.Fatalf("RUNNING steps after reopening: %v, want 1 (the ended job's step does not count)", got)
	}
}

// stepTransitions returns every step transition counter that is not zero,
// as "FROM>TO".
func (h *meterHarness) stepTransitions() map[string]float64 {
	fs := h.scrape()
	out := map[string]float64{}
	for _, from := range engine.StepStates() {
		for _, to := range engine.StepStates() {
			if v := fs.Value(metrics.EngineStepTransitions, "from_state", from.String(), "to_state", to.String()); v != 0 {
				out[from.String()+">"+to.String()] = v
			}
		}
	}
	return out
}

// Each command moves the step counters by exactly its route, the routes
// that depend on an event's reason included: a fatal step timeout and a
// step failed before it started (both were once counted as if the event
// had no reason).
func TestMeterStepTransitionsByCommand(t *testing.T) {
	type cmdFn func(ref engine.LeaseRef) engine.Command
	for _, c := range []struct {
		name  string
		setup []cmdFn // applied first; their counts are not compared
		cmd   cmdFn
		// advanceMS moves the clock before cmd.
		advanceMS int64
		want      map[string]float64
	}{
		{
			name: "straight-path result",
			cmd: func(ref engine.LeaseRef) engine.Command {
				return &engine.CommitStep{LeaseRef: ref, Step: "1", Name: "x", Type: engine.EventActivityCompleted, StepAttempt: 1}
			},
			want: map[string]float64{"PENDING>LEASED": 1, "LEASED>RUNNING": 1, "RUNNING>SUCCEEDED": 1},
		},
		{
			name: "straight-path result of a second try",
			cmd: func(ref engine.LeaseRef) engine.Command {
				return &engine.CommitStep{LeaseRef: ref, Step: "1", Name: "x", Type: engine.EventActivityCompleted, StepAttempt: 2}
			},
			want: map[string]float64{"RETRYING>RUNNING": 1, "RUNNING>SUCCEEDED": 1},
		},
		{
			name: "failed before it started",
			cmd: func(ref engine.LeaseRef) engine.Command {
				return &engine.CommitStep{LeaseRef: ref, Step: "1", Name: "x", Type: engine.EventActivityFailed, Failed: true, Reason: engine.ReasonNotStarted}
			},
			want: map[string]float64{"PENDING>FAILED_FATAL": 1, "FAILED_FATAL>FAILED": 1},
		},
		{
			name: "explicit lease, started",
			cmd: func(ref engine.LeaseRef) engine.Command {
				return &engine.LeaseStep{LeaseRef: ref, Step: "1", Name: "x", LeaseMS: 1000, Start: true}
			},
			want: map[string]float64{"PENDING>LEASED": 1, "LEASED>RUNNING": 1},
		},
		{
			name: "step lease ran out, retryable",
			setup: []cmdFn{func(ref engine.LeaseRef) engine.Command {
				return &engine.LeaseStep{LeaseRef: ref, Step: "1", Name: "x", LeaseMS: 1000, Start: true}
			}},
			advanceMS: 5000,
			cmd:       func(engine.LeaseRef) engine.Command { return &engine.ExpireSteps{Max: 10} },
			want:      map[string]float64{"RUNNING>FAILED_RETRYABLE": 1, "FAILED_RETRYABLE>RETRYING": 1},
		},
		{
			name: "step lease ran out, fatal",
			setup: []cmdFn{func(ref engine.LeaseRef) engine.Command {
				return &engine.LeaseStep{LeaseRef: ref, Step: "1", Name: "x", LeaseMS: 1000, Start: true, TimeoutFatal: true}
			}},
			advanceMS: 5000,
			cmd:       func(engine.LeaseRef) engine.Command { return &engine.ExpireSteps{Max: 10} },
			want:      map[string]float64{"RUNNING>FAILED_FATAL": 1},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newMeterHarness(t)
			h.do(&engine.CreateJob{Type: "t", Queue: "q"})
			j := h.do(&engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 3_600_000}).(*engine.ClaimResult).Jobs[0]
			ref := j.Lease()
			for _, s := range c.setup {
				h.do(s(ref))
			}
			before := h.stepTransitions()
			h.clk.Set(h.clk.Now().Add(time.Duration(c.advanceMS) * time.Millisecond))
			h.do(c.cmd(ref))
			got := h.stepTransitions()
			for k, v := range before {
				if got[k] -= v; got[k] == 0 {
					delete(got, k)
				}
			}
			if !maps.Equal(got, c.want) {
				t.Errorf("counted %v, want %v", got, c.want)
			}
		})
	}
}
