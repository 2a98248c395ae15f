package machine_test

// Trace tests: the machine read as "this command, in this state, wrote these
// events and index entries".
//
// Each file under testdata/ is a sequence of blocks. A block is a directive
// (a command, or a look at the store), its arguments, and after "----" what
// it did (abridged here; docs/testing.md shows a block in full):
//
//	claim queue=q owner=w1 lease=30000 now=1000 nonce=n1
//	----
//	result: {Jobs=[{Job=1 WorkflowID=a Type=order Attempt=1 LeaseExpiryMS=31000 …}]}
//	events:
//	  job 1 #2 job_leased Attempt=1 Name=w1 LeaseExpiryMS=31000 TokenIssued=true
//	states:
//	  job 1: Queued → Running
//	    Attempt: 0 → 1
//	index:
//	  + l expiry=31000 job=1
//	  - q queue=q ready=1000 job=1
//
// A command directive builds one engine command from its arguments and
// applies it with machine.Apply in a transaction of its own over an
// in-memory store; every file starts from an empty store. Time and
// randomness are arguments, never the clock: now= (required) is the
// command's Header.NowMS, nonce= its Header.Nonce (the bytes of the text,
// which is what the lease tokens derive from), request= its request id and
// by= who issued it. The output is the result (or the error with the
// sentinels it matches and its code), the events appended to job and review
// task histories, the statuses and states moved (jobs, steps, review tasks,
// schedules, resources) with the record fields that changed, and every
// other key written (+) or deleted (-), described by storage.DescribeKey.
// After each command that wrote, machine.Verify checks the whole store.
//
// The driver, the arguments and the common directives are in this file;
// the printing in trace_print_test.go; each family of commands has its own
// handler file (trace_lease_test.go, trace_job_test.go, trace_turn_test.go,
// trace_step_test.go, trace_review_test.go, trace_schedule_test.go,
// trace_batch_test.go).
//
// Rewrite the expected outputs after a deliberate change with
//
//	go test ./engine/machine -run TestTraces -rewrite
//
// and read the diff: it is the change in behaviour.

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

const traceDir = "testdata"

// TestTraces runs every trace file, and then checks that every command kind
// has a trace: a new kind must come with one.
func TestTraces(t *testing.T) {
	seen := map[engine.CommandKind]bool{}
	cov := newTraceCoverage()
	ran := 0
	datadriven.Walk(t, traceDir, func(t *testing.T, path string) {
		if strings.HasPrefix(path, filepath.Join(traceDir, "fuzz")+string(filepath.Separator)) {
			t.Skip("a fuzz target's corpus, not a trace")
		}
		ran++
		e := newTraceEnv(t, seen)
		e.cov = cov
		datadriven.RunTest(t, path, e.handle)
	})
	entries, err := os.ReadDir(traceDir)
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, de := range entries {
		if !de.IsDir() && strings.HasSuffix(de.Name(), ".txt") {
			files++
		}
	}
	if ran < files || t.Failed() {
		t.Logf("ran %d of %d trace files: the coverage of command kinds is not checked", ran, files)
		return
	}
	for _, k := range engine.CommandKinds() {
		if !seen[k] {
			t.Errorf("command kind %s (%d) has no trace under %s/: add a block that applies it (and is not refused)", k, k, traceDir)
		}
	}
	cov.check(t)
}

// traceEnv is the state of one trace file: the store, and the lease tokens
// its claims handed out, so that fenced writes can present them by naming
// the job (or task) alone.
type traceEnv struct {
	t       *testing.T
	db      *storage.DB
	m       *machine.Machine
	seen    map[engine.CommandKind]bool
	jobs    map[engine.JobID]*leaseBook
	reviews map[engine.ReviewID]*leaseBook
	cov     *traceCoverage
	// layout is the shard the store is (the shard directive); shards
	// holds each shard's store of a sharded trace, and delivered the
	// answers of its deliveries, by entry (trace_outbox_test.go).
	layout    engine.ShardLayout
	shards    map[int]*storage.DB
	delivered map[engine.DeliveryRef]engine.DeliverResult
	sent      map[engine.DeliveryRef][]byte
}

