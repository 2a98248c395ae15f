package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/backoff"
)

// How a Client routes on a sharded cluster (docs/sharding.md, "Routing"):
// a node's answer carries the placement header; from then on the client
// keeps the cluster's shard map (GET /v1/cluster/shards) and sends each
// request that belongs to one shard straight to that shard's leader. The
// map is fetched again before the next routed request when a node names a
// newer placement, when a routed request had to be forwarded, or when a
// routed try failed. Claims go to every node at once.

// shardView is what a Client knows of a sharded cluster's placement.
type shardView struct {
	version uint64
	count   int
	// nodes are the nodes' base URLs, in the placement's order.
	nodes []string
	// leaders holds each shard's leader's base URL ("" unknown).
	leaders []string
}

// shardState is a Client's routing state; the zero value routes nothing.
type shardState struct {
	mu      sync.Mutex // guards view
	view    *shardView
	sharded bool // a node said the cluster is sharded
	stale   bool // fetch the map before the next routed request
	// refreshing is held while the map is fetched, so only one fetch runs.
	refreshing sync.Mutex
	// probed is set once a node answered the client's question whether the
	// cluster is sharded (probeShards).
	probed atomic.Bool
}

func (s *shardState) current() (view *shardView, sharded, stale bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view, s.sharded, s.stale
}

func (s *shardState) markStale() {
	s.mu.Lock()
	s.stale = true
	s.mu.Unlock()
}

