package doccheck

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// markdownTable returns the rows of the first table after the heading
// line heading in a Markdown document, each row split into trimmed cells
// (the header row first, the separator row left out).
func markdownTable(t *testing.T, doc, heading string) [][]string {
	t.Helper()
	lines := strings.Split(doc, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == heading {
			start = i
			break
		}
	}
	if start < 0 {
		t.Fatalf("no heading %q", heading)
	}
	var rows [][]string
	for _, l := range lines[start+1:] {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "|") {
			if len(rows) > 0 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if strings.HasPrefix(cells[0], "---") {
			continue
		}
		rows = append(rows, cells)
	}
	if len(rows) < 2 {
		t.Fatalf("no table after %q", heading)
	}
	return rows
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSpecStatusesMatchCode checks the statuses table of the specification
// against the engine: every status, its number and its name.
func TestSpecStatusesMatchCode(t *testing.T) {
	rows := markdownTable(t, readDoc(t, "docs/state-machines.md"), "### Statuses")
	documented := map[engine.Status]bool{}
	for _, r := range rows[1:] {
		n, err := strconv.Atoi(r[0])
		if err != nil {
			t.Fatalf("status row %q: %v", r, err)
		}
		s, err := engine.ParseStatus(r[1])
		if err != nil {
			t.Errorf("docs/state-machines.md lists a status %q the engine does not have", r[1])
			continue
		}
		if int(s) != n {
			t.Errorf("docs/state-machines.md numbers %s %d; the engine stores it as %d", r[1], n, s)
		}
		documented[s] = true
	}
	for _, s := range engine.Statuses() {
		if !documented[s] {
			t.Errorf("docs/state-machines.md does not list the status %s", s)
		}
	}
}

// TestSpecTransitionsMatchCode checks every cell of the specification's
// transition table against engine.BaseTransition, so the document cannot
// drift from the code (engine/transitions_test.go holds the code to its
// own copy of the same table).
func TestSpecTransitionsMatchCode(t *testing.T) {
	rows := markdownTable(t, readDoc(t, "docs/state-machines.md"), "### Transitions")
	var events []engine.EventType
	for _, h := range rows[0][1:] {
		ev := engine.EventType("job_" + h)
		if h == "wait_completed" {
			ev = engine.EventWaitCompleted
		}
		if !engine.IsStatusEvent(ev) {
			t.Fatalf("the table's column %q is not a status event", h)
		}
		events = append(events, ev)
	}
	if len(events) != len(engine.StatusEvents()) {
		t.Errorf("the table has %d status events, the engine %d", len(events), len(engine.StatusEvents()))
	}
	// The table writes the two refined cells as Q and W (Queued or
	// Retrying, Waiting or Parked): their base statuses.
	cellStatus := func(c string) (engine.Status, bool) {
		switch c {
		case "—":
			return 0, false
		case "Q":
			return engine.StatusQueued, true
		case "W":
			return engine.StatusWaiting, true
		}
		s, err := engine.ParseStatus(c)
		if err != nil {
			t.Fatalf("cell %q is neither a status, Q, W nor —", c)
		}
		return s, true
	}
	seen := map[engine.Status]bool{}
	for _, r := range rows[1:] {
		from := engine.StatusNone
		if r[0] != "(none)" {
			var err error
			if from, err = engine.ParseStatus(r[0]); err != nil {
				t.Fatalf("row %q: %v", r[0], err)
			}
		}
		seen[from] = true
		if len(r)-1 != len(events) {
			t.Fatalf("row %s has %d cells for %d events", r[0], len(r)-1, len(events))
		}
		for i, ev := range events {
			want, legal := cellStatus(r[i+1])
			got, ok := engine.BaseTransition(from, ev)
			switch {
			case ok != legal:
				t.Errorf("%s × %s: the docs say legal=%v, the engine %v", r[0], ev, legal, ok)
			case ok && got != want:
				t.Errorf("%s × %s: the docs say %s, the engine %s", r[0], ev, want, got)
			}
		}
	}
	for _, s := range append([]engine.Status{engine.StatusNone}, engine.Statuses()...) {
		if !seen[s] {
			t.Errorf("the table has no row for %s", s)
		}
	}
}

// TestSpecStepStatesMatchCode checks the step states table of the
// specification against the engine: every state, its number and name.
func TestSpecStepStatesMatchCode(t *testing.T) {
	rows := markdownTable(t, readDoc(t, "docs/state-machines.md"), "### Step states")
	documented := map[engine.StepState]bool{}
	for _, r := range rows[1:] {
		n, err := strconv.Atoi(r[0])
		if err != nil {
			t.Fatalf("step state row %q: %v", r, err)
		}
		s, err := engine.ParseStepState(r[1])
		if err != nil {
			t.Errorf("docs/state-machines.md lists a step state %q the engine does not have", r[1])
			continue
		}
		if int(s) != n {
			t.Errorf("docs/state-machines.md numbers %s %d; the engine stores it as %d", r[1], n, s)
		}
		documented[s] = true
	}
	for _, s := range engine.StepStates() {
		if !documented[s] {
			t.Errorf("docs/state-machines.md does not list the step state %s", s)
		}
	}
}

// TestSpecStepTransitionsMatchCode checks every cell of the step
// transition table (a "*" marks heddle's extension) against
// engine.StepTransitionLegal, both ways.
func TestSpecStepTransitionsMatchCode(t *testing.T) {
	rows := markdownTable(t, readDoc(t, "docs/state-machines.md"), "### Step transitions")
	legal := map[[2]engine.StepState]bool{}
	seen := map[engine.StepState]bool{}
	for _, r := range rows[1:] {
		from, err := engine.ParseStepState(r[0])
		if err != nil {
			t.Fatalf("row %q: %v", r[0], err)
		}
		seen[from] = true
		if r[1] == "—" {
			continue
		}
		for _, cell := range strings.Split(r[1], ",") {
			to, err := engine.ParseStepState(strings.TrimSuffix(strings.TrimSpace(cell), "*"))
			if err != nil {
				t.Fatalf("row %s: %v", r[0], err)
			}
			legal[[2]engine.StepState{from, to}] = true
		}
	}
	for _, from := range engine.StepStates() {
		if !seen[from] {
			t.Errorf("the step table has no row for %s", from)
		}
		for _, to := range engine.StepStates() {
			if got, want := engine.StepTransitionLegal(from, to), legal[[2]engine.StepState{from, to}]; got != want {
				t.Errorf("%s → %s: the docs say legal=%v, the engine %v", from, to, want, got)
			}
		}
	}
}
