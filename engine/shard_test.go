package engine

import (
	"errors"
	"fmt"
	"testing"
)

// TestShardOfKeyIsStable pins the shard of a few keys: a cluster's data
// lives where the hash put it, so a change of hash (or of the rules around
// it) would lose every run of an existing sharded cluster. The figures are
// 64-bit FNV-1a modulo the count.
func TestShardOfKeyIsStable(t *testing.T) {
	for _, tc := range []struct {
		key   string
		count int
		want  int
	}{
		{"order-1", 4, 1}, {"order-1", 8, 5},
		{"order-2", 4, 0}, {"order-2", 8, 4},
		{"42", 4, 3}, {"42", 8, 3},
		{"", 4, 1},
		// A hash tag hashes alone: "{42}" like "42".
		{"order-{42}", 4, 3}, {"order-{42}/17/a1", 8, 3}, {"x{42}y{a}", 8, 3},
		// An empty tag, or a '{' without '}', hashes the whole key.
		{"{}a", 4, ShardOfKey("{}a", 4)},
		// A shard's own names for runs started without a workflow id.
		{"job-" + fmt.Sprint(JobIDOf(3, 7)), 4, 3},
		{"job-" + fmt.Sprint(JobIDOf(3, 7)) + ".2", 4, 3},
		{"job-7", 4, 0},
		// The same shape naming a shard beyond the count is an ordinary key.
		{"job-" + fmt.Sprint(JobIDOf(9, 1)), 4, int(hashKey("job-"+fmt.Sprint(JobIDOf(9, 1))) % 4)},
		// One shard, or none: always shard 0.
		{"order-1", 1, 0}, {"order-1", 0, 0},
	} {
		if got := ShardOfKey(tc.key, tc.count); got != tc.want {
			t.Errorf("ShardOfKey(%q, %d) = %d, want %d", tc.key, tc.count, got, tc.want)
		}
	}
}

func TestDerivedJobIDNeedsCanonicalDecimal(t *testing.T) {
	for _, k := range []string{"job-", "job-0", "job-07", "job-+7", "job-7.", "job-7.01", "job-7.x", "job-7a", "Job-7", "job-99999999999999999999999"} {
		if id, ok := derivedJobID(k); ok {
			t.Errorf("derivedJobID(%q) = %d, want none", k, id)
		}
	}
	for k, want := range map[string]JobID{"job-7": 7, "job-7.0": 7, "job-12.3": 12} {
		if id, ok := derivedJobID(k); !ok || id != want {
			t.Errorf("derivedJobID(%q) = %d, %v; want %d", k, id, ok, want)
		}
	}
}

func TestJobIDLayout(t *testing.T) {
	for _, s := range []int{0, 1, 5, MaxShards - 1} {
		for _, n := range []uint64{1, 2, MaxShardSeq} {
			id := JobIDOf(s, n)
			if got := ShardOfJob(id); got != s {
				t.Errorf("ShardOfJob(JobIDOf(%d, %d)) = %d", s, n, got)
			}
			if uint64(id)&MaxShardSeq != n {
				t.Errorf("JobIDOf(%d, %d) = %d lost its counter", s, n, id)
			}
		}
	}
	if got := uint64(JobIDOf(MaxShards-1, MaxShardSeq)); got != 1<<53-1 {
		t.Errorf("the largest id is %d, want 2^53-1, the largest integer JavaScript holds exactly", got)
	}
	if JobIDOf(0, 42) != 42 {
		t.Error("shard 0 must assign the ids of an unsharded store")
	}
}

func TestShardLayoutValidate(t *testing.T) {
	for _, l := range []ShardLayout{{}, {Count: 1}, {Index: 3, Count: 4}, {Index: MaxShards - 1, Count: MaxShards}} {
		if err := l.Validate(); err != nil {
			t.Errorf("%+v: %v", l, err)
		}
	}
	for _, l := range []ShardLayout{{Index: 1}, {Index: 4, Count: 4}, {Index: -1, Count: 2}, {Count: MaxShards + 1}, {Count: -1}} {
		if err := l.Validate(); !errors.Is(err, ErrInvalidCommand) {
			t.Errorf("%+v: %v, want ErrInvalidCommand", l, err)
		}
	}
}

