package chaos

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/heddlewf/heddle/engine"
)

// readJSONLines decodes every line of path into a fresh T. A torn last
// line (the process died mid-write) is skipped.
func readJSONLines[T any](path string) (_ []T, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var v T
		if json.Unmarshal(sc.Bytes(), &v) == nil {
			out = append(out, v)
		}
	}
	return out, sc.Err()
}

// ReadExecutions reads every acts-*.jsonl log in dir.
func ReadExecutions(dir string) ([]Execution, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "acts-*.jsonl"))
	var all []Execution
	for _, f := range files {
		es, err := readJSONLines[Execution](f)
		if err != nil {
			return nil, err
		}
		all = append(all, es...)
	}
	return all, nil
}

// ReadOps merges every ops-*.jsonl log in dir with the claims and lease
// reclaims the histories hold, into the operations to check. end is later
// than anything that happened: an operation whose outcome is unknown may
// take effect up to then.
func ReadOps(dir string, jobs map[engine.JobID]*JobHistory, end int64) ([]LinOp, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "ops-*.jsonl"))
	sort.Strings(files)
	var ops []LinOp
	observed := map[engine.LeaseRef]bool{} // claims a client saw
	released := map[engine.LeaseRef]bool{} // releases a client made
	for client, f := range files {
		recs, err := readJSONLines[OpRecord](f)
		if err != nil {
			return nil, err
		}
		calls := map[uint64]OpRecord{}
		rets := map[uint64]OpRecord{}
		var order []uint64
		for _, r := range recs {
			if r.Ret {
				rets[r.ID] = r
			} else {
				calls[r.ID] = r
				order = append(order, r.ID)
			}
		}
		for _, id := range order {
			c := calls[id]
			r, ok := rets[id]
			if !ok {
				r = OpRecord{Out: OutUnknown}
			}
			ret := r.T
			if r.Out == OutUnknown {
				ret = end
			}
			if c.Op == "claim" {
				if r.Out != OutOK {
					continue // which jobs it took, if any, the histories tell
				}
				for _, ref := range r.Claimed {
					observed[ref] = true
					ops = append(ops, LinOp{Client: client, Job: ref.Job, Kind: "claim", Att: ref.Attempt, Call: c.T, Return: ret, Out: OutOK})
				}
				continue
			}
			if c.Op == "release" && r.Out != OutRefused {
				released[engine.LeaseRef{Job: engine.JobID(c.Job), Attempt: c.Att}] = true
			}
			ops = append(ops, LinOp{Client: client, Job: engine.JobID(c.Job), Kind: c.Op, Att: c.Att, Step: c.Step,
				Call: c.T, Return: ret, Out: r.Out, Woken: r.Woken})
		}
	}
	hist := len(files)
	for id, jh := range jobs {
		for _, ev := range jh.Events {
			switch {
			case ev.Type == engine.EventJobLeased && !observed[engine.LeaseRef{Job: id, Attempt: ev.Attempt}]:
				ops = append(ops, LinOp{Client: hist, Job: id, Kind: "claim", Att: ev.Attempt, Call: ev.AtMS * 1e6, Return: end, Out: OutOK})
			case ev.Type == engine.EventJobRequeued && ev.Reason == engine.ReasonLeaseExpired:
				ops = append(ops, LinOp{Client: hist, Job: id, Kind: "reclaim", Att: ev.Attempt, Call: ev.AtMS * 1e6, Return: end, Out: OutOK})
			case ev.Type == engine.EventJobRequeued && ev.Reason == engine.ReasonReleased && !released[engine.LeaseRef{Job: id, Attempt: ev.Attempt}]:
				// A claim whose answer was lost is given back by the node
				// that applied it, or by the worker after it asks again
				// under the claim's request id; no client may have logged
				// that release, and the history holds it all the same.
				ops = append(ops, LinOp{Client: hist, Job: id, Kind: "release", Att: ev.Attempt, Call: ev.AtMS * 1e6, Return: end, Out: OutOK})
			}
		}
	}
	for _, o := range ops {
		if o.Call > o.Return {
			return nil, fmt.Errorf("chaos: operation %s on job %d returned before its call", o.Kind, o.Job)
		}
	}
	return ops, nil
}
