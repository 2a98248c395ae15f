package raftfsm

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

func threeNodes() []PlacementNode {
	var ns []PlacementNode
	for i := 1; i <= 3; i++ {
		ns = append(ns, PlacementNode{ID: fmt.Sprintf("n%d", i), RaftAddr: fmt.Sprintf("10.0.0.%d:7281", i), HTTPAddr: fmt.Sprintf("10.0.0.%d:7280", i)})
	}
	return ns
}

// TestNewPlacementSpreadsLeaders: shard k lives on nodes k, k+1, k+2 and
// is led by node k mod N.
func TestNewPlacementSpreadsLeaders(t *testing.T) {
	p, err := NewPlacement(threeNodes(), 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []ShardPlacement{
		{Replicas: []string{"n1", "n2", "n3"}, Leader: "n1"},
		{Replicas: []string{"n2", "n3", "n1"}, Leader: "n2"},
		{Replicas: []string{"n3", "n1", "n2"}, Leader: "n3"},
		{Replicas: []string{"n1", "n2", "n3"}, Leader: "n1"},
	}
	if !reflect.DeepEqual(p.Groups, want) || p.Replicas != 3 || p.Version != 1 {
		t.Fatalf("placement %+v", p)
	}
	two, err := NewPlacement(threeNodes(), 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := two.ShardsOf("n1"); !reflect.DeepEqual(got, []int{0, 2}) {
		t.Fatalf("n1 holds shards %v with 2 replicas of 3 shards on 3 nodes, want [0 2]", got)
	}
	for _, bad := range []struct {
		nodes            []PlacementNode
		shards, replicas int
	}{
		{threeNodes(), 0, 0}, {threeNodes(), engine.MaxShards + 1, 0}, {threeNodes(), 4, 4}, {nil, 4, 0},
		{append(threeNodes(), PlacementNode{ID: "n1", RaftAddr: "x:1"}), 4, 0},
		{[]PlacementNode{{ID: "n1"}}, 1, 0},
	} {
		if _, err := NewPlacement(bad.nodes, bad.shards, bad.replicas); !errors.Is(err, ErrPlacement) {
			t.Errorf("NewPlacement(%v, %d, %d): %v, want ErrPlacement", bad.nodes, bad.shards, bad.replicas, err)
		}
	}
}

func TestPlacementRoundTrip(t *testing.T) {
	p, err := NewPlacement(threeNodes(), 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := encodePlacement(&p)
	if err != nil {
		t.Fatal(err)
	}
	q, err := decodePlacement(b)
	if err != nil || !reflect.DeepEqual(*q, p) {
		t.Fatalf("round trip: %+v, %v", q, err)
	}
	// The largest placement there can be fits the decoder's bounds.
	var many []PlacementNode
	for i := range MaxNodes {
		many = append(many, PlacementNode{ID: string(bytes.Repeat([]byte{'a' + byte(i%26)}, maxNodeIDBytes-2)) + fmt.Sprint(i%100),
			RaftAddr: string(bytes.Repeat([]byte("r"), maxAddrBytes)), HTTPAddr: string(bytes.Repeat([]byte("h"), maxAddrBytes))})
	}
	big, err := NewPlacement(many, engine.MaxShards, MaxReplicas)
	if err != nil {
		t.Fatal(err)
	}
	bb, err := encodePlacement(&big)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodePlacement(bb); err != nil {
		t.Fatalf("the largest placement (%d bytes) does not decode: %v", len(bb), err)
	}
}

// FuzzDecodePlacement: the decoder of placement records (the metadata
// group's log and snapshots, a node's placement file) never panics, and
// what it accepts is valid and round-trips.
func FuzzDecodePlacement(f *testing.F) {
	p, _ := NewPlacement(threeNodes(), 4, 0)
	b, _ := encodePlacement(&p)
	f.Add(b)
	f.Add([]byte{placementFormat, 0x85})
	f.Add([]byte{placementFormat, 0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add(append([]byte{placementFormat}, bytes.Repeat([]byte{0x91}, 100)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := decodePlacement(b)
		if err != nil {
			if !errors.Is(err, ErrPlacement) {
				t.Fatalf("error %v is not ErrPlacement", err)
			}
			return
		}
		if err := q.Validate(); err != nil {
			t.Fatalf("accepted an invalid placement: %v", err)
		}
		again, err := encodePlacement(q)
		if err != nil {
			t.Fatal(err)
		}
		r, err := decodePlacement(again)
		if err != nil || !reflect.DeepEqual(r, q) {
			t.Fatalf("round trip: %+v, %v", r, err)
		}
	})
}

// FuzzDecodeMetaEntry: the metadata group's entry decoder never panics and
// fails only with ErrBadEntry.
func FuzzDecodeMetaEntry(f *testing.F) {
	p, _ := NewPlacement(threeNodes(), 2, 0)
	create, _ := encodeMetaEntry(metaCreate, &p)
	set, _ := encodeMetaEntry(metaSetLeader, &setLeaderBody{Shard: 1, Leader: "n3"})
	re, _ := encodeMetaEntry(metaRebalance, struct{}{})
	f.Add(create)
	f.Add(set)
	f.Add(re)
	f.Add([]byte{metaEntryVersion, byte(metaSetLeader), 0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeMetaEntry(b)
		if err != nil {
			if !errors.Is(err, ErrBadEntry) {
				t.Fatalf("error %v is not ErrBadEntry", err)
			}
			return
		}
		// Applying what decodes never panics either.
		cur, _ := NewPlacement(threeNodes(), 2, 0)
		_, _ = applyMeta(&cur, e)
	})
}

// TestApplyMeta: the metadata changes, each a new version.
func TestApplyMeta(t *testing.T) {
	p, _ := NewPlacement(threeNodes(), 2, 0)
	q, err := applyMeta(&p, metaEntry{kind: metaSetLeader, setLeader: &setLeaderBody{Shard: 1, Leader: "n1"}})
	if err != nil || q.Groups[1].Leader != "n1" || q.Version != 2 || p.Groups[1].Leader != "n2" {
		t.Fatalf("set leader: %+v, %v (and the old placement must not change: %+v)", q, err, p)
	}
	if same, err := applyMeta(q, metaEntry{kind: metaSetLeader, setLeader: &setLeaderBody{Shard: 1, Leader: "n1"}}); err != nil || same != q {
		t.Fatalf("setting the same leader again made a new version: %v", err)
	}
	r, err := applyMeta(q, metaEntry{kind: metaRebalance})
	if err != nil || r.Groups[1].Leader != "n2" || r.Version != 3 {
		t.Fatalf("rebalance: %+v, %v", r, err)
	}
	if again, _ := applyMeta(r, metaEntry{kind: metaCreate, placement: &p}); again != r {
		t.Fatal("a second create replaced the placement")
	}
	for _, e := range []metaEntry{
		{kind: metaSetLeader, setLeader: &setLeaderBody{Shard: 2, Leader: "n1"}},
		{kind: metaSetLeader, setLeader: &setLeaderBody{Shard: -1, Leader: "n1"}},
		{kind: metaSetLeader, setLeader: &setLeaderBody{Shard: 0, Leader: "n9"}},
	} {
		if _, err := applyMeta(r, e); !errors.Is(err, engine.ErrInvalidCommand) {
			t.Errorf("%+v: %v", e.setLeader, err)
		}
	}
}
