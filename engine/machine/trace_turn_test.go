package machine_test

// Trace directives of a worker's turn (engine/machine/turn.go): the events
// it appends, the steps it commits, its waits, and what wakes a wait
// (signals, timers). The events a directive appends are its input, one a
// line:
//
//	append job=1 now=1500
//	activity_scheduled step=1 name=Charge
//	marker_recorded step=2 name=side payload=42
//	----

import (
	"strconv"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

var turnDirectives = map[string]commandDirective{
	// append job=ID [timers=(id:fireMS,…)] [cancel-timers=(id,…)], events as input.
	"append": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.AppendEvents{LeaseRef: e.jobLease(a, "job"), Events: inputEvents(a),
			Timers: timers(a, "timers"), CancelTimers: a.list("cancel-timers")}
	},
	// commit job=ID step=S [type=activity_completed] [name=N] [payload=TEXT]
	//   [failed] [catch-up] [step-attempt=N] [decision=D] [reason=TEXT]
	"commit": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.CommitStep{LeaseRef: e.jobLease(a, "job"), Step: a.str("step", ""),
			Type: engine.EventType(a.str("type", string(engine.EventActivityCompleted))), Name: a.str("name", ""),
			Payload: a.bytes("payload"), Failed: a.flag("failed"), CatchUp: a.flag("catch-up"),
			StepAttempt: uint32(a.int("step-attempt", 0)), Decision: engine.CriticDecision(a.str("decision", "")),
			Reason: a.str("reason", "")}
	},
	// wait job=ID [timer=id:fireMS] [timers=(id:fireMS,…)] [signals=(a,…)]
	//   [any-signal] [steps=(s,…)] [park] [seen=SEQ], events as input. seen=
	//   is the last seq the worker saw: the job's last seq by default.
	"wait": func(e *traceEnv, a *traceArgs) engine.Command {
		ref := e.jobLease(a, "job")
		w := &engine.Wait{LeaseRef: ref, Events: inputEvents(a), Spec: engine.WaitSpec{
			Signals: a.list("signals"), AnySignal: a.flag("any-signal"), Steps: a.list("steps"),
			Park: a.flag("park"), Timers: timers(a, "timers")}}
		if ts := timers(a, "timer"); len(ts) == 1 {
			w.Spec.TimerID, w.Spec.TimerAtMS = ts[0].ID, ts[0].FireMS
		}
		w.SeenSeq = uint64(a.int("seen", -1))
		if !a.has("seen") {
			w.SeenSeq = e.lastSeq(ref.Job)
		}
		return w
	},
	// signal job=ID|wf=ID name=N [payload=TEXT] [sender=ID sender-step=S]:
	// with a sender, a run's step signals on its behalf, under its lease.
	"signal": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.Signal{Target: target(a), Name: a.str("name", ""), Payload: a.bytes("payload"), Sender: e.sender(a)}
	},
	"fire-timers": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.FireTimers{Max: int(a.int("max", 100))}
	},
}

// sender is the sender step a signal or cancel request names, if any: the
// lease of job sender= and the step sender-step=.
func (e *traceEnv) sender(a *traceArgs) *engine.SenderStep {
	if !a.has("sender") {
		return nil
	}
	return &engine.SenderStep{LeaseRef: e.jobLease(a, "sender"), Step: a.str("sender-step", "")}
}

// inputEvents reads the block's input as events, one a line: the type,
// then step=, name=, payload= and step-attempt= as wanted.
func inputEvents(a *traceArgs) []engine.NewEvent {
	var evs []engine.NewEvent
	for _, line := range strings.Split(a.td.Input, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		ev := engine.NewEvent{Type: engine.EventType(fields[0])}
		for _, f := range fields[1:] {
			k, v, ok := strings.Cut(f, "=")
			switch {
			case !ok:
				a.td.Fatalf(a.t, "event %q: %q is not key=value", line, f)
			case k == "step":
				ev.Step = v
			case k == "name":
				ev.Name = v
			case k == "payload":
				ev.Payload = []byte(v)
			case k == "step-attempt":
				ev.StepAttempt = uint32(mustInt(a, v))
			default:
				a.td.Fatalf(a.t, "event %q: unknown field %q", line, k)
			}
		}
		evs = append(evs, ev)
	}
	a.used["(input)"] = true
	return evs
}

// timers reads key=(id:fireMS,…).
func timers(a *traceArgs, key string) []engine.Timer {
	var ts []engine.Timer
	for _, v := range a.list(key) {
		id, at, ok := strings.Cut(v, ":")
		if !ok {
			a.td.Fatalf(a.t, "%s=%s: want id:fireMS", key, v)
		}
		ts = append(ts, engine.Timer{ID: id, FireMS: mustInt(a, at)})
	}
	return ts
}

func mustInt(a *traceArgs, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		a.td.Fatalf(a.t, "%q is not a number: %v", s, err)
	}
	return n
}

// lastSeq is the job's last seq in the store (0 when it has none).
func (e *traceEnv) lastSeq(id engine.JobID) uint64 {
	var seq uint64
	viewOK(e.t, e.db, func(r *storage.Reader) error {
		j, err := machine.ReadJob(r, id)
		if err == nil {
			seq = j.LastSeq
		}
		return nil
	})
	return seq
}
