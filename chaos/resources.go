package chaos

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/heddlewf/heddle/engine"
)

// SlotCapability is what the workload's resource step requires.
const SlotCapability = "chaos-slot"

// Slots are the workload's resources and their units: fewer than the
// workflows in flight, so their steps queue for them.
var Slots = map[string]int{"slot-a": 2, "slot-b": 1}

// AddSlots registers the workload's resources (again after a restart:
// one already there is left as it is).
func AddSlots(ctx context.Context, svc engine.Service) error {
	for _, id := range []string{"slot-a", "slot-b"} {
		_, err := svc.AddResource(ctx, engine.AddResource{Header: engine.Header{RequestID: "chaos-add-" + id}, ID: id,
			Capabilities: []string{SlotCapability}, Capacity: Slots[id]})
		if err != nil && !errors.Is(err, engine.ErrResourceExists) {
			return fmt.Errorf("chaos: adding resource %s: %w", id, err)
		}
	}
	return nil
}

// CheckResourceOverleases counts the moments more tries used a resource
// than it has units: each try that started while its resource's units
// were all in use by others. A try uses its unit from its start line to
// its stop line, or, when its worker was killed before it stopped, to the
// kill; a try that never stopped counts to end. It returns the count and
// a description of each.
func CheckResourceOverleases(execs []Execution, faults []Fault, capacity map[string]int, end int64) (int, []string) {
	type edge struct {
		t     int64
		delta int
		what  string
	}
	stops := map[string][]int64{} // key/worker/attempt -> stop times
	id := func(e Execution) string { return fmt.Sprintf("%s/%s/%d", e.Key, e.Worker, e.Attempt) }
	for _, e := range execs {
		if e.End {
			stops[id(e)] = append(stops[id(e)], e.T)
		}
	}
	edges := map[string][]edge{}
	for _, e := range execs {
		if e.End || e.Resource == "" {
			continue
		}
		stop := end
		for _, t := range stops[id(e)] {
			if t >= e.T && t < stop {
				stop = t
			}
		}
		for _, f := range faults {
			if f.Kind == "kill-worker" && f.Target == e.Worker && f.Start >= e.T && f.Start < stop {
				stop = f.Start
			}
		}
		what := fmt.Sprintf("%s try %d on %s from %d to %d", e.Key, e.Attempt, e.Worker, e.T, stop)
		edges[e.Resource] = append(edges[e.Resource], edge{e.T, 1, what}, edge{stop, -1, what})
	}
	var problems []string
	resources := make([]string, 0, len(edges))
	for r := range edges {
		resources = append(resources, r)
	}
	sort.Strings(resources)
	for _, r := range resources {
		es := edges[r]
		// At one instant a stop comes before a start: a unit handed over.
		sort.Slice(es, func(i, j int) bool { return es[i].t < es[j].t || es[i].t == es[j].t && es[i].delta < es[j].delta })
		in := 0
		for _, e := range es {
			in += e.delta
			if e.delta > 0 && in > capacity[r] {
				problems = append(problems, fmt.Sprintf("resource %s (%d units) used by %d tries at once: %s", r, capacity[r], in, e.what))
			}
		}
	}
	return len(problems), problems
}

// checkResources reads the activity logs in logs and counts the
// over-leases into sum and det.
func checkResources(sum *Summary, det *Details, logs string, faults []Fault, end int64, shards int) {
	execs, err := ReadExecutions(logs)
	if err != nil {
		det.Problems = append(det.Problems, err.Error())
	}
	for _, e := range execs {
		if e.Resource != "" && !e.End {
			det.ResourceTries++
			// The key is "<workflow id>/<job>/<step>".
			if wf, _, ok := strings.Cut(e.Key, "/"); ok && shards > 1 && engine.ShardOfKey(wf, shards) != engine.ResourceHomeShard {
				det.ResourceTriesAcross++
			}
		}
	}
	n, problems := CheckResourceOverleases(execs, faults, Slots, end)
	sum.ResourceOverleases = n
	det.Problems = append(det.Problems, problems...)
}
