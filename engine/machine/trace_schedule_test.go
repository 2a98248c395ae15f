package machine_test

// Trace directives of schedules (docs/state-machines.md §5). A schedule's
// spec, action and policy come from arguments:
//
//	schedule-create id=S every=MS [offset=MS] [cron=EXPR] [jitter=MS]
//	  type=T queue=Q [wf=BASE] [overlap=Skip|BufferOne|BufferAll|CancelOther|TerminateOther|AllowAll]
//	  [catchup=MS] [pause-on-failure] [paused] [actions=N] [trigger-now]
//
// schedule-update takes the same (without trigger-now) and replaces them.

import "github.com/heddlewf/heddle/engine"

var scheduleDirectives = map[string]commandDirective{
	"schedule-create": func(e *traceEnv, a *traceArgs) engine.Command {
		c := &engine.CreateSchedule{ID: a.str("id", "")}
		c.Spec, c.Action, c.Policy, c.State = scheduleParts(a)
		c.TriggerImmediately = a.flag("trigger-now")
		return c
	},
	"schedule-update": func(e *traceEnv, a *traceArgs) engine.Command {
		c := &engine.UpdateSchedule{ID: a.str("id", "")}
		c.Spec, c.Action, c.Policy, c.State = scheduleParts(a)
		return c
	},
	// schedule-pause id=S [unpause] [note=TEXT]
	"schedule-pause": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.PauseSchedule{ID: a.str("id", ""), Paused: !a.flag("unpause"), Note: a.str("note", "")}
	},
	// schedule-trigger id=S [overlap=POLICY]
	"schedule-trigger": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.TriggerSchedule{ID: a.str("id", ""), Overlap: overlap(a)}
	},
	// schedule-backfill id=S start=MS end=MS [overlap=POLICY]
	"schedule-backfill": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.BackfillSchedule{ID: a.str("id", ""), StartMS: a.int("start", 0), EndMS: a.int("end", 0), Overlap: overlap(a)}
	},
	"schedule-delete": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.DeleteSchedule{ID: a.str("id", "")}
	},
	// schedule-fire [max=N]: the sweep of due schedules.
	"schedule-fire": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.FireSchedules{Max: int(a.int("max", 100))}
	},
}

func scheduleParts(a *traceArgs) (engine.ScheduleSpec, engine.ScheduleAction, engine.SchedulePolicy, engine.ScheduleState) {
	spec := engine.ScheduleSpec{JitterMS: a.int("jitter", 0)}
	if a.has("every") {
		spec.Intervals = []engine.ScheduleInterval{{EveryMS: a.int("every", 0), OffsetMS: a.int("offset", 0)}}
	}
	if a.has("cron") {
		spec.CronExpressions = []string{a.str("cron", "")}
	}
	action := engine.ScheduleAction{WorkflowID: a.str("wf", ""), Type: a.str("type", "report"), Queue: a.str("queue", "q"),
		Input: a.bytes("input")}
	policy := engine.SchedulePolicy{Overlap: overlap(a), CatchupWindowMS: a.int("catchup", 0), PauseOnFailure: a.flag("pause-on-failure")}
	state := engine.ScheduleState{Paused: a.flag("paused")}
	if a.has("actions") {
		state.LimitedActions, state.RemainingActions = true, a.int("actions", 0)
	}
	return spec, action, policy, state
}

func overlap(a *traceArgs) engine.OverlapPolicy {
	if !a.has("overlap") {
		return engine.OverlapUnspecified
	}
	p, err := engine.ParseOverlapPolicy(a.str("overlap", ""))
	if err != nil {
		a.td.Fatalf(a.t, "overlap: %v", err)
	}
	return p
}
