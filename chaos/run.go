package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/sdk/client"
)

// Options configure a run.
type Options struct {
	Seed     uint64
	Duration time.Duration // how long faults are injected
	// Dir receives the nodes' directories and every log; empty means a
	// temporary directory, removed after a passing run.
	Dir string
	// Bin is the heddle binary; empty means build ./cmd/heddle.
	Bin string
	// Log receives progress lines (nil: discarded).
	Log io.Writer
	// Starters is how many workflows are in flight at once (0: 16).
	Starters int
	// Kills is the embedded scenario's number of SIGKILLs (0: 100).
	Kills int
	// Shards, above 0, runs the cluster scenario on a sharded cluster of
	// this many shards (docs/sharding.md); 0 is a cluster of one group.
	Shards int
}

func (o Options) say(format string, args ...any) {
	if o.Log != nil {
		// The log is commentary: failing to write it is no reason to stop
		// the run, whose verdict is in its result.
		_, _ = fmt.Fprintf(o.Log, time.Now().Format("15:04:05.000")+" "+format+"\n", args...)
	}
}

// prepare makes the run's directory and binary.
func (o *Options) prepare(name string) (cleanup func(ok bool), err error) {
	keep := o.Dir != ""
	if !keep {
		if o.Dir, err = os.MkdirTemp("", "heddle-chaos-"+name+"-"); err != nil {
			return nil, err
		}
	} else if o.Dir, err = filepath.Abs(filepath.Join(o.Dir, name)); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	if o.Bin == "" {
		if o.Bin, err = BuildBinary(o.Dir); err != nil {
			return nil, err
		}
	}
	return func(ok bool) {
		if ok && !keep {
			if err := os.RemoveAll(o.Dir); err != nil {
				o.say("could not remove %s: %v", o.Dir, err)
			}
		} else {
			o.say("logs and data kept in %s", o.Dir)
		}
	}, nil
}

