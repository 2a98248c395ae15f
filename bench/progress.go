package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// progressDelay is how long a phase runs before its bar appears: short
// runs finish before a bar would tell anyone anything.
const progressDelay = 2 * time.Second

// progress draws a bar for one phase of a workload on w (a terminal), and
// nothing at all when w is nil.
type progress struct {
	w     io.Writer
	label string
	total int64
	done  atomic.Int64
	start time.Time
	stop  chan struct{}
	wg    sync.WaitGroup
	drawn bool
}

func newProgress(w io.Writer, label string, total int) *progress {
	p := &progress{w: w, label: label, total: int64(total), start: time.Now(), stop: make(chan struct{})}
	if w == nil {
		return p
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				if time.Since(p.start) >= progressDelay {
					p.draw()
				}
			}
		}
	}()
	return p
}

func (p *progress) add(n int) { p.done.Add(int64(n)) }

func (p *progress) draw() {
	const width = 30
	done := min(p.done.Load(), p.total)
	filled := 0
	if p.total > 0 {
		filled = int(done * width / p.total)
	}
	// A bar that cannot be drawn is no reason to stop the measurement.
	_, _ = fmt.Fprintf(p.w, "\r%-22s [%s%s] %d/%d %5.1fs", p.label, strings.Repeat("#", filled), strings.Repeat(".", width-filled),
		done, p.total, time.Since(p.start).Seconds())
	p.drawn = true
}

// finish stops the bar and clears its line.
func (p *progress) finish() {
	if p.w == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	if p.drawn {
		_, _ = fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", 80)) // as in draw
	}
}

// meter records when each unit of work completed, for throughput over
// time, and advances the progress bar.
type meter struct {
	mu    sync.Mutex
	start time.Time
	at    []time.Duration
	bar   *progress
}

func newMeter(bar *progress) *meter { return &meter{start: time.Now(), bar: bar} }

func (m *meter) done() {
	d := time.Since(m.start)
	m.mu.Lock()
	m.at = append(m.at, d)
	m.mu.Unlock()
	m.bar.add(1)
}

// timeline buckets the completions into about 60 buckets over the run and
// returns completions per second in each, and the bucket width.
func (m *meter) timeline(elapsed time.Duration) ([]float64, float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	const buckets = 60
	width := max(elapsed/buckets, time.Millisecond)
	out := make([]float64, int(elapsed/width)+1)
	for _, d := range m.at {
		out[min(int(d/width), len(out)-1)]++
	}
	for i := range out {
		out[i] /= width.Seconds()
	}
	return out, width.Seconds()
}
