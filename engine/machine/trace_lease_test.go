package machine_test

// Trace directives of job leases: claims, heartbeats and the reclaim of
// expired leases (docs/state-machines.md §2). A claim's tokens are
// remembered by the driver, so a fenced write names only its job (and
// attempt=, token=none|wrong to write as someone else).

import "github.com/heddlewf/heddle/engine"

var leaseDirectives = map[string]commandDirective{
	// claim queue=Q owner=O [max=1] lease=MS [types=(a,b)] [tail=N] nonce=TEXT
	"claim": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.Claim{Queue: a.str("queue", "q"), Owner: a.str("owner", "w1"), Max: int(a.int("max", 1)),
			LeaseMS: a.int("lease", 30_000), Types: a.list("types"), TailEvents: int(a.int("tail", 0))}
	},
	// heartbeat job=ID [attempt=N] [token=none|wrong] [jobs=(id,id)] lease=MS
	"heartbeat": func(e *traceEnv, a *traceArgs) engine.Command {
		hb := &engine.Heartbeat{LeaseMS: a.int("lease", 30_000)}
		if a.has("job") {
			hb.Leases = append(hb.Leases, e.jobLease(a, "job"))
		}
		for _, id := range a.list("jobs") {
			ref := engine.LeaseRef{Job: engine.JobID(mustInt(a, id))}
			b := e.jobBook(ref.Job)
			ref.Attempt, ref.Token = b.latest, b.tokens[b.latest]
			hb.Leases = append(hb.Leases, ref)
		}
		return hb
	},
	// reclaim [max=N]: requeue (or time out) the Running jobs whose lease expired.
	"reclaim": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.Reclaim{Max: int(a.int("max", 100))}
	},
}