// RunCluster runs the three-node scenario and its checkers.
func RunCluster(ctx context.Context, o Options) (Summary, Details, error) {
	sum, det := Summary{Seed: o.Seed, Shards: o.Shards}, Details{Scenario: "cluster"}
	if o.Shards > 0 {
		det.Scenario = fmt.Sprintf("cluster of %d shards", o.Shards)
	}
	o.say("seed %d", o.Seed)
	name := "cluster"
	if o.Shards > 0 {
		name = fmt.Sprintf("cluster-%dshards", o.Shards)
	}
	cleanup, err := o.prepare(name)
	if err != nil {
		return sum, det, err
	}
	ok := false
	defer func() { cleanup(ok) }()
	logs := filepath.Join(o.Dir, "logs")
	ps := newProcs()
	defer ps.killAll()
	began := time.Now()

	cl, err := startCluster(ctx, o.Bin, filepath.Join(o.Dir, "nodes"), logs, ps, o.Shards)
	if cl != nil && cl.proxy != nil {
		defer func() {
			if err := cl.proxy.Close(); err != nil {
				o.say("closing the proxy: %v", err)
			}
		}()
	}
	if err != nil {
		return sum, det, err
	}
	o.say("cluster up: %v", cl.addrs())
	ws := &workers{bin: o.Bin, logs: logs, addrs: cl.addrs(), ca: cl.certs.ca, ps: ps, slots: make([]*proc, 3)}
	for i := range ws.slots {
		if err := ws.start(i); err != nil {
			return sum, det, err
		}
	}
	svc, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: cl.addrs(), TLS: cl.certs.client, RequestTimeout: 5 * time.Second, PollWait: 5 * time.Second})
	if err != nil {
		return sum, det, err
	}
	if err := AddSlots(ctx, svc); err != nil {
		return sum, det, err
	}
	drv := &driver{c: client.New(svc), svc: svc, seed: o.Seed, shards: o.Shards}
	starters := o.Starters
	if starters == 0 {
		starters = 16
	}
	driveCtx, stopDrive := context.WithCancel(ctx)
	defer stopDrive()
	startCtx, stopStarts := context.WithCancel(driveCtx)
	defer stopStarts()
	var wg sync.WaitGroup
	for i := 0; i < starters; i++ {
		wg.Add(1)
		r := rand.New(rand.NewPCG(o.Seed, uint64(100+i)))
		go func() { defer wg.Done(); drv.run(driveCtx, startCtx, r) }()
	}

	// Faults, from the seed: nodes and network on one stream, workers on
	// another, so each stream's choices replay exactly.
	flog := &faultLog{}
	faultCtx, stopFaults := context.WithTimeout(ctx, o.Duration)
	var fwg sync.WaitGroup
	fwg.Add(2)
	go func() { defer fwg.Done(); cl.nodeFaults(faultCtx, rand.New(rand.NewPCG(o.Seed, 1)), flog, o.say) }()
	go func() { defer fwg.Done(); ws.kills(faultCtx, rand.New(rand.NewPCG(o.Seed, 2)), flog) }()
	fwg.Wait()
	stopFaults()
	stopStarts()
	o.say("faults over; healing and draining")

	cl.proxy.Heal()
	for _, n := range cl.nodes {
		if n.proc.exited() {
			if err := cl.start(n); err != nil {
				det.Problems = append(det.Problems, fmt.Sprintf("restarting %s after the faults: %v", n.id, err))
			}
		}
	}
	if !cl.waitHealthy(ctx, 2*time.Minute) {
		det.Problems = append(det.Problems, "the cluster did not recover a common leader within 2m after the faults")
	}
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(3 * time.Minute):
		det.Problems = append(det.Problems, "some workflows were still open 3m after the faults ended")
		stopDrive()
		<-drained
	}
	stopDrive()
	ws.stopAll()

	// Quiesce before comparing: with every workflow closed and every
	// worker gone, the leader's scheduler still sweeps the stale lease and
	// timer entries of the last turns when they fall due (up to a lease
	// plus the failover grace of a recent leader change away). A sweep that
	// lands between the convergence check and the nodes' stop would leave
	// the node stopped first one entry behind: a race in the check, not a
	// divergence. So wait those out first.
	sleepCtx(ctx, quiesceAfterDrain)

	// Convergence: equal applied indexes, twice in a row, then stop the
	// nodes gracefully so their state is flushed, then hash it.
	applied := cl.waitConverged(ctx, 2*time.Minute)
	det.AppliedIndex = applied
	for _, n := range cl.nodes {
		ps.stop(n.proc, 20*time.Second)
	}
	end := time.Now().Add(time.Hour).UnixNano()

	acks := drv.acked()
	sum.WorkflowsStarted = len(acks)
	sum.Kills, sum.Pauses, sum.Partitions, sum.Moves = flog.kills, flog.pauses, flog.partitions, flog.moves
	det.LeaderKills, det.WorkerKills = flog.leaderKills, flog.workerKills

	var reps []*StoreReport
	for _, n := range cl.nodes {
		read := ReadStore
		if cl.shards > 0 {
			read = func(dir string) (*StoreReport, error) { return ReadShardedNode(dir, cl.shards) }
		}
		rep, err := read(n.dir)
		if err != nil {
			return sum, det, err
		}
		reps = append(reps, rep)
		sum.InvariantViolations += len(rep.Violations)
		for _, v := range rep.Violations {
			det.Problems = append(det.Problems, fmt.Sprintf("%s: %v", n.id, v))
		}
		det.Hashes = append(det.Hashes, rep.Hash)
		d, where := DuplicateCommits(rep.ByID)
		sum.DuplicateCommits = max(sum.DuplicateCommits, d)
		det.Problems = append(det.Problems, where...)
	}
	sum.NodesConverged = applied > 0 && sameReplicas(reps)
	if !sum.NodesConverged {
		det.Problems = append(det.Problems, fmt.Sprintf("state hashes differ or indexes never matched: %v (applied %d)", det.Hashes, applied))
	}
	// Every run, from the replicas that hold it (in a sharded cluster of
	// four nodes a node holds three shards of four).
	jobs := map[engine.JobID]*JobHistory{}
	for i := len(reps) - 1; i >= 0; i-- {
		maps.Copy(jobs, reps[i].ByID)
	}
	lost := Lost(acks, jobs)
	sum.Lost = len(lost)
	det.Problems = append(det.Problems, lost...)
	for _, a := range acks {
		if jh := jobs[a.Job]; jh != nil && jh.Job.Status.Terminal() {
			sum.WorkflowsCompleted++
			if jh.Job.Status == engine.StatusFailed {
				sum.WorkflowsFailed++
				det.Problems = append(det.Problems, fmt.Sprintf("%s (job %d) ended Failed", a.WorkflowID, a.Job))
			}
		}
	}
	if err := writeFaults(filepath.Join(logs, "faults.jsonl"), flog.all()); err != nil {
		o.say("could not keep the faults: %v", err)
	}
	sum.ReexecutionsAfterCommit, sum.Linearizable = checkLogs(&det, logs, jobs, flog.all(), end)
	checkResources(&sum, &det, logs, flog.all(), end, cl.shards)
	if cl.shards > 0 {
		var problems []string
		sum.CrossShardChildren, sum.DeliveriesDuplicated, sum.DeliveriesLost, problems = CrossShardChildren(acks, jobs)
		det.Problems = append(det.Problems, problems...)
		var dup, lost int
		sum.CrossShardSignals, dup, lost, problems = CrossShardSignals(acks, jobs)
		sum.DeliveriesDuplicated += dup
		sum.DeliveriesLost += lost
		det.Problems = append(det.Problems, problems...)
		// A pending entry is in every replica of its shard: counted once.
		pending := map[int]int{}
		for _, rep := range reps {
			for k, n := range rep.Pending {
				pending[k] = max(pending[k], n)
			}
		}
		for _, n := range pending {
			sum.DeliveriesPending += n
		}
		var dirs []string
		for _, n := range cl.nodes {
			dirs = append(dirs, n.dir)
		}
		for _, err := range VerifyAcrossShards(dirs, cl.shards) {
			sum.InvariantViolations++
			det.Problems = append(det.Problems, "across shards: "+err.Error())
		}
	}
	sum.DurationS = time.Since(began).Seconds()
	ok = sum.OK()
	return sum, det, nil
}

