package machine_test

// Trace directives of steps with a lease of their own, and of the resources
// they take units of (docs/state-machines.md §3). Step commands are fenced
// by the job's lease (job=, attempt=, token=) and by the step's try
// (step-attempt=).

import (
	"strings"

	"github.com/heddlewf/heddle/engine"
)

var stepDirectives = map[string]commandDirective{
	// step-lease job=ID step=S [name=ACTIVITY] lease=MS [caps=(a,…)]
	//   [selector=(k:v,…)] [deps=(s,…)] [timeout-fatal] [start]
	"step-lease": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.LeaseStep{LeaseRef: e.jobLease(a, "job"), Step: a.str("step", ""), Name: a.str("name", "Act"),
			LeaseMS: a.int("lease", 10_000), Capabilities: a.list("caps"), Selector: labels(a, "selector"),
			DependsOn: a.list("deps"), TimeoutFatal: a.flag("timeout-fatal"), Start: a.flag("start")}
	},
	// step-heartbeat job=ID step=S step-attempt=N [lease=MS]: the job's
	// lease grows by lease=, the step's by its own lease.
	"step-heartbeat": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.StepHeartbeat{LeaseRef: e.jobLease(a, "job"), Step: a.str("step", ""),
			StepAttempt: uint32(a.int("step-attempt", 0)), LeaseMS: a.int("lease", 30_000)}
	},
	// step-end job=ID step=S step-attempt=N outcome=retry|switch_resource|needs_user
	//   [payload=TEXT] [decision=D] [answer-timeout=MS] [lease=MS]: a try that
	//   did not end its step.
	"step-end": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.EndStepAttempt{LeaseRef: e.jobLease(a, "job"), Step: a.str("step", ""), Name: a.str("name", "Act"),
			StepAttempt: uint32(a.int("step-attempt", 0)), Outcome: engine.StepOutcome(a.str("outcome", "")),
			Payload: a.bytes("payload"), Decision: engine.CriticDecision(a.str("decision", "")),
			AnswerTimeoutMS: a.int("answer-timeout", 0), LeaseMS: a.int("lease", 0)}
	},
	// step-answer job=ID|wf=ID step=S [answer=TEXT]: a person's answer.
	"step-answer": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.AnswerStep{Target: target(a), Step: a.str("step", ""), Answer: a.bytes("answer")}
	},
	"step-expire": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.ExpireSteps{Max: int(a.int("max", 100))}
	},
	// resource-add id=R [caps=(a,…)] [labels=(k:v,…)] capacity=N
	"resource-add": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.AddResource{ID: a.str("id", ""), Capabilities: a.list("caps"), Labels: labels(a, "labels"),
			Capacity: int(a.int("capacity", 1))}
	},
	// resource-drain id=R [undrain]
	"resource-drain": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.DrainResource{ID: a.str("id", ""), Undrain: a.flag("undrain")}
	},
	"resource-remove": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.RemoveResource{ID: a.str("id", "")}
	},
}

// labels reads key=(k:v,…).
func labels(a *traceArgs, key string) map[string]string {
	vals := a.list(key)
	if vals == nil {
		return nil
	}
	m := map[string]string{}
	for _, kv := range vals {
		k, v, ok := strings.Cut(kv, ":")
		if !ok {
			a.td.Fatalf(a.t, "%s=%s: want key:value", key, kv)
		}
		m[k] = v
	}
	return m
}
