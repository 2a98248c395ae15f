package main

// This file is "heddle verify": the operator's check of what stopped
// nodes stored, against the invariants the engine keeps (machine.Verify:
// each run's history, record and indexes agree, leases and resources add
// up), each shard's replica against the others, and, for a whole sharded
// cluster, the links between shards (machine.VerifyAcrossShards: every
// child, signal and delivery between shards landed once, or waits in its
// source's outbox).

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/raftfsm"
	"github.com/heddlewf/heddle/storage"
	"github.com/spf13/cobra"
)

// verifyExitUnchecked is verify's exit status when it could not check
// what it was given (1 says it found problems).
const verifyExitUnchecked = 3

// defaultVerifyMax is how many problems verify lists per database (and
// across shards) unless --max says otherwise.
const defaultVerifyMax = 20

func newVerifyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify --dir DIR",
		Short: "check what stopped nodes stored against the engine's invariants, replica by replica and across shards",
		Long: "Opens each state database under DIR, which the processes that own it must have left (stop\n" +
			"them first: a running node holds its databases locked), and checks it against the\n" +
			"invariants the engine keeps: each run's history is legal and agrees with its record and\n" +
			"indexes, steps, leases and resource units add up, and a shard holds only its own runs.\n" +
			"DIR is any of:\n" +
			"  - the database of an embedded engine or of \"heddle dev\";\n" +
			"  - a server node's directory (of a cluster of one Raft group, or of a sharded cluster);\n" +
			"  - a directory of node directories, as \"heddle cluster up --dir\" makes.\n" +
			"For several nodes it also compares the replicas of each shard that applied the same Raft\n" +
			"index (they must hold the same keys and values), and, once every shard of a sharded\n" +
			"cluster is there, checks the links between shards (children, signals, cancels and\n" +
			"deliveries land once, or wait in their source's outbox), reading each shard from its\n" +
			"replica that applied the most. A replica that trails its leader is checked alone: what it\n" +
			"lacks is not a problem. It writes nothing: a database whose process was killed, which\n" +
			"only a recovery that writes can open, is checked in a temporary copy.\n" +
			"Exit status 0: no problem found; 1: problems found; 3: it could not check (a directory it\n" +
			"could not read or open).",
		Args: noArgs,
	}
	fs := cmd.Flags()
	var dir string
	var max int
	fs.StringVar(&dir, "dir", "", "the `directory` to check (required): a database, a node's directory, or a directory of nodes' directories")
	fs.IntVar(&max, "max", defaultVerifyMax, "the most problems to list for each database and across shards (`count`; 0: all)")
	format := addOutputFlags(fs)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if dir == "" {
			return usagef("--dir is required")
		}
		if max < 0 {
			return usagef("--max %d: want 0 (all) or more", max)
		}
		rep, err := verifyDir(dir, max)
		if err != nil {
			// Its own status: a script tells "could not check" from
			// "found problems" (1).
			_, _ = fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", cmd.CommandPath(), err)
			return exitError{code: verifyExitUnchecked}
		}
		if *format != formatTable {
			err = printDoc(cmd.OutOrStdout(), *format, rep)
		} else {
			err = printVerifyReport(cmd.OutOrStdout(), rep)
		}
		if err != nil {
			return err
		}
		if rep.Problems > 0 {
			return exitError{code: 1}
		}
		return nil
	}
	return cmd
}

// verifyReport is what verify found.
type verifyReport struct {
	Databases []verifiedDB `json:"databases"`
	// AcrossShards is the check between the shards of a sharded cluster;
	// nil when DIR holds no sharded node.
	AcrossShards *acrossShards `json:"across_shards,omitempty"`
	// Problems counts every problem found, listed or not.
	Problems int `json:"problems"`
}

// verifiedDB is one state database and what its check found.
type verifiedDB struct {
	// Node is the node directory's name, when DIR holds several.
	Node string `json:"node,omitempty"`
	// Shard is the shard of a sharded node's replica; nil otherwise.
	Shard *int `json:"shard,omitempty"`
	// Path is the database's directory and, for a sharded node's replica,
	// the keyspace that holds it.
	Path    string `json:"path"`
	Applied uint64 `json:"applied_index,omitempty"`
	Keys    int    `json:"keys"`
	// Hash is a SHA-256 over every key and value in key order: replicas
	// that applied the same index have the same.
	Hash     string   `json:"hash"`
	Problems []string `json:"problems"`
	// Found counts the problems, listed or not.
	Found int `json:"problems_found"`
	state raftfsm.ReplicaState
}

