package httpapi

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// Server-side cuts of a sharded node's claim long polls (docs/sharding.md,
// "Claims"). A client polls every node of a sharded cluster and keeps the
// first answer. Cancelling the other polls would close their connections
// (Go's HTTP/1.1 client closes the connection of a cancelled request), so
// every claim would cost new connections, and under TLS handshakes, and a
// claim applied at the moment of the cut would be answered into a closed
// connection and need a recall. Instead the client asks each node
// POST /v1/jobs/claim?cut=1 with the claim's request id: the node ends its
// waiting polls under that id, which answer as a poll whose wait ran out
// (empty, or with what a claim being applied took), over their connections,
// which stay open for the next request.

// Bounds of the cuts a node remembers for polls that have not arrived yet.
const (
	// earlyCutTTL is how long a cut that found no poll waiting under its
	// request id is kept for a poll that arrives later (one sent just
	// before the cut, still on its way). A poll is on its way for a
	// network round trip, not seconds.
	earlyCutTTL = 5 * time.Second
	// maxEarlyCuts bounds the cuts kept that way, whatever clients send:
	// past it the oldest are forgotten (their polls, if they come, wait
	// out their wait, or are cancelled by their client).
	maxEarlyCuts = 4096
	// maxCutIDBytes bounds the request id a cut names: the longest name
	// any engine's Limits allow (Limits.MaxNameBytes is at most 4096), so
	// no claim under a longer id can exist to cut. Without it an early
	// cut would keep whatever the body held (up to MaxBodyBytes) for each
	// of maxEarlyCuts ids, gigabytes in all.
	maxCutIDBytes = 4096
)

// pollCuts is a Server's registry of the claim polls waiting under each
// request id, and of the cuts that came before their poll. The zero value
// is not usable: see newPollCuts.
type pollCuts struct {
	mu      sync.Mutex
	waiting map[string]map[*pollWaiter]struct{}
	// early holds the cuts that found no poll waiting, with when they came;
	// a poll that arrives under such an id takes the cut (once) and ends
	// at once. now is the clock (tests replace it).
	early map[string]time.Time
	now   func() time.Time
}

// pollWaiter is one waiting poll: cancel ends its wait.
type pollWaiter struct {
	cancel context.CancelFunc
}

func newPollCuts() *pollCuts {
	return &pollCuts{waiting: map[string]map[*pollWaiter]struct{}{}, early: map[string]time.Time{}, now: time.Now}
}

// begin registers a poll under id and returns the context its wait runs
// in, which a cut of id ends (at once if the cut came first), and the func
// that unregisters it.
func (p *pollCuts) begin(parent context.Context, id string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	w := &pollWaiter{cancel: cancel}
	p.mu.Lock()
	if at, ok := p.early[id]; ok {
		delete(p.early, id)
		if p.now().Sub(at) <= earlyCutTTL {
			cancel()
		}
	}
	set := p.waiting[id]
	if set == nil {
		set = map[*pollWaiter]struct{}{}
		p.waiting[id] = set
	}
	set[w] = struct{}{}
	p.mu.Unlock()
	return ctx, func() {
		p.mu.Lock()
		if set := p.waiting[id]; set != nil {
			delete(set, w)
			if len(set) == 0 {
				delete(p.waiting, id)
			}
		}
		p.mu.Unlock()
		cancel()
	}
}

// cut ends the waits of the polls under id; with none waiting it keeps the
// cut for a poll still on its way. It reports how many polls it ended.
func (p *pollCuts) cut(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if set := p.waiting[id]; len(set) > 0 {
		for w := range set {
			w.cancel()
		}
		delete(p.waiting, id)
		return len(set)
	}
	now := p.now()
	if len(p.early) >= maxEarlyCuts {
		p.forgetEarly(now)
	}
	p.early[id] = now
	return 0
}

// forgetEarly drops the expired early cuts, and if that is not enough the
// oldest, so that at most maxEarlyCuts-1 are left. Called with mu held.
func (p *pollCuts) forgetEarly(now time.Time) {
	var oldestID string
	var oldest time.Time
	for id, at := range p.early {
		if now.Sub(at) > earlyCutTTL {
			delete(p.early, id)
			continue
		}
		if oldestID == "" || at.Before(oldest) {
			oldestID, oldest = id, at
		}
	}
	if len(p.early) >= maxEarlyCuts {
		delete(p.early, oldestID)
	}
}

// cutClaim answers POST /v1/jobs/claim?cut=1: it ends this node's long
// polls waiting under cmd's request id, which then answer their clients
// over their own connections. It claims nothing and answers an empty claim
// result (an older node that does not know cut=1 would claim without a
// wait instead; the client gives back what such an answer holds).
func (s *Server) cutClaim(cmd engine.Claim) (any, error) {
	if _, ok := s.cfg.Service.(claimRecaller); !ok {
		return nil, fmt.Errorf("%w: cut=1 is asked of a node of a sharded cluster only", engine.ErrInvalidCommand)
	}
	if err := checkCutID("Claim", cmd.RequestID); err != nil {
		return nil, err
	}
	s.cuts.cut(cmd.RequestID)
	return &engine.ClaimResult{Jobs: []engine.ClaimedJob{}}, nil
}

// checkCutID refuses the request id of a cut of cmd's claims (Claim or
// ClaimReviews) that is missing or longer than maxCutIDBytes.
func checkCutID(cmd, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: cut=1 needs the claim's request id", engine.ErrInvalidCommand)
	case len(id) > maxCutIDBytes:
		// As the engine refuses a claim's over-long name: 413, naming it.
		return fmt.Errorf("%w: %s.RequestID is %d bytes, over the limit of %d (no claim has a longer one to cut)",
			engine.ErrPayloadTooLarge, cmd, len(id), maxCutIDBytes)
	}
	return nil
}

// claimParams reads the cut and recall parameters of a claim (recall
// only where recallServed: job claims). Each is 1, or 0 or absent for a
// claim. Another value is refused rather than read as absent: a caller
// that meant a cut or a recall, which claim nothing, would otherwise
// claim work and hold it under a lease it does not know it has.
func claimParams(q url.Values, recallServed bool) (cut, recall bool, err error) {
	flag := func(name string) (bool, error) {
		switch v := q.Get(name); v {
		case "", "0":
			return false, nil
		case "1":
			return true, nil
		default:
			return false, fmt.Errorf("%w: %s=%q: want 1 (or 0)", engine.ErrInvalidCommand, name, v)
		}
	}
	if cut, err = flag("cut"); err != nil {
		return false, false, err
	}
	if recall, err = flag("recall"); err != nil {
		return false, false, err
	}
	switch {
	case recall && !recallServed:
		return false, false, fmt.Errorf("%w: recall=1 is served for job claims (POST /v1/jobs/claim) only", engine.ErrInvalidCommand)
	case cut && recall:
		return false, false, fmt.Errorf("%w: cut=1 and recall=1 together: a claim is cut or recalled, not both", engine.ErrInvalidCommand)
	}
	return cut, recall, nil
}
