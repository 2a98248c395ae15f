package machine_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/embedded"
	"github.com/heddlewf/heddle/engine/machine"
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

// benchWorkflowID gives every benchmark workflow id the same length, so the
// raw benchmarks can write exactly the sizes a CreateJob writes.
func benchWorkflowID(i int64) string { return fmt.Sprintf("wf-%012d", i) }

func benchCreate(i int64) engine.CreateJob {
	return engine.CreateJob{WorkflowID: benchWorkflowID(i), Type: "order", Queue: "q", Input: benchInput}
}

// benchSpread runs n operations across workers goroutines (operation i gets
// i = 1..n, taken from a shared counter) and returns the first error.
func benchSpread(n, workers int, op func(i int64) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				if err := op(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func benchReportCmds(b *testing.B, cmdsPerOp float64) {
	b.ReportMetric(cmdsPerOp*float64(b.N)/b.Elapsed().Seconds(), "cmds/s")
}

// BenchmarkLogPropose: b.N CreateJob commands (200-byte input, a unique
// workflow id, no request id) through a durable engine, spread across the
// proposers. ns/op is per command, across all proposers.
func BenchmarkLogPropose(b *testing.B) {
	for _, p := range []int{1, 64} {
		b.Run(fmt.Sprintf("proposers=%d", p), func(b *testing.B) {
			logs := &benchLogger{}
			e, err := embedded.Open(embedded.Config{Dir: b.TempDir(), DisableScheduler: true, Storage: storage.Options{Logger: logs}})
			if err != nil {
				b.Fatal(err)
			}
			defer logs.report(b)
			defer closeOK(b, e)
			b.ResetTimer()
			err = benchSpread(b.N, p, func(i int64) error {
				_, err := e.Create(bg, benchCreate(i))
				return err
			})
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			benchReportCmds(b, 1)
		})
	}
}

// rawWrite is one key and value a command writes.
type rawWrite struct{ key, val []byte }

var (
	createWritesOnce sync.Once
	createWrites     []rawWrite
	createWritesErr  error
)

// createWriteSet returns the writes of one CreateJob exactly as the log would
// commit them: the second create (the counters exist) of a store, with the
// clock advanced so that it also writes the clock key, as a command that
// starts a batch does. They are read back from the store as the keys the
// create added or changed, and checked against the command's Tx.
func createWriteSet() ([]rawWrite, error) {
	createWritesOnce.Do(func() { createWrites, createWritesErr = buildCreateWriteSet() })
	return createWrites, createWritesErr
}

func buildCreateWriteSet() (_ []rawWrite, err error) {
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	snapshot := func() (map[string][]byte, error) {
		m := map[string][]byte{}
		err := db.View(func(r *storage.Reader) error {
			return r.Scan(nil, nil, true, func(k, v []byte) (bool, error) {
				m[string(k)] = v
				return true, nil
			})
		})
		return m, err
	}
	apply := func(c engine.CreateJob, now int64) (*storage.Tx, error) {
		c.NowMS = now
		batch := db.NewBatch()
		tx := batch.Begin()
		if _, err := machine.DefaultMachine.Apply(tx, &c); err != nil {
			return nil, err
		}
		if err := batch.Add(tx); err != nil {
			return nil, err
		}
		return tx, batch.Commit()
	}
	now := time.Now().UnixMilli()
	if _, err := apply(benchCreate(1), now); err != nil {
		return nil, err
	}
	before, err := snapshot()
	if err != nil {
		return nil, err
	}
	tx, err := apply(benchCreate(2), now+1)
	if err != nil {
		return nil, err
	}
	after, err := snapshot()
	if err != nil {
		return nil, err
	}
	var out []rawWrite
	var size int64
	for k, v := range after {
		if old, ok := before[k]; ok && bytes.Equal(old, v) {
			continue
		}
		out = append(out, rawWrite{key: []byte(k), val: v})
		size += int64(len(k)) + int64(len(v)) + 32 // storage.Tx's per-entry estimate
	}
	if len(out) != tx.Len() || size != tx.Bytes() {
		return nil, fmt.Errorf("create write set: %d keys / %d bytes read back, the Tx wrote %d / %d", len(out), size, tx.Len(), tx.Bytes())
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].key, out[j].key) < 0 })
	return out, nil
}

