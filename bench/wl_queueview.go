package bench

import (
	"fmt"
	"slices"
	"time"
)

// runQueueView: seq3 of N workflows on a fresh backend with the task queue
// view on, and on another with it off, in each round, the order turning
// from round to round (as observe's settings do), so that a machine
// warming up or slowing down moves both alike. The headline is the median
// throughput with the view on; the overhead is the median over the rounds
// of the paired ratios on/off, so that a shared machine's drift between
// rounds cancels out. The CPU time the process spent a workflow is
// compared the same way: on a loaded machine it moves far less than the
// throughput. --no-queue-view has no effect here: the workload sets the
// view itself.
func runQueueView(r *runner) error {
	rounds := queueViewRounds(r.n)
	settings := []struct {
		name string
		off  bool
	}{{"view-on", false}, {"view-off", true}}
	wps := map[string][]float64{}
	cpu := map[string][]float64{}   // CPU µs a workflow
	var ratios, cpuRatios []float64 // on / off, per round
	var lat []time.Duration
	var commands int64
	for round := range rounds {
		for k := range settings {
			s := settings[(round+k)%len(settings)]
			before := processCPU()
			t, err := r.observedSeq3(observation{name: s.name, queueViewOff: s.off}, fmt.Sprintf("%s round %d/%d", s.name, round+1, rounds))
			if err != nil {
				return err
			}
			used := processCPU() - before
			wps[s.name] = append(wps[s.name], float64(r.n)/t.elapsed.Seconds())
			cpu[s.name] = append(cpu[s.name], float64(used.Microseconds())/float64(r.n))
			if !s.off {
				lat = append(lat, t.lat...)
				commands += t.commands
			}
		}
		ratios = append(ratios, wps["view-on"][round]/wps["view-off"][round])
		cpuRatios = append(cpuRatios, cpu["view-on"][round]/cpu["view-off"][round])
	}
	r.obs = observation{}
	ceil, err := r.ceiling(commandPayloadBytes, r.starters, 0)
	if err != nil {
		return err
	}
	on, off := median(wps["view-on"]), median(wps["view-off"])
	units := r.n * rounds
	r.throughput("workflows/s with the task queue view on", units, time.Duration(float64(units)/on*float64(time.Second)), commands, ceil)
	r.res.WorkflowsPerS = ptr(on)
	r.res.ActivitiesPerS = ptr(3 * on)
	r.res.Extra["rounds"] = float64(rounds)
	r.res.Extra["view_on_workflows_per_s"] = on
	r.res.Extra["view_off_workflows_per_s"] = off
	r.res.Extra["queue_view_overhead_pct"] = 100 * (1 - median(ratios))
	r.res.Extra["queue_view_overhead_pct_worst_round"] = 100 * (1 - slices.Min(ratios))
	r.res.Extra["queue_view_overhead_pct_best_round"] = 100 * (1 - slices.Max(ratios))
	// The CPU a workflow cost, which a shared machine's load moves less
	// than the throughput: its overhead is the median of the paired
	// ratios, positive when the view costs more.
	r.res.Extra["view_on_cpu_us_per_workflow"] = median(cpu["view-on"])
	r.res.Extra["view_off_cpu_us_per_workflow"] = median(cpu["view-off"])
	r.res.Extra["queue_view_cpu_overhead_pct"] = 100 * (median(cpuRatios) - 1)
	r.samples(lat, "start to result of one workflow, with the task queue view on", nil, 0)
	return nil
}

// queueViewRounds is how many rounds queueview runs for n workflows a
// round: fifteen, fewer for a small n (the tests'), at least one. The
// overhead it looks for is a few percent, well under what a shared
// machine's speed moves by between runs, so it pairs more rounds than
// observe does.
func queueViewRounds(n int) int { return min(15, max(1, n/100)) }
