package engine

import (
	"strings"
	"testing"
)

// specTable is docs/state-machines.md §1 with the §4 rows and columns, transcribed
// by hand from the specification (not generated from transitions.go), so the
// test compares the code against the document. "-" is illegal.
const specTable = `
state      created queued requeued leased  running waiting wait_completed completed failed cancelled drafted activated suspended resumed timed_out terminated
None       Queued  Queued Queued   -       -       -       -              -         -      -         Draft   -         -         -       -         -
Queued     -       -      Queued   Running Running -       Queued         -         -      Cancelled -       -         Suspended -       TimedOut  Terminated
Running    -       -      Queued   -       -       Waiting Queued         Completed Failed Cancelled -       -         Suspended -       TimedOut  Terminated
Waiting    -       -      -        -       -       -       Queued         -         -      Cancelled -       -         Suspended -       TimedOut  Terminated
Parked     -       -      -        -       -       -       Queued         -         -      Cancelled -       -         Suspended -       TimedOut  Terminated
Retrying   -       -      Queued   Running Running -       Queued         -         -      Cancelled -       -         Suspended -       TimedOut  Terminated
Completed  -       -      -        -       -       -       -              -         -      -         -       -         -         -       -         -
Failed     -       -      Queued   -       -       -       -              -         -      -         -       -         -         -       -         -
Cancelled  -       -      -        -       -       -       -              -         -      -         -       -         -         -       -         -
Draft      -       -      -        -       -       -       -              -         -      Cancelled -       Queued    Suspended -       TimedOut  Terminated
Suspended  -       -      -        -       -       -       -              -         -      Cancelled -       -         -         Queued  TimedOut  Terminated
TimedOut   -       -      -        -       -       -       -              -         -      -         -       -         -         -       -         -
Terminated -       -      -        -       -       -       -              -         -      -         -       -         -         -       -         -
`

func parseSpecTable(t *testing.T) (cols []EventType, rows map[Status][]string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(specTable), "\n")
	for _, c := range strings.Fields(lines[0])[1:] {
		name := EventType("job_" + c)
		if c == "wait_completed" {
			name = EventWaitCompleted
		}
		if !IsStatusEvent(name) {
			t.Fatalf("spec column %q is not a status event", c)
		}
		cols = append(cols, name)
	}
	rows = map[Status][]string{}
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		s := StatusNone
		if f[0] != "None" {
			var err error
			if s, err = ParseStatus(f[0]); err != nil {
				t.Fatal(err)
			}
		}
		rows[s] = f[1:]
	}
	return cols, rows
}

// Every cell of the table, legal and illegal, against BaseTransition.
func TestTransitionTableEveryCell(t *testing.T) {
	cols, rows := parseSpecTable(t)
	if len(cols) != len(StatusEvents()) {
		t.Fatalf("spec has %d status events, code has %d", len(cols), len(StatusEvents()))
	}
	if len(rows) != len(Statuses())+1 {
		t.Fatalf("spec has %d rows, want every status plus None", len(rows))
	}
	for from, cells := range rows {
		for i, ev := range cols {
			to, ok := BaseTransition(from, ev)
			want := cells[i]
			switch {
			case want == "-" && ok:
				t.Errorf("%s --%s--> %s is legal in code, illegal in the spec", from, ev, to)
			case want != "-" && !ok:
				t.Errorf("%s --%s--> is illegal in code, the spec says %s", from, ev, want)
			case want != "-" && to.String() != want:
				t.Errorf("%s --%s--> %s in code, the spec says %s", from, ev, to, want)
			}
		}
	}
}

// The attribute refinements: a parked wait, a delayed requeue.
func TestNextRefinements(t *testing.T) {
	tests := []struct {
		from Status
		ev   Event
		want Status
	}{
		{StatusRunning, Event{Type: EventJobWaiting, Wait: &WaitSpec{Signals: []string{"s"}}}, StatusWaiting},
		{StatusRunning, Event{Type: EventJobWaiting, Wait: &WaitSpec{Signals: []string{"s"}, Park: true}}, StatusParked},
		{StatusRunning, Event{Type: EventJobRequeued}, StatusQueued},
		{StatusRunning, Event{Type: EventJobRequeued, DelayMS: 10}, StatusRetrying},
		{StatusFailed, Event{Type: EventJobRequeued, DelayMS: 10}, StatusRetrying},
		{StatusRetrying, Event{Type: EventJobRequeued}, StatusQueued},
		{StatusRunning, Event{Type: "activity_completed"}, StatusRunning},
		{StatusWaiting, Event{Type: EventSignalReceived}, StatusWaiting},
	}
	for _, tt := range tests {
		got, ok := Next(tt.from, &tt.ev)
		if !ok || got != tt.want {
			t.Errorf("Next(%s, %s) = %s, %v; want %s", tt.from, tt.ev.Type, got, ok, tt.want)
		}
	}
}