// rawKey is template key k made unique for raw command i: meta keys (the
// job counter and the clock, which every create rewrites) stay as they are;
// every other key gets i in its last 8 bytes, so each raw command writes
// fresh keys of the same lengths, in increasing order as job ids are.
func rawKey(k []byte, i int64) []byte {
	out := append([]byte(nil), k...)
	if out[0] != storage.PrefixMeta && len(out) > 8 {
		binary.BigEndian.PutUint64(out[len(out)-8:], uint64(i)|1<<62)
	}
	return out
}

func openRawBadger(b *testing.B) (*badger.DB, []rawWrite) {
	b.Helper()
	ws, err := createWriteSet()
	if err != nil {
		b.Fatal(err)
	}
	var kb, vb int
	for _, w := range ws {
		kb += len(w.key)
		vb += len(w.val)
	}
	b.Logf("one CreateJob writes %d keys: %d bytes of keys, %d bytes of values", len(ws), kb, vb)
	// storage.Open, so that every Badger option (sync, memtables, value
	// threshold, compactors, no conflict detection) is heddle's.
	logs := &benchLogger{}
	db, err := storage.Open(storage.Options{Dir: b.TempDir(), Logger: logs})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := db.Close(); err != nil {
			b.Error(err)
		}
		logs.report(b)
	})
	return db.Badger(), ws
}