// acrossShards is the check between shards.
type acrossShards struct {
	// Checked is false when some shard has no replica under DIR.
	Checked bool `json:"checked"`
	// Missing lists those shards.
	Missing  []int    `json:"missing_shards,omitempty"`
	Problems []string `json:"problems"`
	Found    int      `json:"problems_found"`
}

// verifyDir finds the databases under dir and checks them.
func verifyDir(dir string, max int) (_ *verifyReport, err error) {
	dbs := &databases{}
	defer func() { err = errors.Join(err, dbs.close()) }()
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	rep := &verifyReport{Databases: []verifiedDB{}}
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err == nil {
		db, err := verifyDatabase(dbs, raftfsm.ReplicaState{Dir: dir}, engine.ShardLayout{}, max)
		if err != nil {
			return nil, err
		}
		rep.add(db)
		return rep, nil
	}
	nodes := map[string]*raftfsm.NodeDir{}
	if nd, err := raftfsm.ReadNodeDir(dir); err == nil {
		if layout, owner, ok := shardOfDir(dir); ok && nd.Placement == nil {
			// One shard's directory of a sharded node: its replica, as
			// that shard, wherever the node keeps its state.
			st, ok := owner.States[layout.Index]
			if !ok {
				return nil, fmt.Errorf("%s holds no state of shard %d", dir, layout.Index)
			}
			db, err := verifyDatabase(dbs, st, layout, max)
			if err != nil {
				return nil, err
			}
			db.Shard = &layout.Index
			rep.add(db)
			return rep, nil
		}
		nodes[""] = nd
	} else if !errors.Is(err, raftfsm.ErrNotNodeDir) {
		return nil, err
	} else {
		if filepath.Base(filepath.Clean(dir)) == "shards" {
			if _, err := raftfsm.ReadNodeDir(filepath.Dir(filepath.Clean(dir))); err == nil {
				return nil, fmt.Errorf("%s holds a sharded node's shard replicas: name the node's directory (%s) or one shard's (%s)",
					dir, filepath.Dir(filepath.Clean(dir)), filepath.Join(dir, "0000"))
			}
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			nd, err := raftfsm.ReadNodeDir(filepath.Join(dir, e.Name()))
			if errors.Is(err, raftfsm.ErrNotNodeDir) {
				continue
			}
			if err != nil {
				return nil, err
			}
			nodes[e.Name()] = nd
		}
		if len(nodes) == 0 {
			return nil, fmt.Errorf("%s holds no heddle data: it is neither a database (no MANIFEST), a node's directory, nor a directory of nodes' directories", dir)
		}
	}
	return verifyNodes(dbs, rep, nodes, max)
}

// shardOfDir reports whether dir is the directory of one shard's replica
// of a sharded node (<node>/shards/NNNN), its layout and the node's
// directory.
func shardOfDir(dir string) (engine.ShardLayout, *raftfsm.NodeDir, bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return engine.ShardLayout{}, nil, false
	}
	parent := filepath.Dir(abs)
	k, err := strconv.Atoi(filepath.Base(abs))
	if err != nil || filepath.Base(parent) != "shards" {
		return engine.ShardLayout{}, nil, false
	}
	owner, err := raftfsm.ReadNodeDir(filepath.Dir(parent))
	if err != nil || owner.Placement == nil || k < 0 || k >= owner.Placement.Shards {
		return engine.ShardLayout{}, nil, false
	}
	return engine.ShardLayout{Index: k, Count: owner.Placement.Shards}, owner, true
}

