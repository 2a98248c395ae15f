package chaos

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/heddlewf/heddle/engine"

	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/raftfsm"
	"github.com/heddlewf/heddle/storage"
)

// JobHistory is one job's record and its whole history.
type JobHistory struct {
	Job    *engine.Job
	Events []engine.Event
}

// StoreReport is what the checkers read from one stopped node's state.
type StoreReport struct {
	Jobs       map[string]*JobHistory // by workflow id: its newest run
	ByID       map[engine.JobID]*JobHistory
	Violations []error // machine.Verify's findings
	Hash       string  // SHA-256 over every key and value, in key order
	Keys       int
	// Pending counts the outbox entries not yet delivered, by shard (a
	// sharded node's).
	Pending map[int]int
	// ShardHashes are the hashes of the shards a sharded node holds, by
	// shard (nil for a node of one group).
	ShardHashes map[int]string
}

// statePath returns the live state database of a node directory: the one
// <dir>/state/CURRENT names, data-000000 while there is no CURRENT yet, or
// dir itself for an embedded engine's database (no state/ at all).
func statePath(dir string) (string, error) {
	state := filepath.Join(dir, "state")
	if _, err := os.Stat(state); os.IsNotExist(err) {
		return dir, nil
	}
	b, err := os.ReadFile(filepath.Join(state, "CURRENT"))
	if os.IsNotExist(err) {
		return filepath.Join(state, "data-000000"), nil
	}
	if err != nil {
		return "", err
	}
	return filepath.Join(state, strings.TrimSpace(string(b))), nil
}

// ReadStore opens the state database of a node directory whose process
// has exited, verifies it, hashes it and loads every job's history.
func ReadStore(dir string) (*StoreReport, error) {
	path, err := statePath(dir)
	if err != nil {
		return nil, fmt.Errorf("chaos: state of %s: %w", dir, err)
	}
	return readStore(raftfsm.ReplicaState{Dir: path}, engine.ShardLayout{})
}

// ReadShardedNode reads every shard a sharded node's directory holds (its
// shards/NNNN directories) as ReadStore reads one group's, each verified
// as its shard (machine.VerifyShard), and joins them: the jobs of every
// shard (their ids are unique across shards), every shard's violations
// named by shard, each shard's hash (ShardHashes), and a hash over them in
// shard order.
func ReadShardedNode(dir string, shards int) (*StoreReport, error) {
	all := &StoreReport{Jobs: map[string]*JobHistory{}, ByID: map[engine.JobID]*JobHistory{}, ShardHashes: map[int]string{}}
	h := sha256.New()
	nd, err := raftfsm.ReadNodeDir(dir)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	for k := range shards {
		st, ok := nd.States[k]
		if !ok {
			continue // no replica of this shard here
		}
		rep, err := readStore(st, engine.ShardLayout{Index: k, Count: shards})
		if err != nil {
			return nil, err
		}
		all.ShardHashes[k] = rep.Hash
		if all.Pending == nil {
			all.Pending = map[int]int{}
		}
		all.Pending[k] = rep.Pending[k]
		// A hash's Write never fails.
		_, _ = fmt.Fprintf(h, "shard %d %s\n", k, rep.Hash)
		all.Keys += rep.Keys
		for _, v := range rep.Violations {
			all.Violations = append(all.Violations, fmt.Errorf("shard %d: %w", k, v))
		}
		maps.Copy(all.ByID, rep.ByID)
		maps.Copy(all.Jobs, rep.Jobs) // a workflow id lives on one shard
	}
	all.Hash = hex.EncodeToString(h.Sum(nil))
	return all, nil
}