// noteHeaders reads what an answer says of the placement: the placement
// header (the cluster is sharded; a newer version makes the map stale),
// and, for a request routed by the map, whether a node forwarded it.
func (s *shardState) noteHeaders(h http.Header, routed bool) {
	v := h.Get(placementHeader)
	forwarded := routed && h.Get(forwardedByHeader) != ""
	if v == "" && !forwarded {
		return
	}
	count, version, ok := parsePlacementHeader(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok && count > 1 {
		s.sharded = true
		if s.view == nil || version > s.view.version {
			s.stale = true
		}
	}
	if forwarded {
		s.stale = true
	}
}

// parsePlacementHeader reads "<shards> <version>".
func parsePlacementHeader(v string) (count int, version uint64, ok bool) {
	a, b, found := strings.Cut(v, " ")
	if !found {
		return 0, 0, false
	}
	n, err1 := strconv.Atoi(a)
	ver, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil || n < 1 || n > engine.MaxShards {
		return 0, 0, false
	}
	return n, ver, true
}

// routeOf returns the base URL of the leader of rq's shard when the client
// routes by shard and rq belongs to one shard whose leader it knows, and
// the shard (-1: not routed). It fetches the map first when it is stale.
func (c *Client) routeOf(ctx context.Context, rq request) (string, int) {
	if rq.noRoute || c.pinned {
		return "", -1
	}
	view, sharded, stale := c.shards.current()
	if !sharded {
		return "", -1
	}
	if stale || view == nil {
		c.refreshShards(ctx)
		view, _, _ = c.shards.current()
	}
	if view == nil {
		return "", -1
	}
	k, ok := shardOfRequest(rq, view.count)
	if !ok || view.leaders[k] == "" {
		return "", -1
	}
	return view.leaders[k], k
}

// refreshShards fetches the shard map, unless another call is fetching it.
func (c *Client) refreshShards(ctx context.Context) {
	if !c.shards.refreshing.TryLock() {
		return
	}
	defer c.shards.refreshing.Unlock()
	_, _ = c.fetchShards(ctx)
}

// fetchShards asks any node for the shard map and keeps it when it is one;
// it returns whether a node answered at all (a node of a cluster of one
// group answers with an error) and the error.
func (c *Client) fetchShards(ctx context.Context) (answered bool, err error) {
	var m engine.ShardMap
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	err = c.do(ctx, request{method: http.MethodGet, path: "/v1/cluster/shards", out: &m, noRoute: true})
	var te *transportError
	answered = err == nil || (!errors.As(err, &te) && ctx.Err() == nil)
	if err != nil || m.Shards < 1 || len(m.Leaders) != m.Shards {
		return answered, err // routed requests go through any node meanwhile
	}
	base := c.preferred()
	v := &shardView{version: m.Version, count: m.Shards, leaders: make([]string, m.Shards)}
	byID := map[string]string{}
	for _, n := range m.Nodes {
		if n.HTTPAddr == "" {
			continue
		}
		u := hintURL(base, n.HTTPAddr)
		byID[n.ID] = u
		v.nodes = append(v.nodes, u)
	}
	for k, id := range m.Leaders {
		v.leaders[k] = byID[id]
	}
	c.shards.mu.Lock()
	c.shards.view, c.shards.stale = v, false
	if m.Shards > 1 {
		c.shards.sharded = true
	}
	c.shards.mu.Unlock()
	return true, nil
}

// probeShards asks, once in a client's life, whether the cluster is
// sharded, before the client's first long poll for work. A client learns it
// from the placement header of any answer, but a worker's first request is
// often its long poll, whose answer comes only when the poll ends: sent to
// one node of a sharded cluster as to a cluster of one group, it would wait
// there, blind to the work of the shards other nodes lead, until its wait
// ran out. A node of a cluster of one group answers the question with an
// error, after which the client polls as it always did.
func (c *Client) probeShards(ctx context.Context) {
	if c.pinned || c.shards.probed.Load() {
		return
	}
	if _, sharded, _ := c.shards.current(); sharded {
		c.shards.probed.Store(true)
		return
	}
	c.shards.refreshing.Lock()
	defer c.shards.refreshing.Unlock()
	if c.shards.probed.Load() {
		return
	}
	if answered, _ := c.fetchShards(ctx); answered {
		c.shards.probed.Store(true)
	}
}

// shardView returns the map when the client routes by shard, else nil.
func (c *Client) shardView(ctx context.Context) *shardView {
	if c.pinned {
		return nil
	}
	view, sharded, stale := c.shards.current()
	if !sharded {
		return nil
	}
	if stale || view == nil {
		c.refreshShards(ctx)
		view, _, _ = c.shards.current()
	}
	return view
}

// shardOfRequest returns the shard rq belongs to: a command's
// (engine.ShardOfCommand), or a read's by its path.
func shardOfRequest(rq request, count int) (int, bool) {
	if cmd, ok := rq.body.(engine.Command); ok {
		k, route := engine.ShardOfCommand(cmd, count)
		return k, route == engine.RouteOne && k >= 0 && k < count
	}
	if rq.method != http.MethodGet {
		return 0, false
	}
	rest, ok := strings.CutPrefix(rq.path, "/v1/")
	if !ok {
		return 0, false
	}
	kind, rest, _ := strings.Cut(rest, "/")
	seg, _, _ := strings.Cut(rest, "/")
	if seg == "" {
		return 0, false
	}
	name, err := url.PathUnescape(seg)
	if err != nil {
		return 0, false
	}
	var k int
	switch kind {
	case "jobs", "tasks":
		n, err := strconv.ParseUint(name, 10, 64)
		if err != nil {
			return 0, false
		}
		k = engine.ShardOfJob(engine.JobID(n))
	case "workflows", "schedules", "manifests":
		k = engine.ShardOfKey(name, count)
	default:
		return 0, false
	}
	return k, k < count
}

// Fan-out of claims over the nodes of a sharded cluster: each node claims
// from the shards it leads, so a worker polls every node at once, and its
// cost grows with the nodes, not with the shards.

// claimAcross long-polls (with wait) or asks once (without) every node in
// view for cmd and answers with what the first non-empty answer took.
//
// Without wait the others are cancelled at once and waited for; what a
// cancelled claim took anyway is given back by its node, and what two
// answered together, over cmd.Max, the client keeps for the claimer's next
// long poll (clientkept.go). With wait it first takes what is kept for the
// claimer; the other polls are cut on their nodes (POST
// /v1/jobs/claim?cut=1), so that they answer over connections that stay
// open, and claimAcross returns without waiting for them: what they answer
// is kept in the background, and a node whose poll did not answer (the cut
// failed, or took longer than cutGrace, and the poll was cancelled) is
// asked what it took (recallLater).
//
// seen holds the leases answered to the call claimAcross serves (nil: this
// claim alone), over all its rounds (claimRounds): each is handed on once,
// answered, kept or given back, whichever round's poll, cut poll or recall
// brings it.
func (c *Client) claimAcross(ctx context.Context, view *shardView, cmd engine.Claim, wait bool, seen *leaseSet[claimedLease]) ([]engine.ClaimedJob, error) {
	items := func(r *engine.ClaimResult) []engine.ClaimedJob { return r.Jobs }
	var cut func(string) ([]engine.ClaimedJob, error)
	if wait && cmd.RequestID != "" {
		cut = func(base string) ([]engine.ClaimedJob, error) { return c.cutPoll(ctx, base, cmd) }
	}
	// Only a long poll takes kept jobs: a claim without a wait may be a
	// retry under a request id (a worker finding out what a claim cut
	// short took), which must get that claim's jobs, not others.
	var kept func() ([]engine.ClaimedJob, <-chan struct{})
	// fromKept are the leases taken from the kept jobs: each was kept once,
	// and added to seen then, so seen does not refuse them.
	fromKept := map[claimedLease]bool{}
	if wait {
		kept = func() ([]engine.ClaimedJob, <-chan struct{}) {
			got, ch := c.takeKept(cmd, max(cmd.Max, 1))
			for _, j := range got {
				fromKept[leaseOf(j)] = true
			}
			return got, ch
		}
	}
	asked := time.Now() // no lease this claim's polls take began before
	got, rest, err := fanOut(ctx, c, view, "/v1/jobs/claim", &cmd, wait, items, cut, kept)
	// seen holds each lease answered, by job and attempt: a cut poll may
	// claim the next attempt of a job this claim took (the job's turn
	// ended and it became ready again before the cut reached that node),
	// and that lease is a job of its own to hand on.
	if seen == nil {
		seen = newLeaseSet[claimedLease]()
	}
	var jobs, surplus []engine.ClaimedJob
	for _, j := range got {
		switch {
		case !seen.add(leaseOf(j)) && !fromKept[leaseOf(j)]:
			// The same claim answered twice (a shard's leadership moved
			// between two nodes' polls under one request id), or a lease
			// a recall or a cut poll answered first.
		case len(jobs) < max(cmd.Max, 1):
			jobs = append(jobs, j)
		default:
			surplus = append(surplus, j)
		}
	}
	if rest != nil {
		go func() {
			r := <-rest
			var back []engine.ClaimedJob
			for _, j := range r.items {
				if seen.add(leaseOf(j)) {
					back = append(back, j)
				}
			}
			c.keep(cmd, back, asked)
			c.recallLater(r.unsure, cmd, seen)
		}()
	}
	if !wait {
		// A claim without a wait may be a retry under the request id of
		// a long poll cut short (a worker finding out what it took, to
		// give it back): what it answers goes to its caller, so it must
		// not also wait in the kept set, where a cut poll of that long
		// poll may have put it, for the claimer's next long poll.
		c.dropKept(cmd, got)
	}
	c.keep(cmd, surplus, asked)
	if len(jobs) > 0 {
		return jobs, nil
	}
	return nil, err
}

// claimedLease names one lease a claim answered: a job and its attempt.
type claimedLease struct {
	job     engine.JobID
	attempt uint64
}

func leaseOf(j engine.ClaimedJob) claimedLease { return claimedLease{j.Job, j.Attempt} }

// leaseSet is the leases the claims of one long poll's call answered
// (claimAcross's seen), shared by its rounds and by what their cut polls
// answer later, in the background: safe for concurrent use.
type leaseSet[L comparable] struct {
	mu sync.Mutex
	m  map[L]bool
}

func newLeaseSet[L comparable]() *leaseSet[L] { return &leaseSet[L]{m: map[L]bool{}} }

// add adds l and reports whether it was new: whether the caller is the
// one to hand it on.
func (s *leaseSet[L]) add(l L) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[l] {
		return false
	}
	s.m[l] = true
	return true
}