// verifyNodes checks the databases of nodes, by name, then their replicas
// against each other and, for a whole sharded cluster, the shards against
// each other.
func verifyNodes(dbs *databases, rep *verifyReport, nodes map[string]*raftfsm.NodeDir, max int) (*verifyReport, error) {
	names := make([]string, 0, len(nodes))
	for name := range nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	shards := 0
	for _, name := range names {
		if p := nodes[name].Placement; p != nil {
			if shards != 0 && p.Shards != shards {
				return nil, fmt.Errorf("the nodes' directories hold clusters of %d and of %d shards: verify one cluster at a time", shards, p.Shards)
			}
			shards = p.Shards
		} else if shards != 0 {
			return nil, fmt.Errorf("%s is a node of one Raft group beside nodes of a sharded cluster: verify one cluster at a time", name)
		}
	}
	best := map[int]verifiedDB{} // each shard's replica that applied the most
	for _, name := range names {
		nd := nodes[name]
		for _, k := range nd.Shards() {
			layout := engine.ShardLayout{}
			if shards > 0 {
				layout = engine.ShardLayout{Index: k, Count: shards}
			}
			db, err := verifyDatabase(dbs, nd.States[k], layout, max)
			if err != nil {
				return nil, err
			}
			db.Node = name
			if shards > 0 {
				db.Shard = &k
			}
			if b, ok := best[k]; !ok || db.Applied > b.Applied {
				best[k] = *db
			}
			rep.add(db)
		}
	}
	rep.compareReplicas()
	if shards == 0 {
		return rep, nil
	}
	across := &acrossShards{Problems: []string{}}
	for k := range shards {
		if _, ok := best[k]; !ok {
			across.Missing = append(across.Missing, k)
		}
	}
	if len(across.Missing) == 0 {
		across.Checked = true
		view := func(k int, fn func(r *storage.Reader) error) error {
			return dbs.view(best[k].state, fn)
		}
		for _, err := range machine.VerifyAcrossShards(shards, view, max) {
			across.Found++
			across.Problems = append(across.Problems, err.Error())
		}
	}
	rep.AcrossShards = across
	rep.Problems += across.Found
	return rep, nil
}

func (rep *verifyReport) add(db *verifiedDB) {
	rep.Databases = append(rep.Databases, *db)
	rep.Problems += db.Found
}

// compareReplicas adds a problem to each replica whose contents differ
// from another replica of its shard that applied the same index.
func (rep *verifyReport) compareReplicas() {
	for i := range rep.Databases {
		a := &rep.Databases[i]
		for j := range i {
			b := &rep.Databases[j]
			if a.shard() != b.shard() || a.Applied != b.Applied || a.Hash == b.Hash {
				continue
			}
			a.Found++
			a.Problems = append(a.Problems, fmt.Sprintf("holds other keys or values than the replica of %s, which applied the same index %d", b.Node, a.Applied))
			rep.Problems++
			break
		}
	}
}

func (db *verifiedDB) shard() int {
	if db.Shard == nil {
		return 0
	}
	return *db.Shard
}

// verifyDatabase checks the replica state st as the shard layout says
// (the zero layout: a database of one group) and hashes it.
func verifyDatabase(dbs *databases, st raftfsm.ReplicaState, layout engine.ShardLayout, max int) (*verifiedDB, error) {
	db := &verifiedDB{Path: st.String(), Problems: []string{}, state: st}
	err := dbs.view(st, func(r *storage.Reader) error {
		for _, err := range machine.VerifyShard(r, 0, layout) {
			db.Found++
			if max == 0 || len(db.Problems) < max {
				db.Problems = append(db.Problems, err.Error())
			}
		}
		b, err := r.Get(storage.KeyAppliedIndex)
		switch {
		case err == nil:
			if db.Applied, err = storage.ParseU64(b); err != nil {
				return err
			}
		case !errors.Is(err, storage.ErrNotFound):
			return err
		}
		h := sha256.New()
		var n [8]byte
		err = r.Scan(nil, nil, true, func(k, v []byte) (bool, error) {
			// A hash's Write never fails.
			binary.BigEndian.PutUint64(n[:], uint64(len(k)))
			_, _ = h.Write(n[:])
			_, _ = h.Write(k)
			binary.BigEndian.PutUint64(n[:], uint64(len(v)))
			_, _ = h.Write(n[:])
			_, _ = h.Write(v)
			db.Keys++
			return true, nil
		})
		db.Hash = hex.EncodeToString(h.Sum(nil))
		return err
	})
	if err != nil {
		return nil, err
	}
	return db, nil
}