// leaseBook remembers the tokens of the attempts claimed of one job or task.
type leaseBook struct {
	latest uint64
	tokens map[uint64]string
}

func (b *leaseBook) add(attempt uint64, token string) {
	b.tokens[attempt] = token
	b.latest = max(b.latest, attempt)
}

func newTraceEnv(t *testing.T, seen map[engine.CommandKind]bool) *traceEnv {
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, db) })
	return &traceEnv{t: t, db: db, m: machine.DefaultMachine, seen: seen, cov: newTraceCoverage(),
		jobs: map[engine.JobID]*leaseBook{}, reviews: map[engine.ReviewID]*leaseBook{}}
}

// A commandDirective builds the command a directive names from its
// arguments; the driver stamps the header and applies it.
type commandDirective func(e *traceEnv, a *traceArgs) engine.Command

// A lookDirective reads the store and prints what it finds; it writes nothing.
type lookDirective func(e *traceEnv, a *traceArgs) string

// commandDirectives are the directives of every family, by name.
var commandDirectives = mergeDirectives(leaseDirectives, jobDirectives, turnDirectives,
	stepDirectives, reviewDirectives, scheduleDirectives, pauseDirectives, batchDirectives, outboxDirectives)

var lookDirectives = map[string]lookDirective{
	"history":  lookHistory,
	"describe": lookDescribe,
	"dump":     lookDump,
}

func mergeDirectives(families ...map[string]commandDirective) map[string]commandDirective {
	all := map[string]commandDirective{}
	for _, f := range families {
		for name, d := range f {
			if _, dup := all[name]; dup {
				panic("trace directive " + name + " is declared twice")
			}
			all[name] = d
		}
	}
	return all
}

func (e *traceEnv) handle(t *testing.T, td *datadriven.TestData) string {
	e.t = t
	a := &traceArgs{t: t, td: td, used: map[string]bool{}}
	if td.Cmd == "shard" {
		out := e.switchShard(a)
		a.done()
		return out
	}
	if look, ok := lookDirectives[td.Cmd]; ok {
		out := look(e, a)
		a.done()
		return out
	}
	build, ok := commandDirectives[td.Cmd]
	if !ok {
		td.Fatalf(t, "unknown directive %q", td.Cmd)
	}
	cmd := build(e, a)
	h := cmd.Head()
	h.NowMS = a.int("now", -1)
	if h.NowMS < 0 {
		td.Fatalf(t, "%s: give the command's time with now=<ms>", td.Cmd)
	}
	if a.has("nonce") {
		h.Nonce = []byte(a.str("nonce", ""))
	}
	h.RequestID = a.str("request", "")
	h.By = a.str("by", "")
	a.done()
	return e.apply(cmd)
}

// apply applies cmd in a batch of its own, commits it, and describes what
// it did.
func (e *traceEnv) apply(cmd engine.Command) string {
	t := e.t
	batch := e.db.NewBatch()
	defer batch.Discard()
	tx := batch.Begin()
	res, err := e.m.Apply(tx, cmd)
	if err != nil {
		if tx.Len() != 0 {
			t.Fatalf("%s was refused (%v) but wrote %d keys", cmd.Kind(), err, tx.Len())
		}
		return "error: " + describeError(err) + "\n"
	}
	w := collectWrites(t, tx)
	if err := batch.Add(tx); err != nil {
		t.Fatal(err)
	}
	if err := batch.Commit(); err != nil {
		t.Fatal(err)
	}
	e.seen[cmd.Kind()] = true // applied, not refused: a trace of what it writes
	e.remember(res)
	e.rememberDelivery(cmd, res)
	var out strings.Builder
	out.WriteString("result: " + formatResult(res) + "\n")
	if tx.Len() == 0 {
		out.WriteString("(nothing written)\n")
		return out.String()
	}
	e.printWrites(&out, w)
	e.verify()
	return out.String()
}