// cutGrace is how long a client waits for the long polls it cut on their
// nodes to answer before it cancels them (closing their connections) and
// leaves what they took to recallLater. A cut is one round trip.
const cutGrace = 2 * time.Second

// cutPoll asks the node at base to end its long polls under cmd's request
// id (POST /v1/jobs/claim?cut=1), which then answer over their own
// connections. A node of an older version, which does not know cut=1,
// claims without a wait instead: it returns what such an answer holds, for
// the caller to tell apart from what the polls took (it may be the same
// claim, replayed under its request id).
func (c *Client) cutPoll(ctx context.Context, base string, cmd engine.Claim) ([]engine.ClaimedJob, error) {
	r, err := cutAt[engine.ClaimResult](ctx, c, base, "/v1/jobs/claim", &cmd)
	return r.Jobs, err
}

// cutAt posts the cut of a claim's long polls (body, a claim under its
// request id) to path?cut=1 at the node at base, within cutGrace, and
// returns the node's answer.
func cutAt[R any](ctx context.Context, c *Client, base, path string, body any) (R, error) {
	var r R
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cutGrace)
	defer cancel()
	payload, err := encodeRequestBody(body)
	if err != nil {
		return r, err
	}
	rq := request{method: http.MethodPost, path: path, body: body, out: &r, command: true, noRoute: true,
		query: url.Values{"cut": {"1"}}}
	_, err = c.try(ctx, base, rq, payload)
	return r, err
}

