package doccheck

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// reviewStates parses a cell listing task states ("PENDING, SUSPENDED").
func reviewStates(t *testing.T, cell string) []engine.ReviewState {
	t.Helper()
	var out []engine.ReviewState
	for _, f := range strings.Split(cell, ",") {
		s, err := engine.ParseReviewState(strings.TrimSpace(f))
		if err != nil {
			t.Fatalf("cell %q: %v", cell, err)
		}
		out = append(out, s)
	}
	return out
}

// The task states of docs/state-machines.md §4 are the engine's, by number
// and name.
func TestSpecReviewStatesMatchCode(t *testing.T) {
	rows := markdownTable(t, readDoc(t, "docs/state-machines.md"), "#### Task states")
	var documented []engine.ReviewState
	for _, r := range rows[1:] {
		n, err := strconv.Atoi(r[0])
		if err != nil {
			t.Fatalf("row %q: %v", r, err)
		}
		s, err := engine.ParseReviewState(r[1])
		if err != nil || int(s) != n {
			t.Errorf("docs number task state %s %d; the engine: %d (%v)", r[1], n, s, err)
		}
		documented = append(documented, s)
	}
	if !slices.Equal(documented, engine.ReviewStates()) {
		t.Errorf("docs list %v, the engine has %v", documented, engine.ReviewStates())
	}
}

// The task transition table of the docs is the one the engine enforces,
// cell by cell.
func TestSpecReviewTransitionsMatchCode(t *testing.T) {
	rows := markdownTable(t, readDoc(t, "docs/state-machines.md"), "#### Task transitions")
	got := map[engine.ReviewState][]engine.ReviewState{}
	for _, r := range rows[1:] {
		if r[1] == "terminal" {
			for _, s := range reviewStates(t, r[0]) {
				got[s] = nil
			}
			continue
		}
		from := reviewStates(t, r[0])[0]
		to := reviewStates(t, r[1])
		slices.Sort(to)
		got[from] = to
	}
	want := engine.ReviewTransitions()
	for _, s := range engine.ReviewStates() {
		if _, ok := got[s]; !ok {
			t.Errorf("the docs' task table has no row for %s", s)
		}
		if !slices.Equal(got[s], want[s]) {
			t.Errorf("%s: docs say %v, the engine %v", s, got[s], want[s])
		}
	}
}

// The human commands table of the docs says, for every command, the states
// it is legal in and where it leads, as the engine does.
func TestSpecReviewCommandsMatchCode(t *testing.T) {
	rows := markdownTable(t, readDoc(t, "docs/state-machines.md"), "#### Human commands")
	seen := map[engine.ReviewOp]bool{}
	for _, r := range rows[1:] {
		op := engine.ReviewOp(r[0])
		seen[op] = true
		froms := strings.Split(r[1], ";")
		tos := strings.Split(r[2], ";")
		if len(froms) != len(tos) {
			t.Fatalf("%s: %d groups of from, %d of to", op, len(froms), len(tos))
		}
		legal := map[engine.ReviewState]engine.ReviewState{}
		for i := range froms {
			to, err := engine.ParseReviewState(strings.Fields(strings.TrimSpace(tos[i]))[0])
			if err != nil {
				t.Fatalf("%s: to %q: %v", op, tos[i], err)
			}
			var states []engine.ReviewState
			if strings.TrimSpace(froms[i]) == "every state but the ends" {
				for _, s := range engine.ReviewStates() {
					if !s.Terminal() {
						states = append(states, s)
					}
				}
			} else {
				states = reviewStates(t, froms[i])
			}
			for _, s := range states {
				legal[s] = to
			}
		}
		for _, s := range engine.ReviewStates() {
			to, ok := engine.ReviewOpTarget(s, op)
			want, doc := legal[s]
			if ok != doc || (ok && to != want) {
				t.Errorf("%s in %s: docs say legal=%v → %s, the engine legal=%v → %s", op, s, doc, want, ok, to)
			}
		}
	}
	for _, op := range engine.ReviewOps() {
		if !seen[op] {
			t.Errorf("the docs' commands table has no row for %s", op)
		}
	}
}
