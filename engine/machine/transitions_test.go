package engine

import (
	"errors"
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

// drive puts a fresh job into status s through real commands and returns it
// with its latest attempt.
func drive(h *harness, s Status, wf string) LeaseRef {
	h.t.Helper()
	create := &CreateJob{WorkflowID: wf, Type: "t", Queue: "q"}
	if s == StatusTimedOut {
		create.RunTimeoutMS = 500
	}
	return driveJob(h, create, s)
}

// driveJob is drive for a job created by create (its queue must be "q", and
// no other job may be ready there).
func driveJob(h *harness, create *CreateJob, s Status) LeaseRef {
	h.t.Helper()
	create.Draft = s == StatusDraft
	id := h.must(create).(*CreateResult).Job
	switch s {
	case StatusQueued, StatusDraft:
		return LeaseRef{Job: id}
	case StatusCancelled:
		h.must(&Cancel{Target: Target{Job: id}})
		return LeaseRef{Job: id}
	case StatusTerminated:
		h.must(&Terminate{Target: Target{Job: id}})
		return LeaseRef{Job: id}
	case StatusTimedOut:
		h.now += 500
		h.must(&ExpireDeadlines{Max: 10})
		if got := h.job(id).Status; got != s {
			h.t.Fatalf("drive to %s reached %s", s, got)
		}
		return LeaseRef{Job: id}
	case StatusSuspended:
		h.must(&Suspend{Target: Target{Job: id}})
		return LeaseRef{Job: id}
	}
	c := h.must(&Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 1000}).(*ClaimResult).Jobs[0]
	ref := LeaseRef{Job: id, Attempt: c.Attempt}
	switch s {
	case StatusWaiting:
		h.must(&Wait{LeaseRef: ref, Spec: WaitSpec{Signals: []string{"go"}}, SeenSeq: c.LastSeq})
	case StatusParked:
		h.must(&Wait{LeaseRef: ref, Spec: WaitSpec{Signals: []string{"go"}, Park: true}, SeenSeq: c.LastSeq})
	case StatusRetrying:
		h.must(&Requeue{LeaseRef: ref, DelayMS: 5000})
	case StatusCompleted:
		h.must(&Complete{LeaseRef: ref})
	case StatusFailed:
		h.must(&Fail{LeaseRef: ref})
	}
	if got := h.job(id).Status; got != s {
		h.t.Fatalf("drive to %s reached %s", s, got)
	}
	return ref
}