// releaseSurplus requeues jobs claimed beyond what the caller asked for,
// fenced by their leases, as the server gives back a cut claim's.
func (c *Client) releaseSurplus(ctx context.Context, jobs []engine.ClaimedJob) {
	ctx, cancel := context.WithTimeout(ctx, releaseTimeout)
	defer cancel()
	for _, j := range jobs {
		// A refusal means the lease moved on already; nothing is left to do.
		_, _ = c.Requeue(ctx, engine.Requeue{LeaseRef: j.Lease(), Reason: engine.ReasonReleased})
	}
}

// claimReviewsAcross is claimAcross for review tasks: with a wait, once a
// node answered, the others' polls are cut on their nodes, and what they
// answer after the claim returned is kept for the claimer's next long poll
// (clientkept_tasks.go), as are the tasks beyond cmd.Max. A node whose poll
// did not answer (its cut failed or took longer than cutGrace, and the poll
// was cancelled) is left to the leases of whatever it took: a task has no
// command that gives it back, and none recalls it.
//
// seen is as claimAcross's.
func (c *Client) claimReviewsAcross(ctx context.Context, view *shardView, cmd engine.ClaimReviews, wait bool, seen *leaseSet[reviewLease]) ([]engine.ClaimedReview, error) {
	var cut func(string) ([]engine.ClaimedReview, error)
	if wait && cmd.RequestID != "" {
		cut = func(base string) ([]engine.ClaimedReview, error) { return c.cutReviewPoll(ctx, base, cmd) }
	}
	// Only a long poll takes kept tasks, as only one takes kept jobs: a
	// claim without a wait may be a retry under a request id.
	var kept func() ([]engine.ClaimedReview, <-chan struct{})
	fromKept := map[reviewLease]bool{} // as claimAcross's
	if wait {
		kept = func() ([]engine.ClaimedReview, <-chan struct{}) {
			got, ch := c.takeKeptTasks(cmd, max(cmd.Max, 1))
			for _, t := range got {
				fromKept[leaseOfReview(t)] = true
			}
			return got, ch
		}
	}
	asked := time.Now() // no lease this claim's polls take began before
	got, rest, err := fanOut(ctx, c, view, "/v1/tasks/claim", &cmd, wait, func(r *engine.ClaimReviewsResult) []engine.ClaimedReview { return r.Reviews }, cut, kept)
	// seen holds each lease answered, by task and attempt: the same claim
	// answered by two nodes under one request id (a shard's leadership
	// moved between their polls) is one lease; a task's next attempt is a
	// lease of its own.
	if seen == nil {
		seen = newLeaseSet[reviewLease]()
	}
	var out, surplus []engine.ClaimedReview
	for _, t := range got {
		switch {
		case !seen.add(leaseOfReview(t)) && !fromKept[leaseOfReview(t)]:
		case len(out) < max(cmd.Max, 1):
			out = append(out, t)
		default:
			surplus = append(surplus, t)
		}
	}
	if rest != nil {
		go func() {
			r := <-rest
			var late []engine.ClaimedReview
			for _, t := range r.items {
				if seen.add(leaseOfReview(t)) {
					late = append(late, t)
				}
			}
			c.keepTasks(cmd, late, asked)
		}()
	}
	c.keepTasks(cmd, surplus, asked)
	if len(out) > 0 {
		return out, nil
	}
	return nil, err
}

