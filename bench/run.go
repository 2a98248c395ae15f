package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync/atomic"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/sdk/client"
	"github.com/heddlewf/heddle/sdk/worker"
)

// Options configure Run.
type Options struct {
	// Workload is one of Workloads().
	Workload string
	// Mode is ModeEmbedded (the default), ModeCluster or ModeClusterMTLS.
	Mode string
	// N sizes the workload (see each workload's summary); 0 means its default.
	N int
	// Finished is how many finished jobs scale stores before its second
	// measurement; negative means DefaultFinished.
	Finished int
	// Dir is where the run's directories go (removed afterwards); "" means
	// a new directory under os.TempDir().
	Dir string
	// CeilingDuration is how long the ceiling loop runs; 0 means 2 s.
	CeilingDuration time.Duration
	// Progress receives a progress bar for phases longer than a few
	// seconds; nil draws none.
	Progress io.Writer
	// Log receives one line per phase (setup, measuring, ceiling); nil
	// means none.
	Log io.Writer
	// NoQueueView turns the task queue view of the engine or of every node
	// off (embedded.Config.DisableQueueView): no poller is recorded and no
	// rate counted. The queueview workload compares the two itself.
	NoQueueView bool
	// Shards, above 1, runs a cluster mode as a sharded cluster of this
	// many shards on its three nodes (docs/sharding.md), set against as
	// many bare Raft groups in parallel; 0 or 1 is a cluster of one group.
	Shards int
	// Starters is how many goroutines start workflows at once (and wait
	// for them) in the workloads that have starters (seq3, start,
	// resources, children, ...), and the ceiling's writers beside them; 0
	// means DefaultStarters. A run with a fixed number of starters is a
	// closed loop: its throughput is the starters over the latency, so it
	// measures a backend's capacity only with enough of them to keep it
	// busy (a sharded cluster needs more than one Raft group does).
	Starters int
}

// DefaultStarters is how many starters the workloads run by default.
const DefaultStarters = 32

// DefaultFinished is how many finished jobs scale stores by default.
const DefaultFinished = 1_000_000

// workload is one entry of the table of workloads.
type workload struct {
	name     string
	defaultN int
	summary  string
	run      func(r *runner) error
}

var workloads = []workload{
	{"seq3", 2000, "N workflows of three sequential no-op activities, 32 concurrent starters (--starters); workflows/s, activities/s, start-to-result latency", runSeq3},
	{"start", 5000, "N starts by 32 concurrent starters (--starters), no worker running; starts/s and start latency", runStart},
	{"timer", 1000, "N workflows each sleeping 1 s at once; lateness of each wake-up", runTimer},
	{"fanout", 1000, "one workflow running N activities in parallel and joining them, three times; activities/s", runFanout},
	{"signal", 500, "N signal round trips to one waiting workflow, one at a time; signal-to-code latency", runSignal},
	{"replay", 10000, "a workflow with an N-event history: a cold replay (a fresh worker) and a cached resume of it", runReplay},
	{"scale", 2000, "N claim + commit + complete cycles of one worker with 0 and with --finished finished jobs stored", runScale},
	{"idle", 100000, "N workflows waiting on a signal: heap and disk bytes per workflow", runIdle},
	{"race", 1000, "N workflows each racing a 200 ms activity against a 50 ms timer, started together; time to timer", runRace},
	{"cancel", 200, "N workflows one at a time, each cancelled while its activity runs (half in-process, half remote); cancellation latency", runCancel},
	{"approve", 300, "N jobs of two review tasks, one at a time: the upstream approved, until the dependant runs; approval latency", runApprove},
	{"observe", 2000, "seq3 of N workflows in rounds with nothing observed, with metrics, and with metrics and tracing; the overhead of each", runObserve},
	{"queueview", 2000, "seq3 of N workflows in rounds with the task queue view on and off, alternately; the view's overhead", runQueueView},
	{"resources", 1000, "N workflows of one step each contending for 4 resource units, 32 concurrent starters (--starters); steps/s, wait fairness (max/mean)", runResources},
	{"children", 1000, "N parents each starting one child and waiting for it, 32 starters (--starters), first with every child on its parent's shard, then with half on another shard; workflows/s of each", runChildren},
	{"groupcost", 20000, "an idle backend's CPU per Raft group replica, then N empty claims by 32 pollers: the CPU of one poll of one node (scaling model inputs)", runGroupCost},
	{"batchterminate", 10000, "N runs terminated by one batch operation over a query that matches them all; runs/s", runBatchTerminate},
}

// Workloads returns the workloads' names in the order they are listed.
func Workloads() []string {
	out := make([]string, len(workloads))
	for i, w := range workloads {
		out[i] = w.name
	}
	return out
}