func setRaw(txn *badger.Txn, ws []rawWrite, i int64) error {
	for _, w := range ws {
		if err := txn.Set(rawKey(w.key, i), w.val); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkRawBadgerSyncedBatch is the ceiling for BenchmarkLogPropose: each
// "command" writes the keys and values of one CreateJob (createWriteSet, no
// reads, no encoding, no state machine) into Badger opened with heddle's
// options, durably. Group commit is done by hand the way LocalLog does it,
// and no cleverer: writers hand their command to one committer goroutine
// over a channel and wait for its answer; the committer takes the first
// waiting command, adds every other one already waiting (non-blocking
// drain), writes them all into one Badger transaction and commits it with
// one sync, then answers each writer. ns/op is per command.
func BenchmarkRawBadgerSyncedBatch(b *testing.B) {
	for _, w := range []int{1, 64} {
		b.Run(fmt.Sprintf("writers=%d", w), func(b *testing.B) {
			bdb, ws := openRawBadger(b)
			type req struct {
				i    int64
				done chan error
			}
			reqs := make(chan *req, 1024)
			committed := make(chan struct{})
			go func() {
				defer close(committed)
				var batch []*req
				for r := range reqs {
					batch = append(batch[:0], r)
				drain:
					for {
						select {
						case q, ok := <-reqs:
							if !ok {
								break drain
							}
							batch = append(batch, q)
						default:
							break drain
						}
					}
					txn := bdb.NewTransaction(true)
					var err error
					for _, q := range batch {
						if err = setRaw(txn, ws, q.i); err != nil {
							break
						}
					}
					if err == nil {
						err = txn.Commit()
					} else {
						txn.Discard()
					}
					for _, q := range batch {
						q.done <- err
					}
				}
			}()
			b.ResetTimer()
			err := benchSpread(b.N, w, func(i int64) error {
				r := &req{i: i, done: make(chan error, 1)}
				reqs <- r
				return <-r.done
			})
			b.StopTimer()
			close(reqs)
			<-committed
			if err != nil {
				b.Fatal(err)
			}
			benchReportCmds(b, 1)
		})
	}
}

// BenchmarkRawBadgerSyncedTxnPerWrite: the same writes, but every command is
// its own synced Badger transaction, committed by the writer itself (Badger
// queues concurrent commits to its one write goroutine, which writes them
// together but syncs its WAL once per transaction).
func BenchmarkRawBadgerSyncedTxnPerWrite(b *testing.B) {
	for _, w := range []int{1, 64} {
		b.Run(fmt.Sprintf("writers=%d", w), func(b *testing.B) {
			bdb, ws := openRawBadger(b)
			b.ResetTimer()
			err := benchSpread(b.N, w, func(i int64) error {
				txn := bdb.NewTransaction(true)
				if err := setRaw(txn, ws, i); err != nil {
					txn.Discard()
					return err
				}
				return txn.Commit()
			})
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			benchReportCmds(b, 1)
		})
	}
}

// finishedJobs is how many Completed jobs BenchmarkClaimCommit puts in the
// store first: 1,000,000, or HEDDLE_BENCH_FINISHED, or 10,000 with -short.
func finishedJobs(b *testing.B) int {
	if s := os.Getenv("HEDDLE_BENCH_FINISHED"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			b.Fatalf("HEDDLE_BENCH_FINISHED=%q", s)
		}
		return n
	}
	if testing.Short() {
		return 10_000
	}
	return 1_000_000
}

// The store of finished jobs is built once per process (sync.Once) in a
// directory of its own, reused by every run of the benchmark (b.N re-runs
// and -count), and removed when BenchmarkClaimCommit returns.
var finished struct {
	once  sync.Once
	dir   string
	n     int
	err   error
	build time.Duration
}

func finishedStore(b *testing.B, n int) string {
	finished.once.Do(func() {
		finished.n = n
		finished.dir, finished.err = os.MkdirTemp("", "heddle-bench-finished-")
		if finished.err != nil {
			return
		}
		start := time.Now()
		finished.err = buildFinishedStore(finished.dir, n)
		finished.build = time.Since(start)
		if finished.err == nil {
			fmt.Fprintf(os.Stderr, "bench: built %d finished jobs in %v (%s)\n", n, finished.build.Round(time.Millisecond), dirSize(finished.dir))
		}
	})
	if finished.err != nil {
		b.Fatalf("building %d finished jobs: %v", n, finished.err)
	}
	if finished.n != n {
		b.Fatalf("finished store holds %d jobs, want %d", finished.n, n)
	}
	return finished.dir
}

// buildFinishedStore applies Create, Claim and Complete for n jobs of queue
// "q" through Machine.Apply straight into storage batches, with NoSync: per
// chunk of 1000 jobs, 1000 creates, one claim of all 1000 and 1000
// completes, packed into batches as full as one transaction allows
// (thousands of commands each). Time runs a day behind the wall clock, one
// millisecond per chunk.
func buildFinishedStore(dir string, n int) (err error) {
	db, err := storage.Open(storage.Options{Dir: dir, NoSync: true, Logger: &benchLogger{}})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	now := time.Now().Add(-24 * time.Hour).UnixMilli()
	batch := db.NewBatch()
	apply := func(cmd engine.Command) (engine.Result, error) {
		cmd.Head().NowMS = now
		tx := batch.Begin()
		res, err := machine.DefaultMachine.Apply(tx, cmd)
		if err != nil {
			return nil, err
		}
		err = batch.Add(tx)
		if errors.Is(err, storage.ErrBatchFull) {
			if err := batch.Commit(); err != nil {
				return nil, err
			}
			batch = db.NewBatch()
			err = batch.Add(tx)
		}
		return res, err
	}
	const chunk = 1000
	for start := 0; start < n; start += chunk {
		k := min(chunk, n-start)
		for i := range k {
			c := benchCreate(int64(start + i))
			c.WorkflowID = "done-" + c.WorkflowID
			if _, err := apply(&c); err != nil {
				return err
			}
		}
		res, err := apply(&engine.Claim{Queue: "q", Owner: "builder", Max: k, LeaseMS: 60_000})
		if err != nil {
			return err
		}
		jobs := res.(*engine.ClaimResult).Jobs
		if len(jobs) != k {
			return fmt.Errorf("chunk at %d: claimed %d jobs, want %d", start, len(jobs), k)
		}
		for _, j := range jobs {
			if _, err := apply(&engine.Complete{LeaseRef: j.Lease(), Result: []byte("done")}); err != nil {
				return err
			}
		}
		now++
	}
	if err := batch.Commit(); err != nil {
		return err
	}
	// The finished jobs stand for work done over days, so measure the store
	// as a long-running one is: with Badger's compactions done, rather than
	// while the compaction of a 650 MB bulk load competes for both cores.
	// (Flattening also drops the deletion markers in the indexes; the
	// unsettled figures, HEDDLE_BENCH_UNSETTLED=1, show per-command times
	// that rise alike for claims, which scan, and commits, which do not.)
	if os.Getenv("HEDDLE_BENCH_UNSETTLED") == "" {
		if err := db.Badger().Flatten(2); err != nil {
			return err
		}
	}
	return nil
}

func dirSize(dir string) string {
	var total int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			total += info.Size()
		}
	}
	return fmt.Sprintf("%.0f MiB on disk", float64(total)/(1<<20))
}