// reviewLease names one task lease a claim answered: a task and its attempt.
type reviewLease struct {
	review  engine.ReviewID
	attempt uint64
}

func leaseOfReview(t engine.ClaimedReview) reviewLease { return reviewLease{t.Review, t.Attempt} }

// cutReviewPoll is cutPoll for task claims (POST /v1/tasks/claim?cut=1).
// A node of an older version, which does not know cut=1 there, claims
// without a wait instead: what it answers joins the cut polls' late
// answers, kept for the claimer like them.
func (c *Client) cutReviewPoll(ctx context.Context, base string, cmd engine.ClaimReviews) ([]engine.ClaimedReview, error) {
	r, err := cutAt[engine.ClaimReviewsResult](ctx, c, base, "/v1/tasks/claim", &cmd)
	return r.Reviews, err
}

// lateAnswers is what the polls fanOut cut on their nodes answered after
// it returned: their items, and the nodes whose polls ended without an
// answer (what those took is unknown).
type lateAnswers[T any] struct {
	items  []T
	unsure []string
}

// pollAnswer is how one node's poll of fanOut ended.
type pollAnswer[T any] struct {
	base  string
	items []T
	err   error
	// stale is set when the poll ended because its node named a newer
	// placement than the one the polls were sent with (pollNode).
	stale bool
}

