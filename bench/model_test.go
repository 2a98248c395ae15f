package bench

import (
	"math"
	"strings"
	"testing"
)

// A model worked by hand: 10 ms a workflow measured on 3 nodes, of which
// 4 claims × 2 cut polls × 0.25 ms = 2 ms are cut polls, so 8 ms is the
// rest. On 5 machines a workflow costs 8 + 4 × 4 × 0.25 = 12 ms; the
// cores are 5 × (2 − 10 × 0.01) = 9.5, so 9,500 / 12 = 791.67 workflows/s,
// below the network's 5 × 1e6 / (1,000 × 2) = 2,500.
func TestScaleByHand(t *testing.T) {
	in := ScalingInputs{CPUMSPerWorkflow: 10, MeasuredNodes: 3, ClaimsPerWorkflow: 4, CutPollCPUMS: 0.25,
		IdleCoresPerGroupReplica: 0.01, LogBytesPerWorkflow: 1000, CoresPerMachine: 2, NICBytesPerS: 1e6,
		ReplicasPerMachine: 10, Replicas: 3}
	rows, err := Scale(in, []int{3, 5, 400})
	if err != nil {
		t.Fatal(err)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	near("3 machines: CPU ms", rows[0].CPUMSPerWorkflow, 10)
	near("3 machines: poll share", rows[0].PollShare, 0.2)
	near("3 machines: CPU bound", rows[0].CPUBound, 5.7*1000/10)
	near("5 machines: CPU ms", rows[1].CPUMSPerWorkflow, 12)
	near("5 machines: CPU bound", rows[1].CPUBound, 9500.0/12)
	near("5 machines: network bound", rows[1].NetworkBound, 2500)
	near("5 machines: workflows/s", rows[1].WorkflowsPerS, 9500.0/12)
	near("5 machines: efficiency", rows[1].Efficiency, (9500.0/12/5)/(570.0/3))
	near("5 machines: without cut polls", rows[1].WithoutCutPolls, 9500.0/8)
	if rows[1].Limit != "cpu" {
		t.Errorf("5 machines: limit %q, want cpu", rows[1].Limit)
	}
	// On 400 machines the network bound (200,000) is above the CPU's, and
	// the CPU bound approaches the limit from below.
	most, half := ScalingLimit(in)
	near("limit", most, 1.9*1000/1)
	near("half", half, 1+8/1.0)
	if rows[2].WorkflowsPerS >= most || rows[2].WorkflowsPerS < 0.95*most {
		t.Errorf("400 machines: %v workflows/s, want just below the limit %v", rows[2].WorkflowsPerS, most)
	}
	// A slow network becomes the limit.
	in.NICBytesPerS = 1e3
	rows, err = Scale(in, []int{3})
	if err != nil {
		t.Fatal(err)
	}
	if rows[0].Limit != "network" || rows[0].WorkflowsPerS != rows[0].NetworkBound {
		t.Errorf("with 1 kB/s: %+v, want the network's limit", rows[0])
	}
}

func TestScaleRefusesWhatItCannotModel(t *testing.T) {
	for _, c := range []struct {
		change func(*ScalingInputs)
		want   string
	}{
		{func(in *ScalingInputs) { in.CPUMSPerWorkflow = -1 }, "CPUMSPerWorkflow"},
		{func(in *ScalingInputs) { in.CutPollCPUMS = math.NaN() }, "CutPollCPUMS"},
		{func(in *ScalingInputs) { in.MeasuredNodes = 0 }, "MeasuredNodes"},
		{func(in *ScalingInputs) { in.Replicas = 0 }, "Replicas"},
		{func(in *ScalingInputs) { in.CutPollCPUMS = 10 }, "cost more than the whole workflow"},
		{func(in *ScalingInputs) { in.IdleCoresPerGroupReplica = 1 }, "every core"},
	} {
		in := DefaultScalingInputs
		c.change(&in)
		if _, err := Scale(in, []int{3}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
	if _, err := Scale(DefaultScalingInputs, []int{0}); err == nil {
		t.Error("a cluster of 0 machines was modelled")
	}
}
