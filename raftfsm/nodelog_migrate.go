package raftfsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	bolt "go.etcd.io/bbolt"
)

// Earlier versions kept a sharded node's node log in one bbolt file
// (layout 1): a
// top-level bucket boltNodeLogInfoBucket holding the layout's version
// under "version", and one top-level bucket per group, named "group-"
// and the group's number in 4 big-endian bytes, holding two buckets:
// "logs" (the big-endian index → the entry, in nodelog_codec.go's layout)
// and "stable" (Raft's stable keys → their values). openNodeLog moves
// such a file into segments, once, and removes it.
var (
	boltNodeLogInfoBucket = []byte("heddle-node-log")
	boltLogBucket         = []byte("logs")
	boltStableBucket      = []byte("stable")
)

// nodeLogLockTimeout bounds the wait for a bbolt file's lock: a second
// process opening the same directory fails with a clear error instead of
// waiting for ever.
const nodeLogLockTimeout = 2 * time.Second

// boltNodeLogVersion is the only layout a bbolt node log was written in.
const boltNodeLogVersion = 1

// readBoltNodeLog returns what the bbolt node log at path holds, as the
// records that hold it in a segment: every group's stable values, then
// its entries in index order.
func readBoltNodeLog(path string) ([]byte, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: nodeLogLockTimeout, ReadOnly: true})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("raftfsm: opening the node log %s: another process holds it (is another heddle node running in this directory?)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("raftfsm: opening the node log %s of an earlier version: %w", path, err)
	}
	var out []byte
	err = db.View(func(tx *bolt.Tx) error {
		info := tx.Bucket(boltNodeLogInfoBucket)
		if info == nil {
			return fmt.Errorf("%w: %s is a bbolt database but not a heddle node log", ErrConfig, path)
		}
		if v := info.Get([]byte("version")); len(v) != 1 || v[0] != boltNodeLogVersion {
			return fmt.Errorf("%w: the node log %s has layout version %v, this node reads %d", ErrConfig, path, v, boltNodeLogVersion)
		}
		return tx.ForEach(func(name []byte, top *bolt.Bucket) error {
			if string(name) == string(boltNodeLogInfoBucket) {
				return nil
			}
			if len(name) != len("group-")+4 || string(name[:len("group-")]) != "group-" {
				return fmt.Errorf("%w: the node log %s has a bucket %q, which is not a group's", ErrConfig, path, name)
			}
			g := binary.BigEndian.Uint32(name[len("group-"):])
			if b := top.Bucket(boltStableBucket); b != nil {
				if err := b.ForEach(func(k, v []byte) error {
					out = appendRecord(out, &walRecord{kind: recStable, group: g, key: k, val: v})
					return nil
				}); err != nil {
					return err
				}
			}
			if b := top.Bucket(boltLogBucket); b != nil {
				return b.ForEach(func(k, v []byte) error {
					if len(k) != 8 {
						return fmt.Errorf("%w: the node log %s holds a key of %d bytes among group %d's entries", ErrBadEntry, path, len(k), g)
					}
					if err := checkStoredEntry(binary.BigEndian.Uint64(k), v); err != nil {
						return fmt.Errorf("raftfsm: the node log %s, group %d: %w", path, g, err)
					}
					out = appendRecord(out, &walRecord{kind: recEntry, group: g, index: binary.BigEndian.Uint64(k), entry: v})
					return nil
				})
			}
			return nil
		})
	})
	return out, errors.Join(err, db.Close())
}

// checkStoredEntry checks an encoded entry before it is moved: it
// decodes, and it is the entry of the index it is stored at.
func checkStoredEntry(index uint64, v []byte) error {
	var l raft.Log
	return decodeStoredEntry(index, v, &l)
}

// raftBoltFile is where a node of a cluster of one Raft group kept its
// Raft log in earlier versions, under its raft directory: a raft-boltdb
// store. Such a node now keeps a node log of its own there, with its one
// group as group 0, and moves the file into it at start, once.
const raftBoltFile = "raft.db"

// raftStableKeys are the stable keys hashicorp/raft writes: its current
// term, and the term and candidate of its last vote.
var raftStableKeys = []string{"CurrentTerm", "LastVoteTerm", "LastVoteCand"}

// readRaftBoltLog returns what the raft-boltdb store at path holds, as
// the records that hold it in a segment, for group 0: its stable values,
// then its entries in index order.
func readRaftBoltLog(path string) (_ []byte, err error) {
	store, err := raftboltdb.New(raftboltdb.Options{Path: path, BoltOptions: &bolt.Options{Timeout: nodeLogLockTimeout}})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("raftfsm: opening the Raft log %s: another process holds it (is another heddle node running in this directory?)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("raftfsm: opening the Raft log %s of an earlier version: %w", path, err)
	}
	defer func() { err = errors.Join(err, store.Close()) }()
	var out []byte
	for _, k := range raftStableKeys {
		v, err := store.Get([]byte(k))
		if err != nil && err.Error() == errStableKeyNotFound.Error() {
			continue // never set
		}
		if err != nil {
			return nil, fmt.Errorf("raftfsm: reading %s from the Raft log %s: %w", k, path, err)
		}
		out = appendRecord(out, &walRecord{kind: recStable, group: 0, key: []byte(k), val: v})
	}
	first, err := store.FirstIndex()
	if err != nil {
		return nil, fmt.Errorf("raftfsm: the Raft log %s: %w", path, err)
	}
	last, err := store.LastIndex()
	if err != nil {
		return nil, fmt.Errorf("raftfsm: the Raft log %s: %w", path, err)
	}
	for i := first; first > 0 && i <= last; i++ {
		var e raft.Log
		err := store.GetLog(i, &e)
		if errors.Is(err, raft.ErrLogNotFound) {
			continue // a gap the log had (entries before a snapshot it installed)
		}
		if err != nil {
			return nil, fmt.Errorf("raftfsm: reading entry %d from the Raft log %s: %w", i, path, err)
		}
		v, err := encodeLogEntry(&e)
		if err != nil {
			return nil, err
		}
		out = appendRecord(out, &walRecord{kind: recEntry, group: 0, index: i, entry: v})
	}
	return out, nil
}