// Every lifecycle command in every status, through Apply: the legal ones
// land in the status the table names, the illegal ones are refused with the
// right sentinel and write nothing.
func TestCommandsInEveryStatus(t *testing.T) {
	type outcome struct {
		to  Status // the status after a legal command
		err error  // the sentinel of an illegal one
	}
	legalIn := func(to Status, in ...Status) func(Status) outcome {
		return func(s Status) outcome {
			for _, x := range in {
				if x == s {
					return outcome{to: to}
				}
			}
			return outcome{err: ErrIllegalTransition}
		}
	}
	fencedIn := func(to Status) func(Status) outcome {
		return func(s Status) outcome {
			if s == StatusRunning {
				return outcome{to: to}
			}
			return outcome{err: ErrStaleAttempt}
		}
	}
	commands := []struct {
		name string
		cmd  func(ref LeaseRef) Command
		want func(Status) outcome
	}{
		{"cancel", func(r LeaseRef) Command { return &Cancel{Target: Target{Job: r.Job}} },
			legalIn(StatusCancelled, StatusQueued, StatusRunning, StatusWaiting, StatusParked, StatusRetrying, StatusDraft, StatusSuspended)},
		{"terminate", func(r LeaseRef) Command { return &Terminate{Target: Target{Job: r.Job}} },
			legalIn(StatusTerminated, StatusQueued, StatusRunning, StatusWaiting, StatusParked, StatusRetrying, StatusDraft, StatusSuspended)},
		{"suspend", func(r LeaseRef) Command { return &Suspend{Target: Target{Job: r.Job}} },
			legalIn(StatusSuspended, StatusQueued, StatusRunning, StatusWaiting, StatusParked, StatusRetrying, StatusDraft)},
		{"resume", func(r LeaseRef) Command { return &Resume{Target: Target{Job: r.Job}} }, legalIn(StatusQueued, StatusSuspended)},
		{"activate", func(r LeaseRef) Command { return &Activate{Target: Target{Job: r.Job}} }, legalIn(StatusQueued, StatusDraft)},
		{"retry failed", func(r LeaseRef) Command { return &Requeue{LeaseRef: LeaseRef{Job: r.Job}} }, legalIn(StatusQueued, StatusFailed)},
		{"complete", func(r LeaseRef) Command { return &Complete{LeaseRef: LeaseRef{Job: r.Job, Attempt: max(r.Attempt, 1)}} }, fencedIn(StatusCompleted)},
		{"fail", func(r LeaseRef) Command { return &Fail{LeaseRef: LeaseRef{Job: r.Job, Attempt: max(r.Attempt, 1)}} }, fencedIn(StatusFailed)},
		{"requeue", func(r LeaseRef) Command { return &Requeue{LeaseRef: LeaseRef{Job: r.Job, Attempt: max(r.Attempt, 1)}} }, fencedIn(StatusQueued)},
		{"requeue delayed", func(r LeaseRef) Command {
			return &Requeue{LeaseRef: LeaseRef{Job: r.Job, Attempt: max(r.Attempt, 1)}, DelayMS: 10}
		}, fencedIn(StatusRetrying)},
		{"wait", func(r LeaseRef) Command {
			return &Wait{LeaseRef: LeaseRef{Job: r.Job, Attempt: max(r.Attempt, 1)}, Spec: WaitSpec{Signals: []string{"x"}}}
		}, fencedIn(StatusWaiting)},
	}
	for _, c := range commands {
		for _, s := range Statuses() {
			t.Run(c.name+"/"+s.String(), func(t *testing.T) {
				h := newHarness(t)
				ref := drive(h, s, "wf")
				want := c.want(s)
				before := h.snapshot()
				_, err := h.apply(c.cmd(ref))
				if want.err != nil {
					if !errors.Is(err, want.err) {
						t.Fatalf("%s in %s: error %v, want %v", c.name, s, err, want.err)
					}
					sameStore(t, before, h.snapshot())
					return
				}
				if err != nil {
					t.Fatalf("%s in %s: %v", c.name, s, err)
				}
				if got := h.job(ref.Job).Status; got != want.to {
					t.Fatalf("%s in %s led to %s, want %s", c.name, s, got, want.to)
				}
				h.verify()
			})
		}
	}
}

// Claim, signal and reclaim in every status.
func TestSweepsAndSignalsInEveryStatus(t *testing.T) {
	for _, s := range Statuses() {
		t.Run(s.String(), func(t *testing.T) {
			h := newHarness(t)
			ref := drive(h, s, "wf")
			claimed := h.must(&Claim{Queue: "q", Owner: "w2", Max: 5, LeaseMS: 1000}).(*ClaimResult)
			if got, want := len(claimed.Jobs), map[bool]int{true: 1, false: 0}[s == StatusQueued]; got != want {
				t.Fatalf("claim in %s took %d jobs, want %d", s, got, want)
			}
			if s == StatusQueued {
				return
			}
			// Expire every lease: only a Running job is reclaimed.
			h.now += 10_000_000
			r := h.must(&Reclaim{Max: 10}).(*SweepResult)
			if got, want := len(r.Jobs), map[bool]int{true: 1, false: 0}[s == StatusRunning]; got != want {
				t.Fatalf("reclaim in %s took %d jobs, want %d", s, got, want)
			}
			h.verify()
			if s == StatusRunning {
				return
			}
			sr, err := h.apply(&Signal{Target: Target{Job: ref.Job}, Name: "go"})
			switch {
			case s.Terminal():
				if !errors.Is(err, ErrJobClosed) {
					t.Fatalf("signal to %s job: %v, want ErrJobClosed", s, err)
				}
			case err != nil:
				t.Fatalf("signal in %s: %v", s, err)
			case sr.(*SignalResult).Woke != (s == StatusWaiting || s == StatusParked):
				t.Fatalf("signal in %s woke=%v", s, sr.(*SignalResult).Woke)
			}
			h.verify()
		})
	}
}
