package raftfsm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/heddlewf/heddle/storage"
)

// A restore (docs/operations.md, "Backing up a sharded cluster") makes the
// directories of a new cluster's nodes from a backup, before they first
// start. For each shard a node holds, it writes the backup's copy of the
// shard as the newest Raft snapshot of the shard's group: at index the
// copy's applied index, term 1, and the new cluster's replicas of the
// shard as the group's configuration. A node that starts finds the
// snapshot, so it does not bootstrap the group (it has state), loads the
// snapshot into its state database (Node.Open restores a snapshot newer
// than the state), and the group's log goes on after it: every replica
// starts from the same state, and a replica that joins later (a move) gets
// the leader's snapshot, never a log that starts from nothing. The
// metadata group starts as a new cluster's does, with the placement the
// new nodes make.
//
// The copy's delivery hold, under which the backup was taken, is removed
// from the restored state, and so are the HTTP addresses the old nodes
// recorded (each new leader records its own): the restored cluster
// delivers the entries pending in the backup (the targets' delivered
// records answer a repeat with the first outcome), so they land once.

// RestoreConfig says which node's directory to make from a backup.
type RestoreConfig struct {
	// From is the backup's directory.
	From string
	// Dir is the node's directory; it must not exist or be empty.
	Dir string
	// ID is the node's id, one of Peers.
	ID string
	// Peers are the new cluster's nodes, as every node of it is started
	// with (HostConfig.Peers), and Replicas each shard's replicas (0:
	// min(3, len(Peers))).
	Peers    []PlacementNode
	Replicas int
	// Storage are the options of the temporary database a shard's copy is
	// loaded into (its Dir is set here).
	Storage storage.Options
}

// RestoreNode makes node cfg.ID's directory of a new cluster from the
// backup in cfg.From, which it checks whole first (ReadBackup). Run it for
// every node of the new cluster, with the same Peers and Replicas, then
// start the nodes with those Peers (OpenHost, heddle server, heddle
// cluster up). It returns the backup's manifest.
func RestoreNode(cfg RestoreConfig) (*BackupManifest, error) {
	m, err := ReadBackup(cfg.From)
	if err != nil {
		return nil, err
	}
	p, err := NewPlacement(cfg.Peers, m.Shards, cfg.Replicas)
	if err != nil {
		return nil, err
	}
	if _, ok := p.node(cfg.ID); !ok {
		return nil, fmt.Errorf("%w: node %q is not one of the peers %v", ErrConfig, cfg.ID, nodeIDs(&p))
	}
	if err := emptyDir(cfg.Dir); err != nil {
		return nil, err
	}
	for _, k := range p.ShardsOf(cfg.ID) {
		var servers []raft.Server
		for _, id := range p.Groups[k].Replicas {
			n, _ := p.node(id)
			servers = append(servers, raft.Server{ID: raft.ServerID(id), Address: raft.ServerAddress(n.RaftAddr), Suffrage: raft.Voter})
		}
		shardDir := filepath.Join(cfg.Dir, "shards", fmt.Sprintf("%04d", k))
		if err := seedShard(filepath.Join(cfg.From, m.Files[k].File), shardDir, m.Files[k], servers, cfg.Storage); err != nil {
			return nil, fmt.Errorf("raftfsm: restoring shard %d: %w", k, err)
		}
	}
	// Last: a directory with a placement is a node's, which a restore
	// that failed before this point does not leave behind.
	if err := writePlacement(cfg.Dir, &p); err != nil {
		return nil, err
	}
	return m, nil
}

// seedShard loads the shard's copy into a temporary database, removes what
// belongs to the old cluster (the hold, the nodes' addresses), and writes
// the result as the shard group's Raft snapshot under shardDir/raft.
func seedShard(file, shardDir string, s BackupShard, servers []raft.Server, opts storage.Options) (err error) {
	tmp := filepath.Join(shardDir, "restore.tmp")
	defer func() { err = errors.Join(err, os.RemoveAll(tmp)) }()
	opts.Dir = tmp
	opts.NoSync = true // the snapshot written from it is synced
	opts.InMemory = false
	db, err := storage.Open(opts)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	f, err := os.Open(file)
	if err != nil {
		return &BackupError{File: file, Reason: err.Error()}
	}
	info, err := db.LoadSnapshot(f)
	_ = f.Close() // read only
	if err != nil {
		return &BackupError{File: file, Reason: err.Error()}
	}
	if info.AppliedIndex != s.AppliedIndex {
		return &BackupError{File: file, Reason: fmt.Sprintf("holds index %d, the manifest says %d", info.AppliedIndex, s.AppliedIndex)}
	}
	b := db.NewBatch()
	tx := b.Begin()
	tx.Delete(keyHold)
	var nodes [][]byte
	err = tx.Scan([]byte(keyNodePrefix), nil, false, func(k, _ []byte) (bool, error) {
		nodes = append(nodes, slices.Clone(k))
		return true, nil
	})
	for _, k := range nodes {
		tx.Delete(k)
	}
	if err == nil {
		err = b.Add(tx)
	}
	if err == nil {
		err = b.Commit()
	} else {
		b.Discard()
	}
	if err != nil {
		return err
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(shardDir, "raft"), 2, hclog.NewNullLogger())
	if err != nil {
		return err
	}
	conf := raft.Configuration{Servers: servers}
	sink, err := snaps.Create(raft.SnapshotVersionMax, info.AppliedIndex, 1, conf, info.AppliedIndex, peerEncoder{})
	if err != nil {
		return err
	}
	snap := db.OpenSnapshot()
	defer snap.Close()
	if _, err := snap.Stream(sink); err != nil {
		return errors.Join(err, sink.Cancel())
	}
	return sink.Close()
}

// peerEncoder encodes a snapshot's peers (the old format hashicorp/raft
// still writes beside the configuration) as NetworkTransport does.
type peerEncoder struct{ raft.Transport }

func (peerEncoder) EncodePeer(_ raft.ServerID, addr raft.ServerAddress) []byte { return []byte(addr) }
