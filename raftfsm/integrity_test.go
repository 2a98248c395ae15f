package raftfsm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// A node whose state database fails its integrity checks at start does not
// serve it: it moves the damaged directory aside, says so in its log, and
// rebuilds the state from the cluster, ending with the same keyspace as
// its peers. Before the checks the node opened the damaged database and
// went on from it (a flipped table served altered payloads). With
// snapshots, the node falls so far behind while it is down that the
// leader's log no longer reaches it and the leader sends its snapshot;
// without, the node replays the whole log.
func TestDamagedStateRebuildsFromCluster(t *testing.T) {
	rows := []struct {
		name      string
		snapshots bool
	}{
		{"from the leader's snapshot", true},
		{"from the whole log", false},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			logs := &syncBuffer{}
			c := newTestCluster(t, 3, func(cfg *Config) {
				if row.snapshots {
					cfg.SnapshotThreshold, cfg.TrailingLogs, cfg.SnapshotInterval = 32, 8, 50*time.Millisecond
				}
				if cfg.ID == "n3" {
					cfg.LogOutput = logs
				}
			})
			ctx := context.Background()
			create := func(from, to int) {
				t.Helper()
				for i := from; i < to; i++ {
					_, err := c.leader().Engine().Create(ctx, engine.CreateJob{WorkflowID: fmt.Sprintf("wf-%d", i),
						Type: "T", Queue: "q", Input: fmt.Appendf(nil, "payload %d", i)})
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			create(0, 100)
			c.waitConverged()
			c.kill("n3")

			data := liveDataDir(t, c.dirs["n3"])
			sst := onlySST(t, data)
			flipBytes(t, sst)

			create(100, 200)
			var leaderSnap uint64
			if row.snapshots {
				l := c.leader()
				if err := l.raft.Snapshot().Error(); err != nil {
					t.Fatal(err)
				}
				leaderSnap = statUint(t, l, "last_snapshot_index")
				if first, err := l.store.FirstIndex(); err != nil || first <= 100 {
					t.Fatalf("the leader's log starts at %d (%v): it must have dropped what n3 lacks", first, err)
				}
			}

			c.start("n3", false)
			c.assertSameState()
			c.verifyAll()
			if !strings.Contains(logs.String(), "failed its integrity checks") || !strings.Contains(logs.String(), filepath.Base(sst)) {
				t.Errorf("n3's log does not say what was found and done:\n%s", logs.String())
			}
			for line := range strings.SplitSeq(logs.String(), "\n") {
				if strings.Contains(line, "integrity") {
					t.Logf("n3 logged: %s", line)
				}
			}
			ents, err := os.ReadDir(filepath.Join(c.dirs["n3"], "state"))
			if err != nil {
				t.Fatal(err)
			}
			var moved bool
			for _, e := range ents {
				moved = moved || strings.HasPrefix(e.Name(), "damaged-")
			}
			if !moved {
				t.Errorf("the damaged state was not kept aside: %v", ents)
			}
			if row.snapshots {
				if got := statUint(t, c.live()["n3"], "last_snapshot_index"); got < leaderSnap {
					t.Errorf("n3's newest snapshot is at %d, before the leader's %d: it did not install it", got, leaderSnap)
				}
			}
			for i := range 200 {
				j, err := c.live()["n3"].Engine().Describe(engine.WithStaleRead(ctx), engine.Target{WorkflowID: fmt.Sprintf("wf-%d", i)})
				if err != nil || j.WorkflowID != fmt.Sprintf("wf-%d", i) {
					t.Fatalf("n3 after the rebuild: wf-%d: %v", i, err)
				}
			}
		})
	}
}

// liveDataDir returns the state database directory CURRENT names.
func liveDataDir(t *testing.T, nodeDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(nodeDir, "state", currentFile))
	if os.IsNotExist(err) {
		return filepath.Join(nodeDir, "state", dataName(0)) // no restore yet
	}
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(nodeDir, "state", strings.TrimSpace(string(b)))
}

func onlySST(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ssts []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sst") {
			ssts = append(ssts, filepath.Join(dir, e.Name()))
		}
	}
	if len(ssts) == 0 {
		t.Fatalf("no table in %s", dir)
	}
	return ssts[len(ssts)-1]
}

// flipBytes inverts four bytes in the middle of the file.
func flipBytes(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(b) / 3; i < len(b)/3+4; i++ {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func statUint(t *testing.T, n *Node, name string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(n.raft.Stats()[name], 10, 64)
	if err != nil {
		t.Fatalf("raft stat %s: %v", name, err)
	}
	return v
}

// syncBuffer is a bytes.Buffer that Raft's loggers may write to from many
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