// TestEveryKindHasAShardRoute: every command kind has decided how it
// routes on a sharded cluster. A kind without a decision would be refused
// there: add it to ShardOfCommand (engine/shard.go).
func TestEveryKindHasAShardRoute(t *testing.T) {
	for _, k := range CommandKinds() {
		cmd, _ := NewCommand(k)
		if _, r := ShardOfCommand(cmd, 4); r == RouteNone {
			t.Errorf("command kind %s has no shard route: decide it in ShardOfCommand (engine/shard.go)", k)
		}
	}
}

func TestShardOfCommand(t *testing.T) {
	j := JobIDOf(2, 9)
	for _, tc := range []struct {
		cmd   Command
		shard int
		route ShardRoute
	}{
		{&CreateJob{WorkflowID: "order-{42}"}, 3, RouteOne},
		{&CreateJob{ParentID: j}, 2, RouteOne},
		// A child goes to its parent's shard, whatever its workflow id:
		// that shard checks the lease and delivers it where its id routes.
		{&CreateJob{ParentID: j, WorkflowID: "order-{42}"}, 2, RouteOne},
		{&Deliver{DeliveryRef: DeliveryRef{Source: 2, Target: 1, Seq: 1}}, 1, RouteOne},
		{&AckDelivery{DeliveryRef: DeliveryRef{Source: 2, Target: 1, Seq: 1}}, 0, RouteInternal},
		{&CreateJob{Header: Header{RequestID: "r"}}, 1, RouteOne}, // "r" hashes to 1 of 4
		{&CreateJob{}, -1, RouteOne},
		{&Complete{LeaseRef: LeaseRef{Job: j}}, 2, RouteOne},
		{&Signal{Target: Target{WorkflowID: "42"}}, 3, RouteOne},
		{&Signal{Target: Target{Job: j}}, 2, RouteOne},
		{&Heartbeat{Leases: []LeaseRef{{Job: j}, {Job: j + 1}}}, 2, RouteOne},
		{&Heartbeat{Leases: []LeaseRef{{Job: j}, {Job: 1}}}, 0, RouteSplit},
		{&Claim{}, 0, RouteLocal},
		{&AddResource{ID: "gpu"}, ResourceHomeShard, RouteOne},
		{&CreateSchedule{ID: "42"}, 3, RouteOne},
		{&FireTimers{}, 0, RouteInternal},
		// A workflow step's review task goes to its run's shard, which
		// delivers it where its review job routes; one of no run goes
		// there directly.
		{&CreateReview{Job: "42"}, 3, RouteOne},
		{&CreateReview{Job: "42", ParentJob: j, ParentStep: "s"}, 2, RouteOne},
		{&ReviewClosed{Parent: j, Step: "s", Review: 1}, 0, RouteInternal},
	} {
		s, r := ShardOfCommand(tc.cmd, 4)
		if s != tc.shard || r != tc.route {
			t.Errorf("%T: shard %d route %d, want %d %d", tc.cmd, s, r, tc.shard, tc.route)
		}
	}
}

func TestCrossShardErrorMatches(t *testing.T) {
	err := error(&CrossShardError{Command: "CreateJob", What: "parent job 7", From: 1, To: 0})
	if !errors.Is(err, ErrCrossShard) || !errors.Is(err, ErrInvalidCommand) {
		t.Fatalf("%v does not match ErrCrossShard and ErrInvalidCommand", err)
	}
	var coded interface{ Code() string }
	if !errors.As(err, &coded) || coded.Code() != CrossShardCode {
		t.Fatalf("%v has no code %s", err, CrossShardCode)
	}
}

// FuzzShardOfKey: every key lands on a shard in range, the same one every
// time, and a key with a hash tag on the shard of its tag.
func FuzzShardOfKey(f *testing.F) {
	for _, k := range []string{"", "a", "order-{42}", "{", "}{", "job-7", "job-7.1", "job-2199023255553", "{{}}"} {
		f.Add(k, uint16(4))
	}
	f.Fuzz(func(t *testing.T, key string, n uint16) {
		count := int(n)%MaxShards + 1
		s := ShardOfKey(key, count)
		if s < 0 || s >= count {
			t.Fatalf("ShardOfKey(%q, %d) = %d, out of range", key, count, s)
		}
		if ShardOfKey(key, count) != s {
			t.Fatalf("ShardOfKey(%q, %d) is not stable", key, count)
		}
		if tag := hashTag(key); tag != key {
			if _, derived := derivedJobID(key); !derived && ShardOfKey("{"+tag+"}", count) != s {
				t.Fatalf("%q and its tag %q land on different shards", key, tag)
			}
		}
	})
}