// readStore is ReadStore of one replica's state st, of one shard of layout
// (unsharded: the zero layout).
func readStore(st raftfsm.ReplicaState, layout engine.ShardLayout) (_ *StoreReport, err error) {
	whole, err := storage.Open(storage.Options{Dir: st.Dir})
	if err != nil {
		return nil, fmt.Errorf("chaos: opening the state %s: %w", st, err)
	}
	defer func() { err = errors.Join(err, whole.Close()) }()
	db := whole
	if st.Keyspace != nil {
		db = whole.Keyspace(st.Keyspace)
	}
	rep := &StoreReport{Jobs: map[string]*JobHistory{}, ByID: map[engine.JobID]*JobHistory{}}
	err = db.View(func(r *storage.Reader) error {
		rep.Violations = machine.VerifyShard(r, 100, layout)
		if layout.Sharded() {
			backlog, err := machine.OutboxBacklog(r, layout.Index)
			if err != nil {
				return err
			}
			rep.Pending = map[int]int{}
			for _, b := range backlog {
				rep.Pending[layout.Index] += int(b.Pending)
			}
		}
		h := sha256.New()
		var n [8]byte
		if err := r.Scan(nil, nil, true, func(k, v []byte) (bool, error) {
			binary.BigEndian.PutUint64(n[:], uint64(len(k)))
			h.Write(n[:])
			h.Write(k)
			binary.BigEndian.PutUint64(n[:], uint64(len(v)))
			h.Write(n[:])
			h.Write(v)
			rep.Keys++
			return true, nil
		}); err != nil {
			return err
		}
		rep.Hash = hex.EncodeToString(h.Sum(nil))
		var ids []engine.JobID
		if err := r.Scan(storage.JobPrefix, nil, false, func(k, _ []byte) (bool, error) {
			ids = append(ids, engine.JobID(binary.BigEndian.Uint64(k[len(k)-8:])))
			return true, nil
		}); err != nil {
			return err
		}
		for _, id := range ids {
			j, err := machine.ReadJob(r, id)
			if err != nil {
				return err
			}
			evs, _, err := machine.ReadHistory(r, id, 0, 0)
			if err != nil {
				return err
			}
			jh := &JobHistory{Job: j, Events: evs}
			rep.ByID[id] = jh
			if old := rep.Jobs[j.WorkflowID]; old == nil || old.Job.ID < id {
				rep.Jobs[j.WorkflowID] = jh
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("chaos: reading the state %s: %w", st, err)
	}
	return rep, nil
}

// DuplicateCommits counts the steps committed more than once in one job's
// history: a step commits once, so any count above zero is a bug.
func DuplicateCommits(jobs map[engine.JobID]*JobHistory) (int, []string) {
	dups := 0
	var where []string
	for id, jh := range jobs {
		seen := map[string]uint64{}
		for _, ev := range jh.Events {
			if !ev.Commit {
				continue
			}
			if first, ok := seen[ev.Step]; ok {
				dups++
				where = append(where, fmt.Sprintf("job %d step %q committed at seq %d and %d", id, ev.Step, first, ev.Seq))
				continue
			}
			seen[ev.Step] = ev.Seq
		}
	}
	return dups, where
}

// Ack is a start the engine acknowledged to the workload's client.
type Ack struct {
	WorkflowID string       `json:"wf"`
	Job        engine.JobID `json:"job"`
	// ChildID is the workflow id of the child the run starts (FlowInput),
	// "" for none.
	ChildID string `json:"child,omitempty"`
}

// Lost lists the acknowledged starts that are missing from the store or
// did not reach a terminal status.
func Lost(acks []Ack, jobs map[engine.JobID]*JobHistory) []string {
	var out []string
	for _, a := range acks {
		jh := jobs[a.Job]
		switch {
		case jh == nil:
			out = append(out, fmt.Sprintf("workflow %s (job %d) was acknowledged but is not stored", a.WorkflowID, a.Job))
		case jh.Job.WorkflowID != a.WorkflowID:
			out = append(out, fmt.Sprintf("job %d is workflow %s, but its start was acknowledged as %s", a.Job, jh.Job.WorkflowID, a.WorkflowID))
		case !jh.Job.Status.Terminal():
			out = append(out, fmt.Sprintf("workflow %s (job %d) is still %s", a.WorkflowID, a.Job, jh.Job.Status))
		}
	}
	return out
}

// CommitTimes maps each committed step's idempotency key (as the SDK forms
// it: workflow id/job id/step) to the time its commit event was stamped.
func CommitTimes(jobs map[engine.JobID]*JobHistory) map[string]int64 {
	out := map[string]int64{}
	for id, jh := range jobs {
		for _, ev := range jh.Events {
			if ev.Commit {
				out[fmt.Sprintf("%s/%d/%s", jh.Job.WorkflowID, id, ev.Step)] = ev.AtMS
			}
		}
	}
	return out
}

// CrossShardChildren checks the children the acknowledged runs started
// (Ack.ChildID) in jobs, the runs of every shard: each must exist once,
// as the child of its parent's step, and have ended. It returns how many
// children there were, the ones created more than once for one parent step
// (duplicated) and the ones missing or never ended (lost), with a line for
// each finding.
func CrossShardChildren(acks []Ack, jobs map[engine.JobID]*JobHistory) (children, duplicated, lost int, problems []string) {
	type step struct {
		parent engine.JobID
		name   string
	}
	of := map[step][]*engine.Job{}
	byWF := map[string][]*engine.Job{}
	for _, jh := range jobs {
		if jh.Job.ParentID != 0 {
			k := step{jh.Job.ParentID, jh.Job.ParentStep}
			of[k] = append(of[k], jh.Job)
			byWF[jh.Job.WorkflowID] = append(byWF[jh.Job.WorkflowID], jh.Job)
		}
	}
	for k, js := range of {
		if len(js) > 1 && jobs[k.parent] != nil {
			duplicated += len(js) - 1
			problems = append(problems, fmt.Sprintf("job %d step %q has %d children", k.parent, k.name, len(js)))
		}
	}
	for _, a := range acks {
		if a.ChildID == "" {
			continue
		}
		children++
		var mine []*engine.Job
		for _, j := range byWF[a.ChildID] {
			if j.ParentID == a.Job {
				mine = append(mine, j)
			}
		}
		switch {
		case len(mine) == 0:
			lost++
			problems = append(problems, fmt.Sprintf("workflow %s (job %d): its child %s was never created", a.WorkflowID, a.Job, a.ChildID))
		case !mine[len(mine)-1].Status.Terminal():
			lost++
			problems = append(problems, fmt.Sprintf("workflow %s (job %d): its child %s is still %s", a.WorkflowID, a.Job, a.ChildID, mine[len(mine)-1].Status))
		}
	}
	return children, duplicated, lost, problems
}

// CrossShardSignals checks the signals the children of the acknowledged
// runs (Ack.ChildID) sent their parents (ChildSignalName) in jobs, the
// runs of every shard: a parent run whose child ended holds the signal
// once, whether the parent ended or not. It returns how many signals
// there were, the ones received more than once (duplicated) and the ones
// a child sent that never arrived (lost), with a line for each finding.
func CrossShardSignals(acks []Ack, jobs map[engine.JobID]*JobHistory) (signals, duplicated, lost int, problems []string) {
	for _, a := range acks {
		if a.ChildID == "" {
			continue
		}
		p := jobs[a.Job]
		if p == nil {
			continue // a lost parent is counted with the runs
		}
		got := 0
		for _, ev := range p.Events {
			if ev.Type == engine.EventSignalReceived && ev.Name == ChildSignalName {
				got++
			}
		}
		sent := false
		for _, jh := range jobs {
			if jh.Job.ParentID == a.Job && jh.Job.WorkflowID == a.ChildID && jh.Job.Status == engine.StatusCompleted {
				sent = true // a completed child signalled first
			}
		}
		switch {
		case got > 1:
			signals++
			duplicated += got - 1
			problems = append(problems, fmt.Sprintf("workflow %s (job %d): its child's signal arrived %d times", a.WorkflowID, a.Job, got))
		case got == 1:
			signals++
		case sent:
			lost++
			problems = append(problems, fmt.Sprintf("workflow %s (job %d): its child %s completed, but its signal never arrived", a.WorkflowID, a.Job, a.ChildID))
		}
	}
	return signals, duplicated, lost, problems
}

// VerifyAcrossShards runs machine.VerifyAcrossShards over the stopped
// nodes' directories: each shard read from the first node that holds a
// replica of it (the replicas converged, which the run checks apart).
func VerifyAcrossShards(dirs []string, shards int) []error {
	view := func(k int, fn func(r *storage.Reader) error) (err error) {
		for _, dir := range dirs {
			nd, err := raftfsm.ReadNodeDir(dir)
			if err != nil {
				return fmt.Errorf("chaos: %w", err)
			}
			st, ok := nd.States[k]
			if !ok {
				continue
			}
			whole, err := storage.Open(storage.Options{Dir: st.Dir})
			if err != nil {
				return fmt.Errorf("chaos: opening shard %d of %s: %w", k, dir, err)
			}
			defer func() { err = errors.Join(err, whole.Close()) }()
			if st.Keyspace != nil {
				return whole.Keyspace(st.Keyspace).View(fn)
			}
			return whole.View(fn)
		}
		return fmt.Errorf("chaos: no node holds a replica of shard %d", k)
	}
	return machine.VerifyAcrossShards(shards, view, 100)
}
