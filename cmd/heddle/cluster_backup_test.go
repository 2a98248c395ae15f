package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	lb "github.com/heddlewf/heddle/internal/loopback"
	"github.com/heddlewf/heddle/raftfsm"
)

// TestClusterBackupAndRestoreCommands: "cluster backup" backs up a running
// cluster of two shards through its HTTP API, refuses a directory that is
// not empty, and "cluster restore --peers --id" makes the directories of a
// new cluster that starts with every run of the backup on its shard.
func TestClusterBackupAndRestoreCommands(t *testing.T) {
	const shards = 2
	c := newShardedTestCluster(t, shards)
	awaitHosts(t, c.live(), "every node ready", func() bool {
		for _, n := range c.live() {
			if n.host.Ready(context.Background()) != nil {
				return false
			}
		}
		return true
	})
	svc, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: strings.Split(c.addrs(), ",")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ids := map[int]string{}
	for i := 0; len(ids) < shards; i++ {
		id := fmt.Sprintf("kept-%d", i)
		k := engine.ShardOfKey(id, shards)
		if ids[k] != "" {
			continue
		}
		ids[k] = id
		if _, err := svc.Create(ctx, engine.CreateJob{WorkflowID: id, Type: "t", Queue: "q"}); err != nil {
			t.Fatal(err)
		}
	}

	dir := filepath.Join(t.TempDir(), "backup")
	out, errOut, code := runCmd(t, "cluster", "backup", "--addr", c.addrs(), "--to", dir)
	if code != 0 || !strings.Contains(out, "2 shards") {
		t.Fatalf("cluster backup: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, raftfsm.ManifestFile)); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCmd(t, "cluster", "backup", "--addr", c.addrs(), "--to", dir); code == 0 || !strings.Contains(errOut, "not empty") {
		t.Fatalf("a backup into a used directory: exit %d: %s", code, errOut)
	}
	// The holds are released (each replica learns it as it applies).
	awaitHosts(t, c.live(), "every shard's hold released on every replica", func() bool {
		for k := range shards {
			for _, n := range c.live() {
				if h, err := n.host.DeliveryHold(k); err != nil || h != nil {
					return false
				}
			}
		}
		return true
	})

	// A new cluster on other addresses, made from the backup.
	r := &shardedTestCluster{t: t, root: t.TempDir(), shards: shards}
	var peers []string
	for i := 1; i <= 3; i++ {
		raftAddr, err := lb.Reserve()
		if err != nil {
			t.Fatal(err)
		}
		httpAddr, err := lb.Reserve()
		if err != nil {
			t.Fatal(err)
		}
		r.peers = append(r.peers, raftfsm.PlacementNode{ID: fmt.Sprintf("n%d", i), RaftAddr: raftAddr, HTTPAddr: httpAddr})
		peers = append(peers, fmt.Sprintf("n%d=%s/%s", i, raftAddr, httpAddr))
	}
	for _, p := range r.peers {
		out, errOut, code := runCmd(t, "cluster", "restore", "--from", dir, "--dir", filepath.Join(r.root, p.ID), "--id", p.ID,
			"--peers", strings.Join(peers, ","))
		if code != 0 || !strings.Contains(out, "restored 2 shards") {
			t.Fatalf("cluster restore %s: exit %d\n%s%s", p.ID, code, out, errOut)
		}
	}
	r.nodes = make([]*clusterNode, len(r.peers))
	t.Cleanup(func() {
		for i := len(r.nodes) - 1; i >= 0; i-- {
			r.kill(i)
		}
	})
	for i := range r.peers {
		r.start(i, true)
	}
	for _, id := range ids {
		out, errOut, code := runCmd(t, "workflow", "describe", "-w", id, "--addr", r.addrs())
		if code != 0 || !strings.Contains(out, id) {
			t.Fatalf("the restored cluster does not describe %s: exit %d\n%s%s", id, code, out, errOut)
		}
	}
}
