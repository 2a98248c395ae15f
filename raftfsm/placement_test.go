package raftfsm

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
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
	mv, _ := encodeMetaEntry(metaMoveStart, &moveBody{Shard: 1, From: "n2", To: "n4"})
	done, _ := encodeMetaEntry(metaMoveDone, &moveBody{Shard: 1, From: "n2", To: "n4"})
	f.Add(mv)
	f.Add(done)
	f.Add([]byte{metaEntryVersion, byte(metaSetLeader), 0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeMetaEntry(b)
		if err != nil {
			if !errors.Is(err, ErrBadEntry) {
				t.Fatalf("error %v is not ErrBadEntry", err)
			}
			return
		}
		// Applying what decodes never panics either, and what it makes is
		// a valid placement.
		cur, _ := NewPlacement(fourNodes(), 2, 0)
		for range 2 { // a move's end applies to a placement its start made
			next, err := applyMeta(&cur, e)
			if err != nil {
				return
			}
			if err := next.Validate(); err != nil {
				t.Fatalf("applying %+v made an invalid placement: %v", e, err)
			}
			cur = *next
		}
	})
}

func fourNodes() []PlacementNode {
	return append(threeNodes(), PlacementNode{ID: "n4", RaftAddr: "10.0.0.4:7281", HTTPAddr: "10.0.0.4:7280"})
}

// TestApplyMetaMove: a move's start records it, its end replaces the
// leaving replica in place and moves the desired leader with it; what a
// move may not do is refused, naming why; the old placement never changes,
// and a move round-trips through the placement's bytes.
func TestApplyMetaMove(t *testing.T) {
	p, _ := NewPlacement(fourNodes(), 2, 0) // shard 0 on n1 n2 n3, led by n1
	start := metaEntry{kind: metaMoveStart, move: &moveBody{Shard: 0, From: "n1", To: "n4"}}
	q, err := applyMeta(&p, start)
	if err != nil || q.Version != 2 || q.Groups[0].Move == nil || *q.Groups[0].Move != (ShardMove{From: "n1", To: "n4"}) || p.Groups[0].Move != nil {
		t.Fatalf("move start: %+v, %v", q, err)
	}
	if !reflect.DeepEqual(q.ShardsOf("n4"), []int{0, 1}) {
		t.Fatalf("n4 holds shards %v while shard 0 moves there, want [0 1]", q.ShardsOf("n4"))
	}
	b, _ := encodePlacement(q)
	if back, err := decodePlacement(b); err != nil || !reflect.DeepEqual(back, q) {
		t.Fatalf("a placement with a move round trip: %+v, %v", back, err)
	}
	if same, err := applyMeta(q, start); err != nil || same != q {
		t.Fatalf("the same move again: %v", err)
	}
	for _, m := range []moveBody{{Shard: 0, From: "n2", To: "n4"}, {Shard: 2, From: "n1", To: "n4"}, {Shard: 0, From: "n9", To: "n4"},
		{Shard: 0, From: "n1", To: "n1"}} {
		if _, err := applyMeta(q, metaEntry{kind: metaMoveStart, move: &m}); !errors.Is(err, engine.ErrInvalidCommand) {
			t.Errorf("move %+v during a move: %v", m, err)
		}
	}
	for _, m := range []moveBody{{Shard: 0, From: "n4", To: "n1"}, {Shard: 0, From: "n1", To: "n2"}} {
		if _, err := applyMeta(&p, metaEntry{kind: metaMoveStart, move: &m}); !errors.Is(err, engine.ErrInvalidCommand) {
			t.Errorf("move %+v: %v", m, err)
		}
	}
	r, err := applyMeta(q, metaEntry{kind: metaMoveDone, move: &moveBody{Shard: 0, From: "n1", To: "n4"}})
	if err != nil || r.Version != 3 || r.Groups[0].Move != nil || r.Groups[0].Moves != 1 ||
		!reflect.DeepEqual(r.Groups[0].Replicas, []string{"n4", "n2", "n3"}) || r.Groups[0].Leader != "n4" {
		t.Fatalf("move end: %+v, %v", r.Groups[0], err)
	}
	if !reflect.DeepEqual(q.Groups[0].Replicas, []string{"n1", "n2", "n3"}) {
		t.Fatalf("the move's end changed the placement before it: %v", q.Groups[0].Replicas)
	}
	if same, err := applyMeta(r, metaEntry{kind: metaMoveDone, move: &moveBody{Shard: 0, From: "n1", To: "n4"}}); err != nil || same != r {
		t.Fatalf("the same end again: %v", err)
	}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
}