// fanOut posts body to path at every node of view, each as long polls
// (wait) or once, until one answers with items.
//
// With cut (a claim's long polls), it then asks cut of every node whose
// poll is still open, and returns at once what answered: the rest ends in
// the background, and rest receives, once, what those polls answered and
// which of them ended without an answer (a failed cut, or a poll still
// open cutGrace later, is cancelled).
//
// Without cut it cancels the others, waits for them and returns every
// item answered; rest is nil.
//
// With kept (a claim's), items kept from earlier polls stand in for an
// answer: kept gives them, or a channel closed once there may be some. With
// some at the start fanOut polls no node.
//
// With cut, a poll whose node answers empty, naming a newer placement than
// view's, ends the fan-out as an answer would, with no items: nodes may
// have joined the cluster or left it since view was read, and a shard's
// leader moved to a node view does not name would otherwise never be
// polled by this call, however long it waits (a worker's long poll has no
// deadline). The other polls are cut as after an answer, and fanOut
// returns nothing and no error: the caller reads the map again and polls
// anew (ClaimWait, ClaimReviewsWait).
//
// It returns an error only when no node answered with items: the first
// one no retry can fix, or ctx's.
func fanOut[R, T any](ctx context.Context, c *Client, view *shardView, path string, body any, wait bool, items func(*R) []T, cut func(base string) ([]T, error),
	kept func() ([]T, <-chan struct{})) (_ []T, rest <-chan lateAnswers[T], _ error) {
	var keptCh <-chan struct{}
	if kept != nil {
		got, ch := kept()
		if len(got) > 0 {
			return got, nil, nil
		}
		keptCh = ch
	}
	// The polls end with ctx until one answered; after that, the ones cut
	// end by their cuts alone (or cutGrace), also when the caller, who
	// has its answer, ends ctx: cancelling them would close their
	// connections.
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if d, ok := ctx.Deadline(); ok {
		// Each poll asks its node for a wait that ends by ctx's deadline.
		pctx, cancel = context.WithDeadline(context.WithoutCancel(ctx), d)
	}
	unfollow := context.AfterFunc(ctx, cancel)
	defer unfollow()
	answers := make(chan pollAnswer[T], len(view.nodes))
	// cutting tells the polls not to poll again once their poll answered:
	// a poll that answered empty after the cut is over.
	var cutting atomic.Bool
	stops := make(map[string]context.CancelFunc, len(view.nodes))
	for _, base := range view.nodes {
		nctx, stop := context.WithCancel(pctx)
		stops[base] = stop
		go func() {
			var since *shardView
			if cut != nil {
				since = view // the polls can be cut: end them when the map changes
			}
			got, stale, err := pollNode(nctx, c, base, path, body, wait, items, &cutting, since)
			answers <- pollAnswer[T]{base, got, err, stale}
		}()
	}
	pending := make(map[string]bool, len(view.nodes))
	for _, base := range view.nodes {
		pending[base] = true
	}
	var out []T
	var firstErr error
	var cancelled []string
	for len(pending) > 0 {
		var a pollAnswer[T]
		select {
		case a = <-answers:
			delete(pending, a.base)
		case <-keptCh:
			// Items were kept meanwhile (a cut poll of an earlier claim
			// answered): they answer this one, as a node's would.
			a.items, keptCh = kept()
		}
		if len(a.items) > 0 || a.stale {
			out = append(out, a.items...)
			if cut != nil && len(pending) > 0 {
				cutting.Store(true)
				unfollow()
				late := make(chan lateAnswers[T], 1)
				go cutRest(pending, answers, stops, cancel, cut, late)
				return out, late, nil
			}
			cancel()
			continue
		}
		if a.err != nil && isContextError(a.err) && ctx.Err() == nil {
			cancelled = append(cancelled, a.base)
		}
		if a.err != nil && firstErr == nil && !isContextError(a.err) {
			firstErr = a.err
			cancel()
		}
	}
	cancel()
	if len(out) > 0 {
		if len(cancelled) > 0 {
			// The polls cancelled after an answer may have claimed at the
			// moment of the cancel: their nodes are asked (recallLater).
			late := make(chan lateAnswers[T], 1)
			late <- lateAnswers[T]{unsure: cancelled}
			return out, late, nil
		}
		return out, nil, nil
	}
	if firstErr != nil {
		return nil, nil, firstErr
	}
	return nil, nil, ctx.Err()
}

// cutRest is fanOut's background once one poll answered: it cuts the
// polls of pending on their nodes, gathers their answers from answers, and
// sends them on late. A poll whose cut failed, or that is still open
// cutGrace later, is cancelled, and its node counted unsure.
func cutRest[T any](pending map[string]bool, answers <-chan pollAnswer[T], stops map[string]context.CancelFunc,
	cancel context.CancelFunc, cut func(string) ([]T, error), late chan<- lateAnswers[T]) {
	defer cancel()
	// A cut may answer items too (a node of an older version claims under
	// the request id instead): they join the polls' late answers, so the
	// caller tells them apart from what it has already.
	var cutsMu sync.Mutex
	var cutItems []T
	var cuts sync.WaitGroup
	for base := range pending {
		cuts.Go(func() {
			got, err := cut(base)
			if err != nil {
				stops[base]()
			}
			cutsMu.Lock()
			cutItems = append(cutItems, got...)
			cutsMu.Unlock()
		})
	}
	grace := time.NewTimer(cutGrace)
	defer grace.Stop()
	var r lateAnswers[T]
	for n := len(pending); n > 0; {
		select {
		case a := <-answers:
			n--
			r.items = append(r.items, a.items...)
			if a.err != nil {
				r.unsure = append(r.unsure, a.base)
			}
		case <-grace.C:
			cancel()
		}
	}
	cuts.Wait() // each ends within cutGrace
	r.items = append(r.items, cutItems...)
	late <- r
}

// recallDelay is how long after cutting a node's long poll the client asks
// that node what the poll took anyway: long enough for a claim the node
// was applying at the cut to be applied (a Raft commit), short against a
// lease.
const recallDelay = 500 * time.Millisecond

