package machine_test

// Trace directives of pause (docs/state-machines.md §6): an operator's
// pause and unpause of a run, and the operations on its activities. They
// are people's commands: not fenced, named by job=<id> or wf=<workflow id>;
// an activity command names its activities by activity=<step>,
// activity-type=<type> or match-all.

import "github.com/heddlewf/heddle/engine"

var pauseDirectives = map[string]commandDirective{
	// pause job=ID|wf=ID [reason=TEXT]
	"pause": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.Pause{Target: target(a), Reason: a.str("reason", "")}
	},
	// unpause job=ID|wf=ID [reason=TEXT]
	"unpause": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.Unpause{Target: target(a), Reason: a.str("reason", "")}
	},
	// activity-pause job=ID|wf=ID selector [reason=TEXT]
	"activity-pause": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.PauseActivity{Target: target(a), ActivitySelector: selector(a), Reason: a.str("reason", "")}
	},
	// activity-unpause job=ID|wf=ID selector [reset-attempts] [reason=TEXT]
	"activity-unpause": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.UnpauseActivity{Target: target(a), ActivitySelector: selector(a), ResetAttempts: a.flag("reset-attempts"),
			Reason: a.str("reason", "")}
	},
	// activity-reset job=ID|wf=ID selector [keep-paused] [restore-options] [reason=TEXT]
	"activity-reset": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.ResetActivity{Target: target(a), ActivitySelector: selector(a), KeepPaused: a.flag("keep-paused"),
			RestoreOriginalOptions: a.flag("restore-options"), Reason: a.str("reason", "")}
	},
	// activity-options job=ID|wf=ID selector [schedule-to-close=MS]
	//   [schedule-to-start=MS] [start-to-close=MS] [heartbeat=MS]
	//   [retry-initial=MS] [retry-max-interval=MS] [retry-coefficient=F]
	//   [retry-attempts=N] [restore]
	"activity-options": func(e *traceEnv, a *traceArgs) engine.Command {
		c := &engine.UpdateActivityOptions{Target: target(a), ActivitySelector: selector(a), RestoreOriginal: a.flag("restore"),
			Options: engine.ActivityOptions{ScheduleToCloseTimeoutMS: a.int("schedule-to-close", 0),
				ScheduleToStartTimeoutMS: a.int("schedule-to-start", 0), StartToCloseTimeoutMS: a.int("start-to-close", 0),
				HeartbeatTimeoutMS: a.int("heartbeat", 0)}}
		p := engine.RetryPolicy{InitialIntervalMS: a.int("retry-initial", 0), MaximumIntervalMS: a.int("retry-max-interval", 0),
			BackoffCoefficient: a.float("retry-coefficient"), MaximumAttempts: int32(a.int("retry-attempts", 0))}
		if p.InitialIntervalMS != 0 || p.MaximumIntervalMS != 0 || p.BackoffCoefficient != 0 || p.MaximumAttempts != 0 {
			c.Options.RetryPolicy = &p
		}
		return c
	},
}

// selector reads activity=<step>, activity-type=<type> or match-all.
func selector(a *traceArgs) engine.ActivitySelector {
	return engine.ActivitySelector{ActivityID: a.str("activity", ""), ActivityType: a.str("activity-type", ""), MatchAll: a.flag("match-all")}
}