// formatResult prints a command's result; a schedule's whole record is
// left to the states it moved, and named by its id.
func formatResult(res engine.Result) string {
	if r, ok := res.(*engine.ScheduleResult); ok && r.Schedule != nil {
		rest := *r
		rest.Schedule = nil
		out := "{Schedule=" + describeString(r.Schedule.ID)
		if f := formatFields(reflect.ValueOf(rest), nil); f != "" {
			out += " " + f
		}
		return out + "}"
	}
	return formatValue(res)
}

// remember keeps the lease tokens a claim handed out.
func (e *traceEnv) remember(res engine.Result) {
	switch r := res.(type) {
	case *engine.ClaimResult:
		for _, j := range r.Jobs {
			e.jobBook(j.Job).add(j.Attempt, j.LeaseToken)
		}
	case *engine.ClaimReviewsResult:
		for _, c := range r.Reviews {
			e.reviewBook(c.Review).add(c.Attempt, c.LeaseToken)
		}
	}
}

func (e *traceEnv) jobBook(id engine.JobID) *leaseBook {
	if e.jobs[id] == nil {
		e.jobs[id] = &leaseBook{tokens: map[uint64]string{}}
	}
	return e.jobs[id]
}

func (e *traceEnv) reviewBook(id engine.ReviewID) *leaseBook {
	if e.reviews[id] == nil {
		e.reviews[id] = &leaseBook{tokens: map[uint64]string{}}
	}
	return e.reviews[id]
}

// token resolves a token= argument against the tokens the book holds for
// attempt: by default the attempt's own, "none" for no token, "wrong" for
// one nobody was given.
func (b *leaseBook) token(a *traceArgs, attempt uint64) string {
	switch v := a.str("token", ""); v {
	case "":
		return b.tokens[attempt]
	case "none":
		return ""
	case "wrong":
		return "0123456789abcdef0123456789abcdef"
	default:
		a.td.Fatalf(a.t, "token=%s: want none or wrong (a claimed attempt's token is used by default)", v)
		return ""
	}
}

// jobLease is the LeaseRef of a fenced write: the job of key (job= by
// default), the attempt of attempt= or the latest one claimed, and that
// attempt's token unless token= says otherwise.
func (e *traceEnv) jobLease(a *traceArgs, key string) engine.LeaseRef {
	id := engine.JobID(a.int(key, 0))
	if id == 0 {
		a.td.Fatalf(a.t, "%s: name the job with %s=<id>", a.td.Cmd, key)
	}
	b := e.jobBook(id)
	attempt := uint64(a.int("attempt", int64(b.latest)))
	return engine.LeaseRef{Job: id, Attempt: attempt, Token: b.token(a, attempt)}
}

// target names a job by job=<id> or wf=<workflow id>.
func target(a *traceArgs) engine.Target {
	return engine.Target{Job: engine.JobID(a.int("job", 0)), WorkflowID: a.str("wf", "")}
}

// verify fails the test on any problem machine.Verify finds in the store.
func (e *traceEnv) verify() {
	viewOK(e.t, e.db, func(r *storage.Reader) error {
		for _, err := range machine.VerifyShard(r, 10, e.layout) {
			e.t.Errorf("after this command the store breaks an invariant: %v", err)
		}
		return nil
	})
	if e.t.Failed() {
		e.t.FailNow()
	}
}

// traceArgs reads a directive's arguments, and fails the test on any it
// did not read (a misspelt argument would otherwise be ignored).
type traceArgs struct {
	t    *testing.T
	td   *datadriven.TestData
	used map[string]bool
}

func (a *traceArgs) arg(key string) (datadriven.CmdArg, bool) {
	a.used[key] = true
	return a.td.Arg(key)
}

func (a *traceArgs) has(key string) bool {
	_, ok := a.arg(key)
	return ok
}