// recallLater asks, recallDelay from now, each node at bases whose long
// poll claimAcross cut, what the claims under cmd's request id took there
// (POST /v1/jobs/claim?recall=1, a read), and gives back every such job
// that want does not hold (fenced by its lease, so a job its node gave
// back itself, or that was claimed again since, is left alone). They are
// given back, never kept: a cancelled poll's node may have given them back
// already, so their leases may be over. A poll cut
// just after its node applied a claim may have been answered into a closed
// connection, and its jobs would otherwise wait out their leases. A node
// that cannot be asked is left to the leases.
func (c *Client) recallLater(bases []string, cmd engine.Claim, want *leaseSet[claimedLease]) {
	if len(bases) == 0 || cmd.RequestID == "" {
		return
	}
	payload, err := encodeRequestBody(&cmd)
	if err != nil {
		return
	}
	time.AfterFunc(recallDelay, func() {
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		var back []engine.ClaimedJob
		for _, base := range bases {
			var r engine.ClaimResult
			rq := request{method: http.MethodPost, path: "/v1/jobs/claim", body: &cmd, out: &r, command: true, noRoute: true,
				query: url.Values{"recall": {"1"}}}
			if _, err := c.try(ctx, base, rq, payload); err != nil {
				continue
			}
			for _, j := range r.Jobs {
				if want.add(leaseOf(j)) {
					back = append(back, j)
				}
			}
		}
		// Not kept: a poll that was cancelled may have been given back
		// by its node already (its caller went away), so these leases
		// may be over; the fence sorts that out.
		c.releaseSurplus(ctx, back)
	})
}

// pollNode asks one node, at base, until it answers with items (with wait:
// long polls one after another), or ctx ends, or it answers an error no
// retry can fix. A node that cannot be reached is asked again after a
// backoff: the other nodes are asked meanwhile by their own polls.
//
// Once cutting is set (fanOut cut the polls after another node answered),
// a poll that answers is not followed by another.
//
// With since (the map the fan-out began with), a long poll that answers
// empty while the client's map is stale (this answer, or another, named a
// newer placement) or newer than since is not followed by another either:
// pollNode returns stale, for fanOut to end the fan-out and its caller to
// poll over the new map. The map's version is compared, not only the
// stale mark: another claim of the same client (a worker's task poll
// beside its job poll) may have read the new map, clearing the mark,
// before this poll's answer came.
func pollNode[R, T any](ctx context.Context, c *Client, base, path string, body any, wait bool, items func(*R) []T, cutting *atomic.Bool,
	since *shardView) (_ []T, stale bool, _ error) {
	var payload []byte
	bo := backoff.Backoff{Initial: minBackoff, Max: maxBackoff}
	for {
		rq := request{method: http.MethodPost, path: path, body: body, command: true, noRoute: true}
		if wait {
			w := c.pollWait(ctx)
			if w == 0 {
				<-ctx.Done()
				return nil, false, ctx.Err()
			}
			rq.query, rq.wait = waitQuery(w), w
		}
		var r R
		rq.out = &r
		if payload == nil {
			var err error
			if payload, err = encodeRequestBody(rq.body); err != nil {
				return nil, false, err
			}
		}
		_, err := c.try(ctx, base, rq, payload)
		if got := items(&r); err == nil && len(got) > 0 {
			return got, false, nil
		}
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		switch {
		case err == nil:
			if !wait || cutting.Load() {
				return nil, false, nil
			}
			if since != nil {
				if now, _, stale := c.shards.current(); stale || (now != nil && now.version > since.version) {
					return nil, true, nil
				}
			}
			bo.Reset()
			continue
		case !retryable(err) || cutting.Load():
			return nil, false, err
		}
		if serr := backoff.Sleep(ctx, bo.Next()); serr != nil {
			return nil, false, serr
		}
		if !wait {
			return nil, false, err
		}
	}
}

