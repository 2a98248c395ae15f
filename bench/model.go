package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// ScalingInputs are what the scaling model of a sharded cluster
// (docs/sharding.md, "The scaling model") is computed from: costs measured
// on one machine with `heddle bench`, and the shape of the machines the
// model is asked about. The zero value is not valid; DefaultScalingInputs
// holds the figures measured for the docs.
type ScalingInputs struct {
	// CPUMSPerWorkflow is the CPU a workflow costs the whole cluster (every
	// replica of its shard, the claims, and here the workers and the
	// starters too, which share the measuring process), in ms, as seq3
	// measured it on MeasuredNodes nodes: `heddle bench --workload seq3
	// --mode cluster --shards S` (cpu_ms_per_unit).
	CPUMSPerWorkflow float64
	// MeasuredNodes is the node count of that measurement (3).
	MeasuredNodes int
	// ClaimsPerWorkflow is how many claims that took work a workflow
	// needed (seq3's claims_per_workflow). On a sharded cluster each is a
	// long poll of every node, all but one of which are cut.
	ClaimsPerWorkflow float64
	// CutPollCPUMS is what one node's cut long poll costs (the poll, the
	// cut, the recall), in ms: groupcost's cut_poll_cpu_ms.
	CutPollCPUMS float64
	// IdleCoresPerGroupReplica is the CPU one Raft group replica takes
	// while nothing happens (heartbeats, timers), in cores: groupcost's
	// idle_cpu_cores_per_group_replica.
	IdleCoresPerGroupReplica float64
	// LogBytesPerWorkflow is what a workflow appends to its shard's Raft
	// log, each byte of which its leader sends to every other replica.
	LogBytesPerWorkflow float64
	// CoresPerMachine, NICBytesPerS and ReplicasPerMachine describe the
	// machines modelled: their cores, their network's bytes per second
	// each way, and how many group replicas each holds (shards × replicas
	// / machines, plus one of the metadata group).
	CoresPerMachine    float64
	NICBytesPerS       float64
	ReplicasPerMachine float64
	// Replicas is the replicas of each shard (3).
	Replicas int
}

// DefaultScalingInputs are the inputs measured on the 2-core machine the
// docs' figures come from (docs/sharding.md, "The scaling model", which
// gives each figure's command), for machines of the same shape holding
// four shard replicas each.
var DefaultScalingInputs = ScalingInputs{
	CPUMSPerWorkflow:         2.73,
	MeasuredNodes:            3,
	ClaimsPerWorkflow:        0.32,
	CutPollCPUMS:             0.14,
	IdleCoresPerGroupReplica: 0.0025,
	LogBytesPerWorkflow:      5.32 * commandPayloadBytes,
	CoresPerMachine:          2,
	NICBytesPerS:             125e6, // 1 Gbit/s
	ReplicasPerMachine:       5,
	Replicas:                 3,
}

// Validate reports the first input that cannot be modelled.
func (in ScalingInputs) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"CPUMSPerWorkflow", in.CPUMSPerWorkflow}, {"ClaimsPerWorkflow", in.ClaimsPerWorkflow},
		{"CutPollCPUMS", in.CutPollCPUMS}, {"IdleCoresPerGroupReplica", in.IdleCoresPerGroupReplica},
		{"LogBytesPerWorkflow", in.LogBytesPerWorkflow}, {"CoresPerMachine", in.CoresPerMachine},
		{"NICBytesPerS", in.NICBytesPerS}, {"ReplicasPerMachine", in.ReplicasPerMachine},
	} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fmt.Errorf("bench: scaling input %s = %v is not a non-negative number", f.name, f.v)
		}
	}
	switch {
	case in.MeasuredNodes < 1:
		return fmt.Errorf("bench: scaling input MeasuredNodes = %d, want at least 1", in.MeasuredNodes)
	case in.Replicas < 1:
		return fmt.Errorf("bench: scaling input Replicas = %d, want at least 1", in.Replicas)
	case in.CPUMSPerWorkflow <= in.fanOutMS(in.MeasuredNodes):
		return fmt.Errorf("bench: scaling inputs: the cut polls (%.3f ms a workflow on %d nodes) cost more than the whole workflow (%.3f ms)",
			in.fanOutMS(in.MeasuredNodes), in.MeasuredNodes, in.CPUMSPerWorkflow)
	case in.CoresPerMachine <= in.ReplicasPerMachine*in.IdleCoresPerGroupReplica:
		return errors.New("bench: scaling inputs: the idle groups take every core of a machine")
	}
	return nil
}

// fanOutMS is the CPU a workflow's claims cost the nodes that did not
// answer them, on a cluster of m nodes: each claim is a long poll of every
// node, and m-1 of them are cut.
func (in ScalingInputs) fanOutMS(m int) float64 {
	return in.ClaimsPerWorkflow * float64(m-1) * in.CutPollCPUMS
}

