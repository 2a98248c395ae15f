package chaos

import (
	"fmt"
	"sort"
	"time"
)

// Fault is one injected fault and how long it lasted (Unix ns).
type Fault struct {
	Kind   string `json:"kind"`
	Target string `json:"target"`
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
}

// Window is how far before an execution a fault still explains a repeat
// of it: the workers' lease (3s) plus their request timeout (5s) and a
// second for the failover.
const Window = 9 * time.Second

// ReexecReport is what the execution logs say about repeated activities.
type ReexecReport struct {
	Executions  int      // activity executions logged
	Reexecuted  int      // executions beyond the first of their key
	Unexplained []string // repeats with no fault between them and the one before
	AfterCommit []string // executions that started after their step's commit
}

// CheckReexecutions compares the activity executions with the commit
// times (key -> Unix ms of the commit event) and the faults.
//
// An execution that starts after its step's commit was stamped is a
// violation: a commit is applied before it is acknowledged, every later
// claim sees it, and the commit event's time is stamped before either. The
// stamp is in whole milliseconds, so only a start in a later millisecond
// counts. A repeat of a key is explained when some fault overlaps the time
// from Window before the previous execution up to this one: a worker or
// node died, stalled or was cut off between claiming the job and committing
// the step. The window reaches back because a fault can strand a worker
// before it runs the step: its heartbeats hang on a paused node, its lease
// expires, another worker takes the job, and the first one runs the step
// when the node wakes, on a lease it has already lost.
func CheckReexecutions(execs []Execution, commits map[string]int64, faults []Fault) ReexecReport {
	byKey := map[string][]Execution{}
	for _, e := range execs {
		if !e.End { // a stop line ends an execution logged already
			byKey[e.Key] = append(byKey[e.Key], e)
		}
	}
	rep := ReexecReport{}
	for _, es := range byKey {
		rep.Executions += len(es)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		es := byKey[k]
		sort.Slice(es, func(i, j int) bool { return es[i].T < es[j].T })
		for i, e := range es {
			if at, ok := commits[k]; ok && e.T >= (at+1)*1e6 {
				rep.AfterCommit = append(rep.AfterCommit, fmt.Sprintf("%s ran on %s at %d ns, after its commit at %d ms", k, e.Worker, e.T, at))
			}
			if i == 0 {
				continue
			}
			rep.Reexecuted++
			if e.Attempt != es[i-1].Attempt {
				continue // a recorded failed try: a retry, not a repeat
			}
			if !faultBetween(faults, es[i-1].T-int64(Window), e.T) {
				rep.Unexplained = append(rep.Unexplained, fmt.Sprintf("%s ran on %s at %d and again on %s at %d with no fault in between",
					k, es[i-1].Worker, es[i-1].T, e.Worker, e.T))
			}
		}
	}
	return rep
}

func faultBetween(faults []Fault, from, to int64) bool {
	for _, f := range faults {
		end := f.End
		if end == 0 {
			end = to
		}
		if f.Start <= to && end >= from {
			return true
		}
	}
	return false
}
