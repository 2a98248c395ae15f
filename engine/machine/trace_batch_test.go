package machine_test

// Trace directives of batch operations (engine.Batch): the record (B) and
// its moves. The runs a batch acts on are changed by their own commands,
// which these directives do not write.
//
//	batch-start id=B op=cancel|terminate|signal|reset [query=Q] [reason=R]
//	  [signal=NAME] [reset=FirstWorkflowTask|LastWorkflowTask] [max-job=N] [total=N]
//	batch-advance id=B from=N to=N [done=N] [failed=N] [next=1,2,3] [error=TEXT] [finished]
//	batch-stop id=B [reason=R]

import (
	"strconv"
	"strings"

	"github.com/heddlewf/heddle/engine"
)

var batchDirectives = map[string]commandDirective{
	"batch-start": func(e *traceEnv, a *traceArgs) engine.Command {
		c := &engine.StartBatch{ID: a.str("id", ""), MaxJob: engine.JobID(a.int("max-job", 0)), Total: uint64(a.int("total", 0))}
		c.Operation = engine.BatchOperation(a.str("op", ""))
		c.Query, c.Reason, c.SignalName = a.str("query", ""), a.str("reason", ""), a.str("signal", "")
		if a.has("reset") {
			rt, err := engine.ParseResetType(a.str("reset", ""))
			if err != nil {
				a.td.Fatalf(a.t, "reset: %v", err)
			}
			c.ResetType = rt
		}
		return c
	},
	"batch-advance": func(e *traceEnv, a *traceArgs) engine.Command {
		c := &engine.AdvanceBatch{ID: a.str("id", ""), From: engine.JobID(a.int("from", 0)), To: engine.JobID(a.int("to", 0)),
			Done: uint64(a.int("done", 0)), Failed: uint64(a.int("failed", 0)), LastError: a.str("error", ""), Finished: a.flag("finished")}
		if s := a.str("next", ""); s != "" {
			for _, f := range strings.Split(s, ",") {
				n, err := strconv.ParseUint(f, 10, 64)
				if err != nil {
					a.td.Fatalf(a.t, "next: %v", err)
				}
				c.Next = append(c.Next, engine.JobID(n))
			}
		}
		return c
	},
	"batch-stop": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.StopBatch{ID: a.str("id", ""), Reason: a.str("reason", "")}
	},
}
