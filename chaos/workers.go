package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// workers are the worker processes of a run: `heddle chaos worker`, each
// incarnation with its own name and logs.
type workers struct {
	bin, logs string
	addrs     []string
	ca        string // the CA file the workers trust; "" for plain HTTP
	ps        *procs
	mu        sync.Mutex
	slots     []*proc
	started   int
}

func (w *workers) start(slot int) error {
	w.mu.Lock()
	w.started++
	name := fmt.Sprintf("w%d-%d", slot, w.started)
	w.mu.Unlock()
	args := []string{"chaos", "worker", "--addr", strings.Join(w.addrs, ","), "--name", name, "--dir", w.logs}
	if w.ca != "" {
		args = append(args, "--tls-ca", w.ca)
	}
	p, err := w.ps.start(name, w.bin, args, filepath.Join(w.logs, name+".log"))
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.slots[slot] = p
	w.mu.Unlock()
	return nil
}

// kills SIGKILLs a random worker every few seconds, often mid-activity
// (each activity works for a while), and starts a new incarnation.
func (w *workers) kills(ctx context.Context, r *rand.Rand, log *faultLog) {
	for sleepCtx(ctx, between(r, 2*time.Second, 6*time.Second)) {
		slot := r.IntN(len(w.slots))
		w.mu.Lock()
		p := w.slots[slot]
		w.mu.Unlock()
		f := Fault{Kind: "kill-worker", Target: p.name, Start: time.Now().UnixNano()}
		w.ps.kill(p)
		sleepCtx(context.WithoutCancel(ctx), between(r, 100*time.Millisecond, time.Second))
		if err := w.start(slot); err != nil {
			// The slot keeps its dead worker (killing it again is a no-op);
			// the other workers carry the load.
			fmt.Println("chaos:", err)
		}
		f.End = time.Now().UnixNano()
		log.add(f)
		log.mu.Lock()
		log.workerKills++
		log.mu.Unlock()
	}
}

// stopAll ends every worker gracefully.
func (w *workers) stopAll() {
	w.mu.Lock()
	slots := append([]*proc(nil), w.slots...)
	w.mu.Unlock()
	for _, p := range slots {
		if p != nil {
			w.ps.stop(p, 10*time.Second)
		}
	}
}
