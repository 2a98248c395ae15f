package embedded

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/storage"
)

// Benchmarks whose figures go into the performance report. Every measured
// write is durable (synced) unless a benchmark says otherwise.
//
//	BenchmarkLogPropose/proposers=N     CreateJob through Engine (LocalLog group commit), synced disk
//	BenchmarkRawBadgerSyncedBatch/writers=N
//	                                    the ceiling: the bytes a CreateJob writes, straight into Badger,
//	                                    group-committed by hand like LocalLog
//	BenchmarkRawBadgerSyncedTxnPerWrite/writers=N
//	                                    the same bytes, one synced Badger transaction per write
//	BenchmarkClaimCommit/finished=N     claim + commit one step + complete, one worker, with N
//	                                    Completed jobs already in the store
//
// Each reports cmds/s (commands, or command-sized raw writes, per second).

// benchInput is the ~200-byte payload of every benchmark CreateJob.
var benchInput = bytes.Repeat([]byte("0123456789abcdefghij"), 10)

// closeOK closes c, failing the test (after it ran) if that fails: tests
// defer it for the engines, logs and databases they open.
func closeOK(t testing.TB, c interface{ Close() error }) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("closing %T: %v", c, err)
	}
}

// viewOK runs fn over db, failing the test at once if the read fails.
func viewOK(t testing.TB, db *storage.DB, fn func(r *storage.Reader) error) {
	t.Helper()
	if err := db.View(fn); err != nil {
		t.Fatalf("reading the store: %v", err)
	}
}

func sameStore(t testing.TB, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("key %q changed", k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("key %q added", k)
		}
	}
}

var bg = context.Background()

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// The harness starts at 1_000_000 ms; schedule tests work on a round epoch
// so that the times read well.
const schedT0 = int64(1_700_000_000_000) // 2023-11-14T22:13:20Z

func everySpec(ms int64) engine.ScheduleSpec {
	return engine.ScheduleSpec{Intervals: []engine.ScheduleInterval{{EveryMS: ms}}}
}

var testAction = engine.ScheduleAction{Type: "report", Queue: "q", Input: []byte("in")}

func rfc(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }
