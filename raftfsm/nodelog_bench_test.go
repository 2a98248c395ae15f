package raftfsm

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// BenchmarkGroupAppends: groups appending at once, each its own appends
// one after another (as Raft does), to one node log or to a raft-boltdb
// store each. b.N counts appends of 3 entries of 300 bytes.
func BenchmarkGroupAppends(b *testing.B) {
	for _, groups := range []int{1, 5, 15} {
		b.Run(fmt.Sprintf("nodelog/groups=%d", groups), func(b *testing.B) {
			l := openTestNodeLog(b, b.TempDir())
			defer func() { _ = l.Close() }()
			stores := make([]raft.LogStore, groups)
			for g := range stores {
				stores[g] = l.group(uint32(g))
			}
			runGroupAppends(b, stores)
			b.ReportMetric(float64(l.commits.Load())/float64(b.N), "commits/append")
		})
		b.Run(fmt.Sprintf("boltdb/groups=%d", groups), func(b *testing.B) {
			stores := make([]raft.LogStore, groups)
			for g := range stores {
				s, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(b.TempDir(), "raft.db")})
				if err != nil {
					b.Fatal(err)
				}
				defer func() { _ = s.Close() }()
				stores[g] = s
			}
			runGroupAppends(b, stores)
		})
	}
}

func runGroupAppends(b *testing.B, stores []raft.LogStore) {
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N/len(stores) + 1
	for _, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := make([]byte, 300)
			for i := range per {
				logs := make([]*raft.Log, 3)
				for j := range logs {
					logs[j] = &raft.Log{Index: uint64(i*3 + j + 1), Term: 1, Data: data}
				}
				if err := s.StoreLogs(logs); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