// Describe returns a workload's one-line summary and default N.
func Describe(name string) (summary string, defaultN int, ok bool) {
	for _, w := range workloads {
		if w.name == name {
			return w.summary, w.defaultN, true
		}
	}
	return "", 0, false
}

// runner is the state of one workload's run.
type runner struct {
	opts Options
	root string
	n    int
	// starters is Options.Starters, its default applied.
	starters int
	res      *Result
	// b is the backend the workload runs on, opened by open.
	b *backend
	// workerErrors counts the errors that ended a job's turn in a worker
	// (a lease lost to a slow turn, say); they are reported, not fatal.
	workerErrors atomic.Int64
	// workers are stopped before the backend closes.
	workers []worker.Worker
	// workerSlots, when set, is the MaxConcurrentJobs of the workers the
	// workload starts (default defaultWorkerSlots).
	workerSlots int
	// obs is how the next backend, its workers and clients are observed
	// (the zero value: not at all, as in every workload but observe).
	obs observation
}

// Run runs one workload and returns its result.
func Run(opts Options) (_ *Result, err error) {
	var w *workload
	for i := range workloads {
		if workloads[i].name == opts.Workload {
			w = &workloads[i]
		}
	}
	if w == nil {
		return nil, fmt.Errorf("bench: unknown workload %q", opts.Workload)
	}
	if opts.Mode == "" {
		opts.Mode = ModeEmbedded
	}
	if opts.Mode != ModeEmbedded && !clustered(opts.Mode) {
		return nil, fmt.Errorf("bench: unknown mode %q", opts.Mode)
	}
	if opts.Shards < 0 || opts.Shards > engine.MaxShards {
		return nil, fmt.Errorf("bench: shards %d is not in [1, %d]", opts.Shards, engine.MaxShards)
	}
	if opts.Shards > 1 && !clustered(opts.Mode) {
		return nil, fmt.Errorf("bench: shards %d needs a cluster mode, not %s", opts.Shards, opts.Mode)
	}
	if opts.N < 0 {
		return nil, fmt.Errorf("bench: n %d is negative", opts.N)
	}
	if opts.Starters < 0 || opts.Starters > maxStarters {
		return nil, fmt.Errorf("bench: starters %d is not in [1, %d]", opts.Starters, maxStarters)
	}
	if opts.Starters == 0 {
		opts.Starters = DefaultStarters
	}
	if opts.N == 0 {
		opts.N = w.defaultN
	}
	if opts.Finished < 0 {
		opts.Finished = DefaultFinished
	}
	if opts.CeilingDuration == 0 {
		opts.CeilingDuration = 2 * time.Second
	}
	root, err := os.MkdirTemp(opts.Dir, "heddle-bench-"+w.name+"-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if rerr := os.RemoveAll(root); rerr != nil {
			err = errors.Join(err, fmt.Errorf("bench: removing the run's directory: %w", rerr))
		}
	}()
	res := &Result{Workload: w.name, Mode: opts.Mode, N: opts.N, Extra: map[string]float64{},
		StartedAt: time.Now().UTC().Format(time.RFC3339)}
	stampMachine(res)
	res.PeakRSSScope = "process since start"
	if resetPeakRSS() {
		res.PeakRSSScope = "process during this workload"
	}
	r := &runner{opts: opts, root: root, n: opts.N, res: res, obs: observation{queueViewOff: opts.NoQueueView}, starters: opts.Starters}
	if opts.NoQueueView {
		res.QueueViewOff = true
	}
	if opts.Shards > 1 {
		res.Shards = opts.Shards
	}
	defer func() {
		if cerr := r.closeBackend(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("bench %s (%s): closing the backend: %w", w.name, opts.Mode, cerr))
		}
	}()
	start := time.Now()
	if err := w.run(r); err != nil {
		return nil, fmt.Errorf("bench %s (%s): %w", w.name, opts.Mode, err)
	}
	res.ElapsedS = time.Since(start).Seconds()
	res.PeakRSSBytes = peakRSSBytes()
	if n := r.workerErrors.Load(); n > 0 {
		res.Extra["worker_errors"] = float64(n)
	}
	sort.Slice(res.Samples, func(i, j int) bool { return res.Samples[i] < res.Samples[j] })
	return res, nil // the deferred cleanups may still turn this into an error
}

func (r *runner) logf(format string, a ...any) {
	if r.opts.Log != nil {
		// The log is commentary: a failing log writer is no reason to stop
		// the measurement.
		_, _ = fmt.Fprintf(r.opts.Log, "bench %s (%s): %s\n", r.res.Workload, r.opts.Mode, fmt.Sprintf(format, a...))
	}
}

// open opens a fresh backend in its own directory under the run's root.
func (r *runner) open(name string) error {
	r.logf("starting the %s backend", r.opts.Mode)
	dir, err := os.MkdirTemp(r.root, name+"-")
	if err != nil {
		return err
	}
	r.b, err = openBackend(r.opts.Mode, dir, r.obs, r.opts.Shards)
	return err
}