// databases opens the databases a verify reads, each directory once
// (read-only, or a copy), and closes them at the end: a sharded node's
// store holds every replica's state, and a store whose process was killed
// would otherwise be copied once for each.
type databases struct {
	open map[string]*storage.DB
	tmp  []string // copies to remove
}

// view runs fn over one consistent read of st's keyspace. A database
// whose process was killed needs a recovery to open, which writes: its
// copy is opened instead, in a temporary directory removed at close, so
// the check leaves its input as it found it.
func (d *databases) view(st raftfsm.ReplicaState, fn func(r *storage.Reader) error) error {
	db, err := d.get(st.Dir)
	if err != nil {
		return err
	}
	if st.Keyspace != nil {
		db = db.Keyspace(st.Keyspace)
	}
	return db.View(fn)
}

func (d *databases) get(path string) (*storage.DB, error) {
	if db := d.open[path]; db != nil {
		return db, nil
	}
	if _, err := os.Stat(filepath.Join(path, "MANIFEST")); err != nil {
		return nil, fmt.Errorf("%s holds no database: %w", path, err)
	}
	db, err := storage.Open(storage.Options{Dir: path, ReadOnly: true})
	if errors.Is(err, storage.ErrNeedsRecovery) {
		tmp, terr := os.MkdirTemp("", "heddle-verify-")
		if terr != nil {
			return nil, terr
		}
		d.tmp = append(d.tmp, tmp)
		if terr := os.CopyFS(tmp, os.DirFS(path)); terr != nil {
			return nil, fmt.Errorf("copying %s, which was not closed cleanly, to check it: %w", path, terr)
		}
		db, err = storage.Open(storage.Options{Dir: tmp, NoSync: true, ReserveBytes: -1})
	}
	if err != nil {
		return nil, fmt.Errorf("opening %s (is a process still running on it? stop it first): %w", path, err)
	}
	if d.open == nil {
		d.open = map[string]*storage.DB{}
	}
	d.open[path] = db
	return db, nil
}

// close closes every database opened and removes the copies.
func (d *databases) close() error {
	var errs []error
	for _, db := range d.open {
		errs = append(errs, db.Close())
	}
	for _, tmp := range d.tmp {
		errs = append(errs, os.RemoveAll(tmp))
	}
	d.open, d.tmp = nil, nil
	return errors.Join(errs...)
}

// printVerifyReport prints rep as a table of the databases, then every
// problem listed.
func printVerifyReport(w io.Writer, rep *verifyReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := newPrinter(tw)
	p.printf("NODE\tSHARD\tAPPLIED\tKEYS\tPROBLEMS\tDATABASE\n")
	for _, db := range rep.Databases {
		node, shard, applied := db.Node, "-", "-"
		if node == "" {
			node = "-"
		}
		if db.Shard != nil {
			shard = strconv.Itoa(*db.Shard)
		}
		if db.Applied > 0 {
			applied = strconv.FormatUint(db.Applied, 10)
		}
		p.printf("%s\t%s\t%s\t%d\t%d\t%s\n", node, shard, applied, db.Keys, db.Found, db.Path)
	}
	if err := errors.Join(p.err(), tw.Flush()); err != nil {
		return err
	}
	p = newPrinter(w)
	if a := rep.AcrossShards; a != nil {
		if a.Checked {
			p.printf("across shards: %d problems\n", a.Found)
		} else {
			p.printf("across shards: not checked: no directory holds a replica of shard(s) %v\n", a.Missing)
		}
	}
	for _, db := range rep.Databases {
		where := db.Path
		if db.Node != "" {
			where = db.Node
			if db.Shard != nil {
				where += fmt.Sprintf(" shard %d", *db.Shard)
			}
		}
		for _, pr := range db.Problems {
			p.printf("%s: %s\n", where, pr)
		}
		if more := db.Found - len(db.Problems); more > 0 {
			p.printf("%s: %d more (--max)\n", where, more)
		}
	}
	if a := rep.AcrossShards; a != nil {
		for _, pr := range a.Problems {
			p.printf("across shards: %s\n", pr)
		}
	}
	if rep.Problems == 0 {
		p.printf("no problems found\n")
	} else {
		p.printf("%d problems found\n", rep.Problems)
	}
	return p.err()
}
