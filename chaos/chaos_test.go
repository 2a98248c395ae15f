package chaos

import (
	"context"
	"os"
	"testing"
	"time"
)

// The short seeded runs CI gives the suite. Longer ones: heddle chaos
// --duration 10m. A failing seed replays with heddle chaos --seed N.
const ciSeed = 20260501

func runShort(t *testing.T, run func(context.Context, Options) (Summary, Details, error), o Options) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real processes for about a minute")
	}
	bin, err := BuildBinary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o.Bin, o.Seed, o.Log = bin, ciSeed, os.Stderr
	if dir := os.Getenv("HEDDLE_CHAOS_DIR"); dir != "" {
		o.Dir = dir
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sum, det, err := run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := Print(os.Stderr, sum, det); err != nil {
		t.Error(err)
	}
	if !sum.OK() {
		t.Fatalf("chaos checks failed (seed %d): %+v", sum.Seed, sum)
	}
}

func TestChaosClusterShort(t *testing.T) {
	runShort(t, RunCluster, Options{Duration: 40 * time.Second})
}

// A sharded cluster of four shards on the three nodes: the faults hit the
// node leading the most shards, and every shard is checked on its own.
func TestChaosShardedShort(t *testing.T) {
	runShort(t, RunCluster, Options{Duration: 25 * time.Second, Shards: 4})
}

func TestChaosEmbeddedShort(t *testing.T) {
	runShort(t, RunEmbedded, Options{Kills: 30})
}