// sameReplicas reports whether every replica of each group holds the same
// state: the one group's on every node, or each shard's on the nodes that
// hold it.
func sameReplicas(reps []*StoreReport) bool {
	if reps[0].ShardHashes == nil {
		for _, r := range reps[1:] {
			if r.Hash != reps[0].Hash {
				return false
			}
		}
		return true
	}
	seen := map[int]string{}
	for _, r := range reps {
		for k, h := range r.ShardHashes {
			if first, ok := seen[k]; ok && first != h {
				return false
			}
			seen[k] = h
		}
	}
	return true
}

// checkLogs runs the checkers over the workers' logs and the histories.
func checkLogs(det *Details, logs string, jobs map[engine.JobID]*JobHistory, faults []Fault, end int64) (int, bool) {
	execs, err := ReadExecutions(logs)
	if err != nil {
		det.Problems = append(det.Problems, err.Error())
	}
	rx := CheckReexecutions(execs, CommitTimes(jobs), faults)
	det.Executions, det.Reexecuted, det.Unexplained = rx.Executions, rx.Reexecuted, rx.Unexplained
	det.Problems = append(det.Problems, rx.AfterCommit...)
	det.Problems = append(det.Problems, rx.Unexplained...)
	ops, err := ReadOps(logs, jobs, end)
	if err != nil {
		det.Problems = append(det.Problems, err.Error())
		return len(rx.AfterCommit), false
	}
	lin, msg, err := CheckLinearizable(ops, filepath.Join(logs, "linearizability.html"), 5*time.Minute)
	if msg != "" {
		det.Problems = append(det.Problems, msg)
	}
	if err != nil {
		det.Problems = append(det.Problems, err.Error())
	}
	return len(rx.AfterCommit), lin
}

// quiesceAfterDrain covers the chaos workers' lease (3 s), a new leader's
// failover grace (5 s, heddle server's default) and a margin.
const quiesceAfterDrain = 10 * time.Second

// waitConverged waits until the three nodes report the same applied index
// on two reads in a row, and returns it (0 if they never did).
//
// In a sharded cluster the index compared is each shard's, and the one
// returned their sum: every shard's replicas must agree.
func (c *cluster) waitConverged(ctx context.Context, d time.Duration) uint64 {
	deadline := time.Now().Add(d)
	var last []uint64
	for time.Now().Before(deadline) && ctx.Err() == nil {
		idx := c.appliedIndexes(ctx)
		same := idx != nil
		if same && slices.Equal(idx, last) {
			var sum uint64
			for _, x := range idx {
				sum += x
			}
			return sum
		}
		if same {
			last = idx
		} else {
			last = nil
		}
		sleepCtx(ctx, 500*time.Millisecond)
	}
	return 0
}

// appliedIndexes is what the nodes' statuses say they applied: the one
// group's index, or in a sharded cluster each shard's in shard order, when
// every replica of it reports the same (nil while they differ, a node does
// not answer, or a shard has applied nothing).
func (c *cluster) appliedIndexes(ctx context.Context) []uint64 {
	n := max(c.shards, 1)
	out := make([]uint64, n)
	for _, node := range c.nodes {
		st, err := c.status(ctx, node)
		if err != nil {
			return nil
		}
		if c.shards == 0 {
			st.Shards = []engine.ShardStatus{{Shard: 0, AppliedIndex: st.AppliedIndex}}
		}
		for _, s := range st.Shards {
			switch {
			case s.Shard < 0 || s.Shard >= n:
				return nil
			case out[s.Shard] == 0:
				out[s.Shard] = s.AppliedIndex
			case out[s.Shard] != s.AppliedIndex:
				return nil
			}
		}
	}
	if slices.Contains(out, 0) {
		return nil
	}
	return out
}

// writeFaults keeps the faults next to the other logs, one JSON line each,
// so a failing run can be read against them.
func writeFaults(path string, faults []Fault) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, x := range faults {
		if err := enc.Encode(x); err != nil {
			return errors.Join(err, f.Close())
		}
	}
	return f.Close()
}