func (a *traceArgs) str(key, def string) string {
	arg, ok := a.arg(key)
	if !ok {
		return def
	}
	if len(arg.Vals) != 1 {
		a.td.Fatalf(a.t, "%s: want one value, got %d", key, len(arg.Vals))
	}
	return arg.Vals[0]
}

func (a *traceArgs) int(key string, def int64) int64 {
	s := a.str(key, "")
	if s == "" {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		a.td.Fatalf(a.t, "%s=%s: %v", key, s, err)
	}
	return n
}

func (a *traceArgs) float(key string) float64 {
	s := a.str(key, "")
	if s == "" {
		return 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		a.td.Fatalf(a.t, "%s=%s: %v", key, s, err)
	}
	return f
}

// flag is true for a bare key, or key=true.
func (a *traceArgs) flag(key string) bool {
	arg, ok := a.arg(key)
	if !ok {
		return false
	}
	switch {
	case len(arg.Vals) == 0:
		return true
	case len(arg.Vals) == 1 && (arg.Vals[0] == "true" || arg.Vals[0] == "false"):
		return arg.Vals[0] == "true"
	}
	a.td.Fatalf(a.t, "%s: want a bare flag or %s=true|false", key, key)
	return false
}

// list reads key=(a,b,c) (or key=a).
func (a *traceArgs) list(key string) []string {
	arg, ok := a.arg(key)
	if !ok {
		return nil
	}
	return slices.Clone(arg.Vals)
}

// bytes reads a payload: its text as bytes, nil when absent.
func (a *traceArgs) bytes(key string) []byte {
	if s, ok := a.arg(key); ok && len(s.Vals) == 1 {
		return []byte(s.Vals[0])
	}
	return nil
}

// json decodes the block's input, when it has one, into dst (fields the
// arguments do not reach: a schedule's spec, a review's config).
func (a *traceArgs) json(dst any) {
	in := strings.TrimSpace(a.td.Input)
	if in == "" {
		return
	}
	dec := json.NewDecoder(strings.NewReader(in))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		a.td.Fatalf(a.t, "%s: the input is not the JSON of a %T: %v", a.td.Cmd, dst, err)
	}
	a.used["(input)"] = true
}

func (a *traceArgs) done() {
	for _, arg := range a.td.CmdArgs {
		if !a.used[arg.Key] {
			a.td.Fatalf(a.t, "%s: unknown argument %q", a.td.Cmd, arg.Key)
		}
	}
	if strings.TrimSpace(a.td.Input) != "" && !a.used["(input)"] {
		a.td.Fatalf(a.t, "%s takes no input", a.td.Cmd)
	}
}

// describeError names err's sentinels (every engine sentinel it matches)
// and its stable code, then its message.
func describeError(err error) string {
	var names []string
	for _, s := range engineSentinels {
		if errors.Is(err, s.err) {
			names = append(names, s.name)
		}
	}
	out := strings.Join(names, ", ")
	if out == "" {
		out = "(no engine sentinel)"
	}
	var coded interface{ Code() string }
	if errors.As(err, &coded) {
		out += " [" + coded.Code() + "]"
	}
	return out + ": " + err.Error()
}