// splitHeartbeat sends a heartbeat naming leases of several shards as one
// heartbeat per shard, each to its shard's leader, and merges the answers.
func (c *Client) splitHeartbeat(ctx context.Context, cmd engine.Heartbeat) (*engine.HeartbeatResult, error) {
	parts := map[int][]engine.LeaseRef{}
	for _, l := range cmd.Leases {
		parts[engine.ShardOfJob(l.Job)] = append(parts[engine.ShardOfJob(l.Job)], l)
	}
	out := &engine.HeartbeatResult{}
	for _, k := range sortedKeys(parts) {
		part := cmd
		part.Leases = parts[k]
		part.RequestID = ""
		res, err := send[engine.HeartbeatResult](ctx, c, "/v1/jobs/heartbeat", &part, &part.Header)
		if err != nil {
			return nil, err
		}
		if out.LeaseExpiryMS == 0 || res.LeaseExpiryMS < out.LeaseExpiryMS {
			out.LeaseExpiryMS = res.LeaseExpiryMS
		}
		out.Refused = append(out.Refused, res.Refused...)
		out.CancelRequested = append(out.CancelRequested, res.CancelRequested...)
	}
	return out, nil
}

// splitReviewHeartbeat is splitHeartbeat for review task leases.
func (c *Client) splitReviewHeartbeat(ctx context.Context, cmd engine.ReviewHeartbeat) (*engine.ReviewHeartbeatResult, error) {
	parts := map[int][]engine.ReviewLeaseRef{}
	for _, l := range cmd.Leases {
		parts[engine.ShardOfReview(l.Review)] = append(parts[engine.ShardOfReview(l.Review)], l)
	}
	out := &engine.ReviewHeartbeatResult{}
	for _, k := range sortedKeys(parts) {
		part := cmd
		part.Leases = parts[k]
		part.RequestID = ""
		res, err := send[engine.ReviewHeartbeatResult](ctx, c, "/v1/tasks/heartbeat", &part, &part.Header)
		if err != nil {
			return nil, err
		}
		if out.LeaseExpiryMS == 0 || res.LeaseExpiryMS < out.LeaseExpiryMS {
			out.LeaseExpiryMS = res.LeaseExpiryMS
		}
		out.Refused = append(out.Refused, res.Refused...)
	}
	return out, nil
}

// ShardMap returns the cluster's shard map as the node the client asks
// knows it (GET /v1/cluster/shards); ErrNoCluster from a node that is not
// one of a sharded cluster.
func (c *Client) ShardMap(ctx context.Context) (engine.ShardMap, error) {
	var m engine.ShardMap
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/cluster/shards", out: &m, noRoute: true})
	return m, err
}

// SetShardLeader makes node the desired leader of shard (any node forwards
// it to the metadata group's leader) and returns the new placement version.
func (c *Client) SetShardLeader(ctx context.Context, shard int, node string) (uint64, error) {
	var r PlacementChange
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/cluster/shards/" + strconv.Itoa(shard) + "/leader", command: true,
		body: &ShardLeaderRequest{Node: node}, out: &r, noRoute: true})
	return r.Version, err
}

// CancelMove cancels shard's move under way (any node forwards it to the
// metadata group's leader) and returns the placement version that records
// the cancel; the shard's leader then undoes the move, and the shard's
// replicas in the cluster's status show when that ended.
func (c *Client) CancelMove(ctx context.Context, shard int) (uint64, error) {
	var r PlacementChange
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/cluster/shards/" + strconv.Itoa(shard) + "/move/cancel", command: true,
		out: &r, noRoute: true})
	return r.Version, err
}

// RebalanceLeaders sets every shard's desired leader back to the spread.
func (c *Client) RebalanceLeaders(ctx context.Context) (uint64, error) {
	var r PlacementChange
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/cluster/shards/rebalance", command: true, out: &r, noRoute: true})
	return r.Version, err
}

// MoveReplica moves shard's replica on node from to node to (any node
// forwards it to the metadata group's leader) and returns the placement
// version that records the move; the shard's leader carries it out, and
// the shard's replicas in the cluster's status show when it ended.
func (c *Client) MoveReplica(ctx context.Context, shard int, from, to string) (uint64, error) {
	var r PlacementChange
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/cluster/shards/" + strconv.Itoa(shard) + "/move", command: true,
		body: &MoveReplicaRequest{From: from, To: to}, out: &r, noRoute: true})
	return r.Version, err
}
