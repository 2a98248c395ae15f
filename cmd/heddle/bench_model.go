package main

import (
	"strconv"

	"github.com/spf13/cobra"

	"github.com/heddlewf/heddle/bench"
	"github.com/heddlewf/heddle/raftfsm"
)

// newBenchModelCommand is `heddle bench model`: the scaling model of a
// sharded cluster on more machines than this one (docs/sharding.md, "The
// scaling model"), computed from costs measured here. Its defaults are the
// figures the docs give; each can be replaced by a new measurement.
func newBenchModelCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model [--machines 3,9,30] [--cpu-ms MS] [--claims N] [--cut-poll-ms MS] ...",
		Short: "model a sharded cluster's throughput on 3, 9 and 30 machines from costs measured on this one",
		Long: "Prints the scaling model of docs/sharding.md as a Markdown table. The defaults are the figures\n" +
			"measured for the docs; measure them again with\n" +
			"  heddle bench --workload seq3 --mode cluster --shards 4      (cpu_ms_per_unit, claims_per_workflow)\n" +
			"  heddle bench --workload groupcost --mode cluster --shards 4 (cut_poll_cpu_ms, idle_cpu_cores_per_group_replica)",
		Args: noArgs,
	}
	in := bench.DefaultScalingInputs
	machines := "3,9,30"
	fs := cmd.Flags()
	fs.StringVar(&machines, "machines", machines, "the cluster `sizes` to model, comma-separated")
	fs.Float64Var(&in.CPUMSPerWorkflow, "cpu-ms", in.CPUMSPerWorkflow, "CPU `ms` a workflow costs the cluster, measured on --measured-nodes nodes")
	fs.IntVar(&in.MeasuredNodes, "measured-nodes", in.MeasuredNodes, "the `nodes` of that measurement")
	fs.Float64Var(&in.ClaimsPerWorkflow, "claims", in.ClaimsPerWorkflow, "claims that took work per workflow (`n`)")
	fs.Float64Var(&in.CutPollCPUMS, "cut-poll-ms", in.CutPollCPUMS, "CPU `ms` of one node's cut long poll")
	fs.Float64Var(&in.IdleCoresPerGroupReplica, "idle-cores", in.IdleCoresPerGroupReplica, "CPU `cores` of one idle Raft group replica")
	fs.Float64Var(&in.LogBytesPerWorkflow, "log-bytes", in.LogBytesPerWorkflow, "Raft log `bytes` a workflow appends")
	fs.Float64Var(&in.CoresPerMachine, "cores", in.CoresPerMachine, "`cores` per machine modelled")
	fs.Float64Var(&in.NICBytesPerS, "nic-bytes-per-s", in.NICBytesPerS, "network `bytes` per second per machine, each way")
	fs.Float64Var(&in.ReplicasPerMachine, "replicas-per-machine", in.ReplicasPerMachine, "group `replicas` each machine holds (the metadata group's included)")
	fs.IntVar(&in.Replicas, "replicas", in.Replicas, "replicas of each shard (`n`)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		var sizes []int
		for _, f := range splitAddrs(machines) {
			m, err := strconv.Atoi(f)
			if err != nil || m < 1 || m > raftfsm.MaxNodes {
				return usagef("--machines: %q is not a machine count in [1, %d]", f, raftfsm.MaxNodes)
			}
			sizes = append(sizes, m)
		}
		if len(sizes) == 0 {
			return usagef("--machines names no machine count")
		}
		rows, err := bench.Scale(in, sizes)
		if err != nil {
			return usagef("%v", err)
		}
		return bench.WriteScalingTable(cmd.OutOrStdout(), in, rows)
	}
	return cmd
}