var engineSentinels = []struct {
	name string
	err  error
}{
	{"ErrStaleAttempt", engine.ErrStaleAttempt},
	{"ErrUnknownJob", engine.ErrUnknownJob},
	{"ErrIllegalTransition", engine.ErrIllegalTransition},
	{"ErrUnknownCommand", engine.ErrUnknownCommand},
	{"ErrInvalidCommand", engine.ErrInvalidCommand},
	{"ErrPayloadTooLarge", engine.ErrPayloadTooLarge},
	{"ErrWorkflowExists", engine.ErrWorkflowExists},
	{"ErrUnknownReview", engine.ErrUnknownReview},
	{"ErrReviewExists", engine.ErrReviewExists},
	{"ErrIllegalReviewCommand", engine.ErrIllegalReviewCommand},
	{"ErrStaleReviewAttempt", engine.ErrStaleReviewAttempt},
	{"ErrJobClosed", engine.ErrJobClosed},
	{"ErrStepCommitted", engine.ErrStepCommitted},
	{"ErrStepState", engine.ErrStepState},
	{"ErrNoResource", engine.ErrNoResource},
	{"ErrDependencyFailed", engine.ErrDependencyFailed},
	{"ErrUnknownResource", engine.ErrUnknownResource},
	{"ErrResourceExists", engine.ErrResourceExists},
	{"ErrResourceBusy", engine.ErrResourceBusy},
	{"ErrInvariant", engine.ErrInvariant},
	{"ErrCorrupt", engine.ErrCorrupt},
	{"ErrStorageRead", engine.ErrStorageRead},
	{"ErrUnknownSchedule", engine.ErrUnknownSchedule},
	{"ErrScheduleExists", engine.ErrScheduleExists},
	{"ErrUnknownBatch", engine.ErrUnknownBatch},
	{"ErrBatchExists", engine.ErrBatchExists},
	{"ErrRequestConflict", engine.ErrRequestConflict},
	{"ErrUnknownActivity", engine.ErrUnknownActivity},
}

// lookHistory prints the whole history of job=<id> or task=<id>.
func lookHistory(e *traceEnv, a *traceArgs) string {
	var out strings.Builder
	viewOK(e.t, e.db, func(r *storage.Reader) error {
		if a.has("task") {
			id := engine.ReviewID(a.int("task", 0))
			evs, err := machine.ReadReviewHistory(r, id)
			if err != nil {
				return err
			}
			for i := range evs {
				out.WriteString(formatReviewEvent(id, &evs[i]) + "\n")
			}
			return nil
		}
		id := engine.JobID(a.int("job", 0))
		evs, _, err := machine.ReadHistory(r, id, 0, 0)
		if err != nil {
			return err
		}
		for i := range evs {
			out.WriteString(formatEvent(id, &evs[i]) + "\n")
		}
		return nil
	})
	return out.String()
}

// lookDescribe prints one record, every field that is not zero: job=,
// task=, step= (with job=), schedule= or resource=.
func lookDescribe(e *traceEnv, a *traceArgs) string {
	var key []byte
	switch {
	case a.has("step"):
		key = storage.StepKey(uint64(a.int("job", 0)), a.str("step", ""))
	case a.has("job"):
		key = storage.JobKey(uint64(a.int("job", 0)))
	case a.has("task"):
		key = storage.ReviewKey(uint64(a.int("task", 0)))
	case a.has("schedule"):
		key = storage.ScheduleKey(a.str("schedule", ""))
	case a.has("resource"):
		key = storage.ResourceKey(a.str("resource", ""))
	default:
		a.td.Fatalf(a.t, "describe: name a job=, task=, step= (with job=), schedule= or resource=")
	}
	var out string
	viewOK(e.t, e.db, func(r *storage.Reader) error {
		b, err := r.Get(key)
		if errors.Is(err, storage.ErrNotFound) {
			out = storage.DescribeKey(key) + ": not found\n"
			return nil
		}
		if err != nil {
			return err
		}
		rec, err := decodeRecord(key, b)
		if err != nil {
			return err
		}
		out = storage.DescribeKey(key) + ": " + formatValue(rec) + "\n"
		return nil
	})
	return out
}

// lookDump lists every key of the store but the histories (optionally
// only those under prefix=), described.
func lookDump(e *traceEnv, a *traceArgs) string {
	prefix := []byte(a.str("prefix", ""))
	var out strings.Builder
	viewOK(e.t, e.db, func(r *storage.Reader) error {
		return r.Scan(prefix, nil, true, func(k, v []byte) (bool, error) {
			if isHistoryKey(k) || bytes.Equal(k, storage.KeyLastNow) {
				return true, nil
			}
			out.WriteString(describeIndexKey(k) + valueNote(k, v) + "\n")
			return true, nil
		})
	})
	return out.String()
}
