package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/heddlewf/heddle/metrics"
	"github.com/heddlewf/heddle/sdk/client"
)

// observation is how a backend, its workers and its clients are observed:
// with metrics (a registry per engine or node, and one for the workers,
// gathered every second as a Prometheus server would scrape them) and with
// tracing (every span sampled and exported, in batches, to an exporter
// that drops them: the cost of recording and exporting without a
// collector's). The zero value observes nothing.
type observation struct {
	name    string
	metrics bool
	tracer  trace.TracerProvider
	regs    *registries
	// queueViewOff turns the task queue view off
	// (embedded.Config.DisableQueueView, raftfsm.Config.DisableQueueView).
	queueViewOff bool
}

// registries are the registries a round created, for its scraper.
type registries struct {
	mu  sync.Mutex
	all []*prometheus.Registry
}

// newMetrics returns a Metrics on a fresh registry, or nil when the
// observation has no metrics.
func (o observation) newMetrics() (*metrics.Metrics, error) {
	if !o.metrics {
		return nil, nil
	}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		return nil, err
	}
	o.regs.mu.Lock()
	o.regs.all = append(o.regs.all, reg)
	o.regs.mu.Unlock()
	return m, nil
}

// scrape gathers every registry each interval until stop is called.
func (o observation) scrape(interval time.Duration) (stop func() error) {
	if !o.metrics {
		return func() error { return nil }
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	var scrapeErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			o.regs.mu.Lock()
			regs := slices.Clone(o.regs.all)
			o.regs.mu.Unlock()
			for _, reg := range regs {
				if _, err := reg.Gather(); err != nil && scrapeErr == nil {
					scrapeErr = err
				}
			}
		}
	}()
	return func() error {
		close(done)
		wg.Wait()
		return scrapeErr
	}
}

// observeSettings are what observe compares, in the order of its first
// round.
var observeSettings = []struct {
	name             string
	metrics, tracing bool
}{
	{"off", false, false},
	{"metrics", true, false},
	{"metrics+tracing", true, true},
}

// observeRounds is how many rounds observe runs for n workflows a round:
// seven, fewer for a small n (the tests'), at least one. A round of a
// setting takes well under a second at the default n on two cores, and a
// shared machine's speed moves by more than the overheads measured within
// seconds, so the medians of several rounds are compared.
func observeRounds(n int) int { return min(7, max(1, n/100)) }

// runObserve: seq3 of N workflows on a fresh backend, once per setting in
// each round, the order of the settings turning from round to round so
// that none always runs first on a machine warming up or slowing down. The
// headline is the median throughput with metrics and tracing. The
// overheads compare the settings within each round, run seconds apart,
// and take the median over the rounds of those paired ratios: a machine
// whose speed drifts between rounds moves all three settings of a round
// alike. The extra figures also give each setting's median throughput.
func runObserve(r *runner) error {
	rounds := observeRounds(r.n)
	wps := map[string][]float64{}
	var metRatio, bothRatio []float64 // per round, against the round's off
	var lat []time.Duration
	var commands int64
	for round := range rounds {
		for k := range observeSettings {
			s := observeSettings[(round+k)%len(observeSettings)]
			obs := observation{name: s.name, metrics: s.metrics, regs: &registries{}, queueViewOff: r.opts.NoQueueView}
			var tp *sdktrace.TracerProvider
			if s.tracing {
				tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
				obs.tracer = tp
			}
			t, err := r.observedSeq3(obs, fmt.Sprintf("%s round %d/%d", s.name, round+1, rounds))
			if tp != nil {
				err = errors.Join(err, tp.Shutdown(context.Background()))
			}
			if err != nil {
				return err
			}
			wps[s.name] = append(wps[s.name], float64(r.n)/t.elapsed.Seconds())
			if k == len(observeSettings)-1 {
				// The round is complete: pair its settings.
				off := wps["off"][round]
				metRatio = append(metRatio, wps["metrics"][round]/off)
				bothRatio = append(bothRatio, wps["metrics+tracing"][round]/off)
			}
			if s.tracing {
				lat = append(lat, t.lat...)
				commands += t.commands
			}
		}
	}
	r.obs = observation{queueViewOff: r.opts.NoQueueView}
	ceil, err := r.ceiling(commandPayloadBytes, r.starters, 0)
	if err != nil {
		return err
	}
	off, met, both := median(wps["off"]), median(wps["metrics"]), median(wps["metrics+tracing"])
	units := r.n * rounds
	r.throughput("workflows/s with metrics and tracing", units, time.Duration(float64(units)/both*float64(time.Second)), commands, ceil)
	r.res.WorkflowsPerS = ptr(both)
	r.res.ActivitiesPerS = ptr(3 * both)
	r.res.Extra["rounds"] = float64(rounds)
	r.res.Extra["off_workflows_per_s"] = off
	r.res.Extra["metrics_workflows_per_s"] = met
	r.res.Extra["metrics_tracing_workflows_per_s"] = both
	r.res.Extra["metrics_overhead_pct"] = 100 * (1 - median(metRatio))
	r.res.Extra["metrics_tracing_overhead_pct"] = 100 * (1 - median(bothRatio))
	r.res.Extra["metrics_overhead_pct_worst_round"] = 100 * (1 - slices.Min(metRatio))
	r.samples(lat, "start to result of one workflow, with metrics and tracing", nil, 0)
	return nil
}

// observedSeq3 runs seq3's N workflows on a fresh backend observed as obs
// says, and closes the backend.
func (r *runner) observedSeq3(obs observation, label string) (timedRun, error) {
	r.obs = obs
	if err := r.open("observe-" + obs.name); err != nil {
		return timedRun{}, err
	}
	if _, err := r.worker(queue, 0, nil); err != nil {
		return timedRun{}, err
	}
	c := r.client()
	ctx := context.Background()
	stop := obs.scrape(time.Second)
	t, err := r.timed(label, func(i int) error {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("observe-%d", i), TaskQueue: queue}, Seq3)
		if err == nil {
			err = run.Get(ctx, nil)
		}
		return err
	})
	return t, errors.Join(err, stop(), r.closeBackend())
}

// median returns the median of vs (the mean of the middle two for an even
// count), 0 for none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