// closeBackend stops the workers and closes the backend, so the ceiling
// that follows it does not compete with its background work for the
// machine's cores.
func (r *runner) closeBackend() error {
	var errs []error
	for _, w := range r.workers {
		errs = append(errs, stopWorker(w))
	}
	r.workers = nil
	if r.b != nil {
		errs = append(errs, r.b.close())
		r.b = nil
	}
	return errors.Join(errs...)
}

// defaultWorkerSlots is the MaxConcurrentJobs of the bench's workers.
const defaultWorkerSlots = 256

// worker starts a worker of queue on the backend with the bench's
// workflows and activities registered; acts adds activities by name. It
// runs defaultWorkerSlots jobs at once, or r.workerSlots when set.
func (r *runner) worker(queue string, cacheSize int, acts map[string]any) (worker.Worker, error) {
	slots := defaultWorkerSlots
	if r.workerSlots > 0 {
		slots = r.workerSlots
	}
	m, err := r.obs.newMetrics()
	if err != nil {
		return nil, err
	}
	w := worker.New(client.New(r.b.svc), queue, worker.Options{MaxConcurrentJobs: slots, CacheSize: cacheSize,
		OnError: func(engine.JobID, error) { r.workerErrors.Add(1) }, Metrics: m, TracerProvider: r.obs.tracer})
	registerWorkflows(w)
	for name, fn := range acts {
		w.RegisterActivityWithName(fn, name)
	}
	r.workers = append(r.workers, w)
	return w, w.Start()
}

func (r *runner) client() client.Client {
	return client.NewWithOptions(r.b.svc, client.Options{TracerProvider: r.obs.tracer})
}

func stopWorker(w worker.Worker) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return w.Shutdown(ctx)
}

// bar returns a progress bar for a phase of total units.
func (r *runner) bar(label string, total int) *progress {
	return newProgress(r.opts.Progress, r.res.Workload+" "+label, total)
}

// ceiling measures the raw loop with the workload's payload size and
// concurrency; the backend is closed first. maxWrites > 0 stops the loop
// after that many writes instead of after CeilingDuration.
func (r *runner) ceiling(payloadBytes, concurrency, maxWrites int) (Ceiling, error) {
	if err := r.closeBackend(); err != nil {
		return Ceiling{}, err
	}
	r.logf("measuring the ceiling: %d-byte writes from %d writers", payloadBytes, concurrency)
	bar := r.bar("ceiling", int(r.opts.CeilingDuration/time.Second))
	defer bar.finish()
	c, err := measureCeiling(r.opts.Mode, r.root, payloadBytes, concurrency, r.opts.CeilingDuration, maxWrites, r.opts.Shards)
	r.res.CeilingLoop = c
	return c, err
}

// throughput sets a throughput figure (units per second) against the
// ceiling's writes per second divided by the commands each unit cost.
func (r *runner) throughput(figure string, units int, elapsed time.Duration, commands int64, c Ceiling) {
	res := r.res
	res.Figure = figure
	res.Value = float64(units) / elapsed.Seconds()
	res.CommandsPerUnit = float64(commands) / float64(units)
	res.Ceiling = c.WritesPerS / res.CommandsPerUnit
	res.CeilingBasis = fmt.Sprintf("%s writes/s over the %.2f commands one unit cost", c.Kind, res.CommandsPerUnit)
	res.RatioToCeiling = res.Value / res.Ceiling
}

// latency sets a latency figure (ms) against pathCommands sequential raw
// writes at the ceiling's latency of the same quantile (q is "p50" or
// "p99"): the time the commands on the figure's path would take if each
// cost what a raw write does.
func (r *runner) latency(figure string, valueMS float64, pathCommands int, q string, c Ceiling) {
	res := r.res
	res.Figure = figure
	res.Value = valueMS
	raw := c.LatencyMS.P50
	if q == "p99" {
		raw = c.LatencyMS.P99
	}
	res.Ceiling = float64(pathCommands) * raw
	res.CeilingBasis = fmt.Sprintf("%d sequential %s writes at their %s latency", pathCommands, c.Kind, q)
	res.RatioToCeiling = res.Value / res.Ceiling
}

// samples records the latency samples and the timeline of m.
func (r *runner) samples(lat []time.Duration, of string, m *meter, elapsed time.Duration) {
	r.res.Samples = lat
	r.res.LatencyMS = Summarize(lat)
	r.res.LatencyOf = of
	if m != nil {
		r.res.Timeline, r.res.BucketS = m.timeline(elapsed)
	}
}

// maxStarters bounds Options.Starters: each is a goroutine holding a
// workflow open, and the ceiling runs as many writers.
const maxStarters = 4096
