package machine_test

// Trace directives of a job's life (docs/state-machines.md §1): starts,
// the ends a worker writes, the operator's commands, and the sweeps of
// delays and deadlines. A job is named by job=<id> (or wf=<workflow id>
// where the command takes a target); fenced commands present the lease the
// driver remembers (see trace_lease_test.go).

import "github.com/heddlewf/heddle/engine"

var jobDirectives = map[string]commandDirective{
	// create wf=ID type=T queue=Q [input=TEXT] [draft] [reuse=allow|reject|return]
	//   [parent=ID parent-step=S [parent-lease=none] [close=terminate|cancel|abandon]]
	//   [exec-timeout=MS] [run-timeout=MS] [start-timeout=MS] [start-delay=MS]
	//   [cron=SPEC [cron-first-now]] [retry-initial=MS retry-attempts=N] [timeout-on-lease-expiry]
	"create": func(e *traceEnv, a *traceArgs) engine.Command {
		c := &engine.CreateJob{WorkflowID: a.str("wf", ""), Type: a.str("type", "order"), Queue: a.str("queue", "q"),
			Input: a.bytes("input"), Draft: a.flag("draft"),
			ExecutionTimeoutMS: a.int("exec-timeout", 0), RunTimeoutMS: a.int("run-timeout", 0),
			ScheduleToStartTimeoutMS: a.int("start-timeout", 0), StartDelayMS: a.int("start-delay", 0),
			CronSchedule: a.str("cron", ""), CronFirstNow: a.flag("cron-first-now"),
			TimeoutOnLeaseExpiry: a.flag("timeout-on-lease-expiry")}
		switch p := a.str("reuse", "allow"); p {
		case "allow":
		case "reject":
			c.ReusePolicy = engine.IDReuseRejectDuplicate
		case "return":
			c.ReusePolicy = engine.IDReuseReturnExisting
		default:
			a.td.Fatalf(a.t, "reuse=%s: want allow, reject or return", p)
		}
		if a.has("parent") {
			c.ParentID = engine.JobID(a.int("parent", 0))
			c.ParentStep = a.str("parent-step", "")
			if a.str("parent-lease", "") != "none" {
				ref := e.jobLease(a, "parent")
				c.ParentLease = &ref
			}
			switch p := a.str("close", "terminate"); p {
			case "terminate":
			case "cancel":
				c.ParentClosePolicy = engine.ParentCloseRequestCancel
			case "abandon":
				c.ParentClosePolicy = engine.ParentCloseAbandon
			default:
				a.td.Fatalf(a.t, "close=%s: want terminate, cancel or abandon", p)
			}
		}
		if a.has("retry-initial") {
			c.Retry = &engine.RetryPolicy{InitialIntervalMS: a.int("retry-initial", 0), BackoffCoefficient: 2,
				MaximumAttempts: int32(a.int("retry-attempts", 0))}
		}
		return c
	},
	// configure job=ID|wf=ID input=TEXT: a Draft job's new input.
	"configure": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.ConfigureJob{Target: target(a), Input: a.bytes("input")}
	},
	"activate": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.Activate{Target: target(a)}
	},
	"suspend": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.Suspend{Target: target(a), Reason: a.str("reason", "")}
	},
	"resume": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.Resume{Target: target(a)}
	},
	"cancel": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.Cancel{Target: target(a), Reason: a.str("reason", "")}
	},
	// terminate job=ID|wf=ID [reason=TEXT] [by-parent=ID]: a parent's
	// termination of its child presents the parent's lease.
	"terminate": func(e *traceEnv, a *traceArgs) engine.Command {
		c := &engine.Terminate{Target: target(a), Reason: a.str("reason", "")}
		if a.has("by-parent") {
			ref := e.jobLease(a, "by-parent")
			c.ByParent = &ref
		}
		return c
	},
	// request-cancel job=ID|wf=ID [reason=TEXT] [sender=ID sender-step=S]:
	// with a sender, a run's step asks on its behalf, under its lease.
	"request-cancel": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.RequestCancel{Target: target(a), Reason: a.str("reason", ""), Sender: e.sender(a)}
	},
	// complete job=ID [result=TEXT], fail job=ID [error=TEXT]: the worker's
	// end of the run, fenced by its lease.
	"complete": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.Complete{LeaseRef: e.jobLease(a, "job"), Result: a.bytes("result")}
	},
	"fail": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.Fail{LeaseRef: e.jobLease(a, "job"), Error: a.bytes("error")}
	},
	// requeue job=ID [attempt=0] [delay=MS] [reason=TEXT]: a worker gives its
	// job back; attempt=0 is an operator's retry of a Failed job.
	"requeue": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.Requeue{LeaseRef: e.jobLease(a, "job"), DelayMS: a.int("delay", 0), Reason: a.str("reason", "")}
	},
	// continue-as-new job=ID [type=T] [input=TEXT] [failure=TEXT] [delay=MS]
	"continue-as-new": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.ContinueAsNew{LeaseRef: e.jobLease(a, "job"), Type: a.str("type", ""), Input: a.bytes("input"),
			Failure: a.bytes("failure"), DelayMS: a.int("delay", 0)}
	},
	// complete-async job=ID [result=TEXT] [error=TEXT] [by-id]: an activity
	// task's completion by its task token (or by id, without the token).
	"complete-async": func(e *traceEnv, a *traceArgs) engine.Command {
		c := &engine.CompleteAsync{Result: a.bytes("result"), Error: a.bytes("error"), ByID: a.flag("by-id")}
		c.LeaseRef = e.jobLease(a, "job")
		if c.ByID {
			c.Token = ""
		}
		return c
	},
	// reset job=ID|wf=ID [event=SEQ] [type=first|last] [reason=TEXT]
	//   [exclude=(signals,updates)]: Temporal's ResetWorkflowExecution.
	"reset": func(e *traceEnv, a *traceArgs) engine.Command {
		c := &engine.ResetJob{Target: target(a), Seq: uint64(a.int("event", 0)), Reason: a.str("reason", "")}
		switch t := a.str("type", ""); t {
		case "":
		case "first":
			c.Type = engine.ResetFirstWorkflowTask
		case "last":
			c.Type = engine.ResetLastWorkflowTask
		default:
			a.td.Fatalf(a.t, "type=%s: want first or last", t)
		}
		for _, x := range a.list("exclude") {
			switch x {
			case "signals":
				c.ExcludeSignals = true
			case "updates":
				c.ExcludeUpdates = true
			default:
				a.td.Fatalf(a.t, "exclude=%s: want signals or updates", x)
			}
		}
		return c
	},
	"release-delayed": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.ReleaseDelayed{Max: int(a.int("max", 100))}
	},
	"expire-deadlines": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.ExpireDeadlines{Max: int(a.int("max", 100))}
	},
}
