package raftfsm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// NodeDir is what a stopped node's directory holds, for the tools that
// read it offline (heddle verify, heddle repair): the state of each Raft
// group's replica it holds. It reads the directory's layout only, never a
// database.
type NodeDir struct {
	// Placement is a sharded node's placement file (the newest placement
	// it applied); nil for a node of one Raft group.
	Placement *Placement
	// States are the live states of the replicas the directory holds, by
	// shard; a node of one group holds one, as shard 0.
	States map[int]ReplicaState
	// Store is a sharded node's state store, the database that holds its
	// replicas' states ("" for a node of one group, or a sharded node of
	// the layout before the store that has not started since).
	Store string
}

// ReplicaState is where one replica's state is: a database directory
// and, in it, the keyspace that holds the replica's keys (nil: the whole
// database, a node of one group's). Open the directory with storage.Open
// and read through DB.Keyspace.
type ReplicaState struct {
	Dir      string
	Keyspace []byte
}

// String names the state for people: the directory, followed by the
// keyspace's prefix in hex and brackets when there is one (no spaces, so
// that it stays one column of a table).
func (s ReplicaState) String() string {
	if s.Keyspace == nil {
		return s.Dir
	}
	return fmt.Sprintf("%s[%x]", s.Dir, s.Keyspace)
}

// Shards returns the shards whose replicas the directory holds, in order.
func (d *NodeDir) Shards() []int {
	out := make([]int, 0, len(d.States))
	for k := range d.States {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// ErrNotNodeDir: a directory is no node's: it has neither a placement
// file and shards (a sharded node) nor raft/ and state/ (a node of one
// group).
var ErrNotNodeDir = errors.New("raftfsm: not a node's directory")

// ReadNodeDir reads the layout of the node directory dir (see
// docs/sharding.md, "A node's directory"). The node must not run: its
// databases are the running node's to change.
func ReadNodeDir(dir string) (*NodeDir, error) {
	b, err := os.ReadFile(filepath.Join(dir, placementFile))
	switch {
	case err == nil:
		p, err := decodePlacement(b)
		if err != nil {
			return nil, fmt.Errorf("raftfsm: %s: %w", filepath.Join(dir, placementFile), err)
		}
		d := &NodeDir{Placement: p, States: map[int]ReplicaState{}}
		var gens map[uint32]uint32
		if _, err := os.Stat(filepath.Join(dir, "state")); err == nil {
			if d.Store, err = LiveStateDir(filepath.Join(dir, "state")); err != nil {
				return nil, err
			}
			if gens, err = readGenerations(filepath.Join(dir, "state")); err != nil {
				return nil, err
			}
		}
		entries, err := os.ReadDir(filepath.Join(dir, "shards"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("raftfsm: %w", err)
		}
		for _, e := range entries {
			k, err := strconv.Atoi(e.Name())
			if err != nil || len(e.Name()) != 4 || k < 0 || k >= p.Shards || !e.IsDir() {
				return nil, fmt.Errorf("raftfsm: %s holds %q, which names none of the cluster's %d shards",
					filepath.Join(dir, "shards"), e.Name(), p.Shards)
			}
			// A replica not moved into the store yet (nodeStore.moveLegacy)
			// is still in a directory of its own.
			legacy := filepath.Join(dir, "shards", e.Name(), "state")
			if _, moved := gens[uint32(k)]; !moved && fileExists(legacy) || d.Store == "" {
				live, err := LiveStateDir(legacy)
				if err != nil {
					return nil, err
				}
				d.States[k] = ReplicaState{Dir: live}
				continue
			}
			d.States[k] = ReplicaState{Dir: d.Store, Keyspace: keyspacePrefix(uint32(k), gens[uint32(k)])}
		}
		return d, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("raftfsm: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "raft")); err != nil {
		return nil, fmt.Errorf("%w: %s holds neither a placement file nor raft/", ErrNotNodeDir, dir)
	}
	state, err := LiveStateDir(filepath.Join(dir, "state"))
	if err != nil {
		return nil, err
	}
	return &NodeDir{States: map[int]ReplicaState{0: {Dir: state}}}, nil
}

// LiveStateDir returns the live database of a replica's state/ directory:
// the generation its CURRENT file names, or the first while there is no
// CURRENT (no snapshot was ever restored into it).
func LiveStateDir(state string) (string, error) {
	b, err := os.ReadFile(filepath.Join(state, currentFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return filepath.Join(state, dataName(0)), nil
	case err != nil:
		return "", fmt.Errorf("raftfsm: %w", err)
	}
	name := strings.TrimSpace(string(b))
	if _, ok := parseDataName(name); !ok {
		return "", fmt.Errorf("raftfsm: %s names %q, not a data directory", filepath.Join(state, currentFile), name)
	}
	return filepath.Join(state, name), nil
}
