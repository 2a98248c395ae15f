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
		c := &engine.CreateReview{Job: a.str("job", ""), Phase: a.str("phase", ""), Queue: a.str("queue", "work"),
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
	"review-activate":  reviewOp(engine.ReviewOpActivate),
	"review-config":    reviewOp(engine.ReviewOpConfig),
	"review-suspend":   reviewOp(engine.ReviewOpSuspend),
	"review-resume":    reviewOp(engine.ReviewOpResume),
	"review-cancel":    reviewOp(engine.ReviewOpCancel),
	"review-step":      reviewOp(engine.ReviewOpStep),
	"review-approve":   reviewOp(engine.ReviewOpApprove),
	"review-reject":    reviewOp(engine.ReviewOpReject),
	"review-resubmit":  reviewOp(engine.ReviewOpResubmit),
	"review-fix":       reviewOp(engine.ReviewOpFix),
	"review-terminate": reviewOp(engine.ReviewOpTerminate),
	// review-claim role=work|review queue=Q owner=O [max=1] lease=MS [types=(t,…)] nonce=TEXT
	"review-claim": func(e *traceEnv, a *traceArgs) engine.Command {
		c := &engine.ClaimReviews{Queue: a.str("queue", "work"), Owner: a.str("owner", "w1"), Max: int(a.int("max", 1)),
			LeaseMS: a.int("lease", 30_000), Types: a.list("types")}
		switch r := a.str("role", "work"); r {
		case "work":
		case "review":
			c.Role = engine.ReviewRoleReview
		default:
			a.td.Fatalf(a.t, "role=%s: want work or review", r)
		}
		return c
	},
	// review-report task=ID op=output|pause|unpause|verdict [output=TEXT] [cost=N]
	//   [summary=TEXT] [verdict=approve|intervene] [recommendations=(…)]
	"review-report": func(e *traceEnv, a *traceArgs) engine.Command {
		c := &engine.ReviewReport{ReviewLeaseRef: e.reviewLease(a), Output: a.bytes("output"), Cost: a.float("cost"),
			Summary: a.str("summary", "")}
		switch op := a.str("op", ""); op {
		case "output":
			c.Op = engine.ReviewReportOutput
		case "pause":
			c.Op = engine.ReviewReportPause
		case "unpause":
			c.Op = engine.ReviewReportUnpause
		case "verdict":
			c.Op = engine.ReviewReportVerdict
		default:
			a.td.Fatalf(a.t, "op=%s: want output, pause, unpause or verdict", op)
		}
		if a.has("verdict") {
			v := engine.VerdictApprove
			if a.str("verdict", "") == "intervene" {
				v = engine.VerdictIntervene
			}
			c.Assessment = &engine.Assessment{Verdict: v, Recommendations: a.list("recommendations"), Summary: c.Summary}
		}
		return c
	},
	// review-heartbeat task=ID [attempt=N] [token=none|wrong] lease=MS
	"review-heartbeat": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.ReviewHeartbeat{Leases: []engine.ReviewLeaseRef{e.reviewLease(a)}, LeaseMS: a.int("lease", 30_000)}
	},
	"review-reclaim": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.ReclaimReviews{Max: int(a.int("max", 100))}
	},
}

// reviewOp is the directive of a person's command: task=ID (or job= phase=)
// [by=WHO] [reason=TEXT] [expect=STATE]; review-config takes the new config
// as JSON input.
func reviewOp(op engine.ReviewOp) commandDirective {
	return func(e *traceEnv, a *traceArgs) engine.Command {
		c := &engine.ReviewCommand{Op: op, By: a.str("by", ""), Reason: a.str("reason", ""),
			ReviewTarget: engine.ReviewTarget{ID: engine.ReviewID(a.int("task", 0)), Job: a.str("job", ""), Phase: a.str("phase", "")}}
		if op == engine.ReviewOpConfig {
			c.Config = new(engine.ReviewConfig)
			a.json(c.Config)
		}
		if a.has("expect") {
			s, err := engine.ParseReviewState(a.str("expect", ""))
			if err != nil {
				a.td.Fatalf(a.t, "expect: %v", err)
			}
			c.Expect = s
		}
		return c
	}
}

// reviewLease is jobLease for a review task's lease (task=).
func (e *traceEnv) reviewLease(a *traceArgs) engine.ReviewLeaseRef {
	id := engine.ReviewID(a.int("task", 0))
	if id == 0 {
		a.td.Fatalf(a.t, "%s: name the task with task=<id>", a.td.Cmd)
	}
	b := e.reviewBook(id)
	attempt := uint64(a.int("attempt", int64(b.latest)))
	return engine.ReviewLeaseRef{Review: id, Attempt: attempt, Token: b.token(a, attempt)}
}