// FuzzHostFrame: the reader of a host call's frames never panics, fails
// only with ErrHostFrame, never reads a body past its bound, and what it
// reads round-trips.
func FuzzHostFrame(f *testing.F) {
	var buf bytes.Buffer
	_ = writeHostFrame(&buf, hostOpShardApplied, []byte{0, 1})
	f.Add(buf.Bytes())
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{1, 0, 0, 0, 3, 'a'})
	f.Fuzz(func(t *testing.T, b []byte) {
		kind, body, err := readHostFrame(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, ErrHostFrame) {
				t.Fatalf("error %v is not ErrHostFrame", err)
			}
			return
		}
		if len(body) > maxHostFrameBody {
			t.Fatalf("read a body of %d bytes", len(body))
		}
		var again bytes.Buffer
		if err := writeHostFrame(&again, kind, body); err != nil || !bytes.Equal(again.Bytes(), b[:5+len(body)]) {
			t.Fatalf("round trip: %x, %v", again.Bytes(), err)
		}
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

// TestApplyMetaMoveCancel: a cancel marks the move under way (again: no
// change), the cancelled end drops it with the replicas as they were, and
// a cancel that came too late lets the move's own end complete it.
func TestApplyMetaMoveCancel(t *testing.T) {
	p, _ := NewPlacement(fourNodes(), 2, 0) // shard 0 on n1 n2 n3, led by n1
	cancel := metaEntry{kind: metaMoveCancel, move: &moveBody{Shard: 0}}
	if _, err := applyMeta(&p, cancel); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("a cancel with no move: %v", err)
	}
	if _, err := applyMeta(&p, metaEntry{kind: metaMoveCancel, move: &moveBody{Shard: 7}}); !errors.Is(err, engine.ErrInvalidCommand) {
		t.Fatalf("a cancel of a shard that does not exist: %v", err)
	}
	q, err := applyMeta(&p, metaEntry{kind: metaMoveStart, move: &moveBody{Shard: 0, From: "n1", To: "n4"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := applyMeta(q, cancel)
	if err != nil || c.Groups[0].Move == nil || *c.Groups[0].Move != (ShardMove{From: "n1", To: "n4", Cancel: true}) || q.Groups[0].Move.Cancel {
		t.Fatalf("cancel: %+v, %v", c.Groups[0], err)
	}
	if same, err := applyMeta(c, cancel); err != nil || same != c {
		t.Fatalf("the same cancel again: %v", err)
	}
	b, _ := encodePlacement(c)
	if back, err := decodePlacement(b); err != nil || !reflect.DeepEqual(back, c) {
		t.Fatalf("a placement with a cancelled move round trip: %+v, %v", back, err)
	}
	ended := metaEntry{kind: metaMoveCancelled, move: &moveBody{Shard: 0, From: "n1", To: "n4"}}
	if same, err := applyMeta(q, ended); err != nil || same != q {
		t.Fatalf("a cancelled end of a move not cancelled: %v", err)
	}
	r, err := applyMeta(c, ended)
	if err != nil || r.Groups[0].Move != nil || r.Groups[0].Moves != 0 || !reflect.DeepEqual(r.Groups[0].Replicas, []string{"n1", "n2", "n3"}) ||
		r.Groups[0].Leader != "n1" {
		t.Fatalf("cancelled end: %+v, %v", r.Groups[0], err)
	}
	if !reflect.DeepEqual(r.ShardsOf("n4"), []int{1}) {
		t.Fatalf("n4 holds shards %v after the cancel, want [1]", r.ShardsOf("n4"))
	}
	d, err := applyMeta(c, metaEntry{kind: metaMoveDone, move: &moveBody{Shard: 0, From: "n1", To: "n4"}})
	if err != nil || d.Groups[0].Move != nil || d.Groups[0].Moves != 1 || !reflect.DeepEqual(d.Groups[0].Replicas, []string{"n4", "n2", "n3"}) {
		t.Fatalf("a move's end after a cancel that came too late: %+v, %v", d.Groups[0], err)
	}
	for _, e := range []metaEntry{cancel, ended} {
		b, err := encodeMetaEntry(e.kind, e.move)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := decodeMetaEntry(b); err != nil || back.kind != e.kind || *back.move != *e.move {
			t.Fatalf("entry %d round trip: %+v, %v", e.kind, back, err)
		}
	}
}

// TestRestartWithOtherPeersNamesWhatDiffers: a node started with --peers
// that differ from its directory's placement is refused naming what
// differs. A restored cluster started on other ports than the restore was
// given (heddle cluster restore --base-port) differs in addresses only,
// and the message showed the same replicas and ids on both sides (found by
// a probe).
func TestRestartWithOtherPeersNamesWhatDiffers(t *testing.T) {
	dir := t.TempDir()
	p, err := NewPlacement(threeNodes(), 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := writePlacement(dir, &p); err != nil {
		t.Fatal(err)
	}
	moved := threeNodes()
	moved[1].RaftAddr, moved[1].HTTPAddr = "10.0.0.2:17281", "10.0.0.2:17280"
	fewer := threeNodes()[:2]
	renamed := threeNodes()
	renamed[2].ID = "n9"
	for _, tc := range []struct {
		name     string
		peers    []PlacementNode
		replicas int
		want     []string
	}{
		{"addresses", moved, 0, []string{"node n2", "10.0.0.2:17281/10.0.0.2:17280", "10.0.0.2:7281/10.0.0.2:7280"}},
		{"replicas", threeNodes(), 2, []string{"2 replicas given, 3 there"}},
		{"ids", renamed, 0, []string{"node 3 is n9 given, n3 there"}},
		{"fewer nodes, fewer replicas", fewer, 0, []string{"2 replicas given, 3 there"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := hostPlacement(HostConfig{Config: Config{ID: "n1", Dir: dir}, Peers: tc.peers, Shards: 4, Replicas: tc.replicas})
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("started with other peers: %v, want ErrConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the refusal %q does not say %q", err, w)
				}
			}
		})
	}
}
