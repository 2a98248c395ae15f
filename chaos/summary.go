package chaos

import (
	"fmt"
	"io"
	"strings"
)

// Summary is the outcome of one run; its JSON form is what `heddle chaos
// --json` prints.
type Summary struct {
	Seed uint64 `json:"seed"`
	// Shards is the shard count of a sharded cluster's run (0: one group).
	Shards     int     `json:"shards,omitempty"`
	DurationS  float64 `json:"duration_s"`
	Kills      int     `json:"kills"`
	Pauses     int     `json:"pauses"`
	Partitions int     `json:"partitions"`
	// Moves counts the shard replicas moved during the run (sharded).
	Moves              int `json:"moves,omitempty"`
	WorkflowsStarted   int `json:"workflows_started"`
	WorkflowsCompleted int `json:"workflows_completed"`
	// WorkflowsFailed counts the runs that ended Failed: the workload never
	// fails on its own, so each is a finding (its checks of the race and
	// the cancellation, or an engine bug).
	WorkflowsFailed         int  `json:"workflows_failed"`
	Lost                    int  `json:"lost"`
	DuplicateCommits        int  `json:"duplicate_commits"`
	InvariantViolations     int  `json:"invariant_violations"`
	Linearizable            bool `json:"linearizable"`
	ReexecutionsAfterCommit int  `json:"reexecutions_after_commit"`
	NodesConverged          bool `json:"nodes_converged"`
	// ResourceOverleases counts the moments more activity tries used a
	// resource than it has units (CheckResourceOverleases).
	ResourceOverleases int `json:"resource_overleases"`
	// On a sharded cluster: the children started on another shard than
	// their parent's (CrossShardChildren), the signals those children sent
	// their parents (CrossShardSignals), the deliveries still pending in
	// the shards' outboxes once the run drained, the children created and
	// the signals received more than once (duplicated), and the children
	// never created or never ended and the signals a completed child sent
	// that never arrived (lost).
	CrossShardChildren   int `json:"cross_shard_children,omitempty"`
	CrossShardSignals    int `json:"cross_shard_signals,omitempty"`
	DeliveriesPending    int `json:"deliveries_pending"`
	DeliveriesDuplicated int `json:"deliveries_duplicated"`
	DeliveriesLost       int `json:"deliveries_lost"`
}

// Details are the counts and findings the JSON summary leaves out.
type Details struct {
	Scenario      string
	LeaderKills   int
	WorkerKills   int
	Executions    int
	Reexecuted    int
	Unexplained   []string
	Problems      []string // every finding, for the text summary
	AppliedIndex  uint64
	Hashes        []string
	Restarts      int // embedded scenario: restarts checked
	AckedCommands int // embedded scenario: commands checked after restarts
	ResourceTries int // tries that ran on a resource unit
	// ResourceTriesAcross are those of runs on another shard than the
	// resource pool's, whose units were leased across shards.
	ResourceTriesAcross int
}

// OK reports whether every check passed.
func (s Summary) OK() bool {
	return s.Lost == 0 && s.WorkflowsFailed == 0 && s.DuplicateCommits == 0 && s.InvariantViolations == 0 &&
		s.ReexecutionsAfterCommit == 0 && s.Linearizable && s.NodesConverged && s.ResourceOverleases == 0 &&
		s.DeliveriesDuplicated == 0 && s.DeliveriesLost == 0
}

// Print writes the human summary; it returns w's error.
func Print(w io.Writer, s Summary, d Details) error {
	verdict := "PASS"
	if !s.OK() {
		verdict = "FAIL"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "chaos %s: %s (seed %d, %.0fs)\n", d.Scenario, verdict, s.Seed, s.DurationS)
	fmt.Fprintf(&b, "  faults: %d node kills (%d of the leader), %d pauses, %d partitions, %d worker kills",
		s.Kills, d.LeaderKills, s.Pauses, s.Partitions, d.WorkerKills)
	if s.Shards > 0 {
		fmt.Fprintf(&b, ", %d replica moves", s.Moves)
	}
	b.WriteString("\n")
	if d.Restarts > 0 {
		fmt.Fprintf(&b, "  restarts checked: %d, acknowledged commands present after each: %d\n", d.Restarts, d.AckedCommands)
	}
	fmt.Fprintf(&b, "  workflows: %d started, %d completed (%d failed), %d lost\n", s.WorkflowsStarted, s.WorkflowsCompleted, s.WorkflowsFailed, s.Lost)
	fmt.Fprintf(&b, "  activities: %d executions, %d repeats (%d with no fault to explain them), %d after their commit\n",
		d.Executions, d.Reexecuted, len(d.Unexplained), s.ReexecutionsAfterCommit)
	fmt.Fprintf(&b, "  resources: %d tries on units (%d across shards), %d over-leases\n", d.ResourceTries, d.ResourceTriesAcross, s.ResourceOverleases)
	if s.Shards > 0 {
		fmt.Fprintf(&b, "  across shards: %d children, %d signals, deliveries %d pending, %d duplicated, %d lost\n",
			s.CrossShardChildren, s.CrossShardSignals, s.DeliveriesPending, s.DeliveriesDuplicated, s.DeliveriesLost)
	}
	fmt.Fprintf(&b, "  store: %d duplicate commits, %d invariant violations, linearizable=%v, converged=%v (applied index %d)\n",
		s.DuplicateCommits, s.InvariantViolations, s.Linearizable, s.NodesConverged, d.AppliedIndex)
	for i, p := range d.Problems {
		if i == 20 {
			fmt.Fprintf(&b, "  ... and %d more problems\n", len(d.Problems)-20)
			break
		}
		fmt.Fprintf(&b, "  problem: %s\n", p)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
