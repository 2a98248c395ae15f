package machine_test

// Trace directives of review tasks (docs/state-machines.md §4). Every
// directive is named by the document's verb (review-create, review-activate,
// review-claim, review-report, review-approve, …), so the trace files keep
// their words whatever the code calls the review task. A task is named by
// task=<id>, or by job=<its job> phase=<its phase>; fenced writes present
// the lease the driver remembers from review-claim (attempt=, token=none|wrong
// to write as someone else).

import "github.com/heddlewf/heddle/engine"

var reviewDirectives = map[string]commandDirective{
	// review-create job=J phase=P [queue=Q] [type=T] [review-queue=Q] [review-type=T]
	//   [deps=(phase,…)] [draft] [auto-review] [auto-approve] [objective=TEXT]
	//   [parent=ID parent-step=S [parent-lease=none]]; a config as JSON input.
	"review-create": func(e *traceEnv, a *traceArgs) engine.Command {
		c := &engine.CreateTask{Job: a.str("job", ""), Phase: a.str("phase", ""), Queue: a.str("queue", "work"),
			Type: a.str("type", "Work"), ReviewQueue: a.str("review-queue", ""), ReviewType: a.str("review-type", ""),
			Deps: a.list("deps"), Draft: a.flag("draft"), AutoReview: a.flag("auto-review"),
			AutoApprove: a.flag("auto-approve"), By: a.str("by", "")}
		a.json(&c.Config)
		if a.has("objective") {
			c.Config.Objective = a.str("objective", "")
		}
		if a.has("parent") {
			c.ParentJob = engine.JobID(a.int("parent", 0))
			c.ParentStep = a.str("parent-step", "")
			if a.str("parent-lease", "") != "none" {
				ref := e.jobLease(a, "parent")
				c.ParentLease = &ref
			}
		}
		return c
	},
	"review-activate":  reviewOp(engine.TaskOpActivate),
	"review-config":    reviewOp(engine.TaskOpConfig),
	"review-suspend":   reviewOp(engine.TaskOpSuspend),
	"review-resume":    reviewOp(engine.TaskOpResume),
	"review-cancel":    reviewOp(engine.TaskOpCancel),
	"review-step":      reviewOp(engine.TaskOpStep),
	"review-approve":   reviewOp(engine.TaskOpApprove),
	"review-reject":    reviewOp(engine.TaskOpReject),
	"review-resubmit":  reviewOp(engine.TaskOpResubmit),
	"review-fix":       reviewOp(engine.TaskOpFix),
	"review-terminate": reviewOp(engine.TaskOpTerminate),
	// review-claim role=work|review queue=Q owner=O [max=1] lease=MS [types=(t,…)] nonce=TEXT
	"review-claim": func(e *traceEnv, a *traceArgs) engine.Command {
		c := &engine.ClaimTasks{Queue: a.str("queue", "work"), Owner: a.str("owner", "w1"), Max: int(a.int("max", 1)),
			LeaseMS: a.int("lease", 30_000), Types: a.list("types")}
		switch r := a.str("role", "work"); r {
		case "work":
		case "review":
			c.Role = engine.TaskRoleReview
		default:
			a.td.Fatalf(a.t, "role=%s: want work or review", r)
		}
		return c
	},
	// review-report task=ID op=output|pause|unpause|verdict [output=TEXT] [cost=N]
	//   [summary=TEXT] [verdict=approve|intervene] [recommendations=(…)]
	"review-report": func(e *traceEnv, a *traceArgs) engine.Command {
		c := &engine.TaskReport{TaskLeaseRef: e.taskLease(a), Output: a.bytes("output"), Cost: a.float("cost"),
			Summary: a.str("summary", "")}
		switch op := a.str("op", ""); op {
		case "output":
			c.Op = engine.TaskReportOutput
		case "pause":
			c.Op = engine.TaskReportPause
		case "unpause":
			c.Op = engine.TaskReportUnpause
		case "verdict":
			c.Op = engine.TaskReportVerdict
		default:
			a.td.Fatalf(a.t, "op=%s: want output, pause, unpause or verdict", op)
		}
		if a.has("verdict") {
			v := engine.VerdictApprove
			if a.str("verdict", "") == "intervene" {
				v = engine.VerdictIntervene
			}
			c.Review = &engine.Review{Verdict: v, Recommendations: a.list("recommendations"), Summary: c.Summary}
		}
		return c
	},
	// review-heartbeat task=ID [attempt=N] [token=none|wrong] lease=MS
	"review-heartbeat": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.TaskHeartbeat{Leases: []engine.TaskLeaseRef{e.taskLease(a)}, LeaseMS: a.int("lease", 30_000)}
	},
	"review-reclaim": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.ReclaimTasks{Max: int(a.int("max", 100))}
	},
}

// reviewOp is the directive of a person's command: task=ID (or job= phase=)
// [by=WHO] [reason=TEXT] [expect=STATE]; review-config takes the new config
// as JSON input.
func reviewOp(op engine.TaskOp) commandDirective {
	return func(e *traceEnv, a *traceArgs) engine.Command {
		c := &engine.TaskCommand{Op: op, By: a.str("by", ""), Reason: a.str("reason", ""),
			TaskTarget: engine.TaskTarget{ID: engine.TaskID(a.int("task", 0)), Job: a.str("job", ""), Phase: a.str("phase", "")}}
		if op == engine.TaskOpConfig {
			c.Config = new(engine.TaskConfig)
			a.json(c.Config)
		}
		if a.has("expect") {
			s, err := engine.ParseTaskState(a.str("expect", ""))
			if err != nil {
				a.td.Fatalf(a.t, "expect: %v", err)
			}
			c.Expect = s
		}
		return c
	}
}

// taskLease is jobLease for a review task's lease (task=).
func (e *traceEnv) taskLease(a *traceArgs) engine.TaskLeaseRef {
	id := engine.TaskID(a.int("task", 0))
	if id == 0 {
		a.td.Fatalf(a.t, "%s: name the task with task=<id>", a.td.Cmd)
	}
	b := e.taskBook(id)
	attempt := uint64(a.int("attempt", int64(b.latest)))
	return engine.TaskLeaseRef{Task: id, Attempt: attempt, Token: b.token(a, attempt)}
}
