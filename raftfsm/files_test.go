package raftfsm

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

// CheckReplicaFiles keeps the replicas' files at rest within half of the
// process's limit: filesPerReplica (4) a replica, so 1,000 files carry
// 125 replicas and refuse 126.
func TestCheckReplicaFiles(t *testing.T) {
	for _, tc := range []struct {
		replicas int
		limit    uint64
		refused  bool
	}{
		{0, 0, false},
		{1, 0, true},
		{125, 1_000, false},
		{126, 1_000, true},
		{768, 20_000, false},   // 256 shards of 3 on three nodes in one process: 2,821 files measured
		{1536, 20_000, false},  // 512 shards of 3
		{3072, 20_000, true},   // 1,024 shards of 3: refused (12,288 at rest, past half of 20,000)
		{4096, 1 << 20, false}, // 4,096 replicas on one node with a limit of 2^20
	} {
		err := CheckReplicaFiles(tc.replicas, tc.limit)
		if got := err != nil; got != tc.refused {
			t.Errorf("CheckReplicaFiles(%d, %d) = %v, want refused %v", tc.replicas, tc.limit, err, tc.refused)
		}
		if err != nil && !errors.Is(err, ErrTooManyReplicas) {
			t.Errorf("CheckReplicaFiles(%d, %d) = %v, want ErrTooManyReplicas", tc.replicas, tc.limit, err)
		}
	}
	err := CheckReplicaFiles(126, 1_000)
	for _, want := range []string{"126 shard replicas", "about 504 files", "the 1000 this process may open", "ulimit -n"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// A new node whose replicas would not fit its process's open files is
// refused before it writes anything: it leaves no placement behind, and a
// later start with more files creates it whole. A node that holds its
// replicas already is not refused (that would only keep it down; moves
// may have brought it past the limit): it starts, warning its operator.
func TestOpenHostRefusesMoreReplicasThanFiles(t *testing.T) {
	defer func(f func() (uint64, bool)) { openFileLimit = f }(openFileLimit)
	openFileLimit = func() (uint64, bool) { return 60, true } // 7 replicas
	peers := threeNodes()
	cfg := HostConfig{Config: Config{ID: "n1", Dir: t.TempDir(), RaftAddr: peers[0].RaftAddr, HTTPAddr: peers[0].HTTPAddr},
		Peers: peers, Shards: 8}
	if _, err := OpenHost(cfg); !errors.Is(err, ErrTooManyReplicas) || !strings.Contains(err.Error(), "8 shard replicas") {
		t.Fatalf("OpenHost of a new node holding 8 replicas with 60 files = %v, want ErrTooManyReplicas naming 8 replicas", err)
	}
	entries, err := os.ReadDir(cfg.Dir)
	if err != nil || len(entries) != 0 {
		t.Fatalf("the refused node's directory holds %v (%v), want nothing", entries, err)
	}

	p, err := NewPlacement(peers, 8, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := writePlacement(cfg.Dir, &p); err != nil {
		t.Fatal(err)
	}
	cfg.Peers, cfg.Shards = nil, 0
	var logs bytes.Buffer
	cfg.LogOutput = &logs
	// It goes on past the check, to open its Raft port, at an address of
	// another machine here.
	if _, err := OpenHost(cfg); err == nil || errors.Is(err, ErrTooManyReplicas) {
		t.Fatalf("OpenHost of an existing node holding 8 replicas with 60 files = %v, want it past the check", err)
	}
	if !strings.Contains(logs.String(), "more shard replicas than its process's open files may carry") ||
		!strings.Contains(logs.String(), "8 shard replicas") {
		t.Fatalf("the restart's logs do not warn of the files:\n%s", logs.String())
	}
}