// ScalingRow is the model's answer for one cluster size.
type ScalingRow struct {
	Machines int
	// CPUMSPerWorkflow is the CPU a workflow costs on this many machines,
	// and PollShare the part of it spent on cut polls.
	CPUMSPerWorkflow float64
	PollShare        float64
	// CPUBound and NetworkBound are the workflows per second the cores and
	// the network allow; WorkflowsPerS is the lower, and Limit names it.
	CPUBound, NetworkBound float64
	WorkflowsPerS          float64
	Limit                  string
	// PerMachine is WorkflowsPerS over Machines, and Efficiency that over
	// the first row's: 1 while each machine added brings as much as the
	// first ones did.
	PerMachine, Efficiency float64
	// WithoutCutPolls is WorkflowsPerS if a claim polled only the node
	// that answers it (docs/sharding.md, "Claims": the next step).
	WithoutCutPolls float64
}

// Scale computes the model for each cluster size in machines: every
// machine runs its share of the shards' replicas and leaders (spread
// evenly, as the placement spreads them), so the cluster's cores are
// machines × CoresPerMachine less the idle groups' share, and a workflow
// costs the CPU measured less its cut polls on MeasuredNodes nodes, plus
// the cut polls on this many. Each byte of a shard's log leaves its leader
// once per other replica, and the leaders are spread, so each machine
// sends its share of that.
func Scale(in ScalingInputs, machines []int) ([]ScalingRow, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	base := in.CPUMSPerWorkflow - in.fanOutMS(in.MeasuredNodes)
	rows := make([]ScalingRow, 0, len(machines))
	for _, m := range machines {
		if m < 1 {
			return nil, fmt.Errorf("bench: a cluster of %d machines", m)
		}
		r := ScalingRow{Machines: m}
		r.CPUMSPerWorkflow = base + in.fanOutMS(m)
		r.PollShare = in.fanOutMS(m) / r.CPUMSPerWorkflow
		cores := float64(m) * (in.CoresPerMachine - in.ReplicasPerMachine*in.IdleCoresPerGroupReplica)
		r.CPUBound = cores * 1000 / r.CPUMSPerWorkflow
		r.NetworkBound = math.Inf(1)
		if in.Replicas > 1 && in.LogBytesPerWorkflow > 0 {
			r.NetworkBound = float64(m) * in.NICBytesPerS / (in.LogBytesPerWorkflow * float64(in.Replicas-1))
		}
		r.WorkflowsPerS, r.Limit = r.CPUBound, "cpu"
		if r.NetworkBound < r.CPUBound {
			r.WorkflowsPerS, r.Limit = r.NetworkBound, "network"
		}
		r.PerMachine = r.WorkflowsPerS / float64(m)
		r.WithoutCutPolls = min(cores*1000/base, r.NetworkBound)
		rows = append(rows, r)
	}
	for i := range rows {
		rows[i].Efficiency = rows[i].PerMachine / rows[0].PerMachine
	}
	return rows, nil
}

// ScalingLimit is where the model's growth stops: as machines are added,
// the cut polls' share grows until a workflow's CPU is mostly polls, and
// the cluster's throughput tends to CoresPerMachine (less the idle
// groups) × 1000 / (ClaimsPerWorkflow × CutPollCPUMS). HalfMachines is the
// cluster size at which the cut polls cost as much as the rest.
func ScalingLimit(in ScalingInputs) (maxWorkflowsPerS float64, halfMachines float64) {
	perPoll := in.ClaimsPerWorkflow * in.CutPollCPUMS
	if perPoll == 0 {
		return math.Inf(1), math.Inf(1)
	}
	base := in.CPUMSPerWorkflow - in.fanOutMS(in.MeasuredNodes)
	return (in.CoresPerMachine - in.ReplicasPerMachine*in.IdleCoresPerGroupReplica) * 1000 / perPoll, 1 + base/perPoll
}

// WriteScalingTable writes rows as the Markdown table docs/sharding.md
// shows, then the limit.
func WriteScalingTable(w io.Writer, in ScalingInputs, rows []ScalingRow) error {
	var b strings.Builder
	b.WriteString("| machines | CPU ms per workflow | of which cut polls | CPU bound, workflows/s | network bound, workflows/s | model, workflows/s | per machine | efficiency | without cut polls, workflows/s |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %.2f | %.0f%% | %.0f | %.0f | %.0f (%s) | %.0f | %.2f | %.0f |\n", r.Machines, r.CPUMSPerWorkflow, 100*r.PollShare,
			r.CPUBound, r.NetworkBound, r.WorkflowsPerS, r.Limit, r.PerMachine, r.Efficiency, r.WithoutCutPolls)
	}
	most, half := ScalingLimit(in)
	fmt.Fprintf(&b, "\nLimit: the cut polls cost as much as the rest of a workflow at %.0f machines, and no number of machines exceeds %.0f workflows/s.\n", half, most)
	_, err := io.WriteString(w, b.String())
	return err
}