// BenchmarkClaimCommit measures cycles of one worker: claim one job of queue
// "q" (Max 1), commit one step, complete the job; three synced commands per
// cycle, ns/op is per cycle. The b.N ready jobs are created before the timer
// starts (64 concurrent proposers, so their creation is group-committed),
// in the same queue the finished jobs went through. finished=0 starts from
// an empty directory each run; the other starts from the store of finished
// jobs, reopened durable, and every run adds its own (Completed) cycles to it.
// cmds/s counts three commands per cycle; claim-us/op, commit-us/op and
// complete-us/op split the cycle's time by command.
//
// The finished jobs' ready-index entries are deleted, and until Badger
// compacts their tombstones away a claim's scan of the queue's ready index
// (which starts at the front, where the oldest entries were) walks them all.
func BenchmarkClaimCommit(b *testing.B) {
	n := finishedJobs(b)
	b.Run("finished=0", func(b *testing.B) { benchClaimCommit(b, b.TempDir()) })
	if n == 0 {
		return
	}
	// A top-level benchmark with sub-benchmarks runs once per process:
	// -count and -cpu repeat the sub-benchmarks inside b.Run. So once the
	// sub-benchmark is done, the store is no longer needed.
	defer func() {
		if finished.dir != "" {
			if err := os.RemoveAll(finished.dir); err != nil {
				b.Error(err)
			}
		}
	}()
	b.Run(fmt.Sprintf("finished=%d", n), func(b *testing.B) { benchClaimCommit(b, finishedStore(b, n)) })
}

var claimCommitRun atomic.Int64

func benchClaimCommit(b *testing.B, dir string) {
	logs := &benchLogger{}
	e, err := embedded.Open(embedded.Config{Dir: dir, DisableScheduler: true, Storage: storage.Options{Logger: logs}})
	if err != nil {
		b.Fatal(err)
	}
	defer logs.report(b)
	defer closeOK(b, e)
	run := claimCommitRun.Add(1)
	if err := benchSpread(b.N, 64, func(i int64) error {
		c := benchCreate(i)
		c.WorkflowID = fmt.Sprintf("ready-%d-%s", run, c.WorkflowID)
		_, err := e.Create(bg, c)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	var claimT, commitT, completeT time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		got, err := e.Claim(bg, engine.Claim{Queue: "q", Owner: "bench", Max: 1, LeaseMS: 60_000})
		if err != nil || len(got) != 1 {
			b.Fatalf("claim: %v, %v", got, err)
		}
		ref := got[0].Lease()
		t1 := time.Now()
		if _, err := e.CommitStep(bg, engine.CommitStep{LeaseRef: ref, Step: "charge", Type: "activity_completed", Payload: benchInput}); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := e.Complete(bg, engine.Complete{LeaseRef: ref, Result: []byte("done")}); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		claimT += t1.Sub(t0)
		commitT += t2.Sub(t1)
		completeT += t3.Sub(t2)
	}
	b.StopTimer()
	benchReportCmds(b, 3)
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(per(claimT), "claim-us/op")
	b.ReportMetric(per(commitT), "commit-us/op")
	b.ReportMetric(per(completeT), "complete-us/op")
}

// benchLogger keeps Badger's warnings and errors away from the benchmark
// result lines (stderr would split them) and reports them with b.Log after
// the run. (Badger warns there that its block cache is too small when a
// claim walks the ready index over a million finished jobs.)
type benchLogger struct {
	mu   sync.Mutex
	msgs map[string]int
}

func (l *benchLogger) add(level, f string, a ...any) {
	msg := level + fmt.Sprintf(f, a...)
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if i := strings.Index(msg, " Metrics:"); i >= 0 { // varying numbers: group by message
		msg = msg[:i]
	}
	if len(msg) > 160 {
		msg = msg[:160] + "..."
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.msgs == nil {
		l.msgs = map[string]int{}
	}
	l.msgs[msg]++
}

func (l *benchLogger) Errorf(f string, a ...any) { l.add("badger ERROR: ", f, a...) }

func (l *benchLogger) Warningf(f string, a ...any) { l.add("badger WARN: ", f, a...) }

func (*benchLogger) Infof(string, ...any) {}

func (*benchLogger) Debugf(string, ...any) {}

func (l *benchLogger) report(b *testing.B) {
	l.mu.Lock()
	defer l.mu.Unlock()
	msgs := make([]string, 0, len(l.msgs))
	for m := range l.msgs {
		msgs = append(msgs, m)
	}
	sort.Strings(msgs)
	for _, m := range msgs {
		b.Logf("%dx %s", l.msgs[m], m)
	}
}
