package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/heddlewf/heddle/engine/httpapi"
)

// faultLog counts and records the faults of a run.
type faultLog struct {
	mu                                                  sync.Mutex
	faults                                              []Fault
	kills, leaderKills, pauses, partitions, workerKills int
	moves                                               int
}

func (l *faultLog) add(f Fault) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.faults = append(l.faults, f)
}

func (l *faultLog) all() []Fault {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Fault(nil), l.faults...)
}

// between returns a random duration in [lo, hi).
func between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.Int64N(int64(hi-lo)))
}

// nodeFaults injects one node or network fault after another until ctx
// ends, each followed by a wait for the cluster to heal. The leader is the
// favourite target: it is where fencing and failover are hardest.
func (c *cluster) nodeFaults(ctx context.Context, r *rand.Rand, log *faultLog, say func(string, ...any)) {
	for ctx.Err() == nil {
		if !c.waitHealthy(ctx, 60*time.Second) {
			if ctx.Err() != nil {
				return
			}
			say("cluster not healthy after 60s; injecting the next fault anyway")
		}
		sleepCtx(ctx, between(r, 300*time.Millisecond, 1500*time.Millisecond))
		if ctx.Err() != nil {
			return
		}
		lead := c.leader(ctx)
		if lead == nil {
			continue
		}
		other := c.nodes[r.IntN(len(c.nodes))]
		for other == lead {
			other = c.nodes[r.IntN(len(c.nodes))]
		}
		hold := between(r, 1500*time.Millisecond, 4*time.Second)
		f := Fault{Start: time.Now().UnixNano()}
		switch p := r.IntN(100); {
		case c.shards > 0 && p < 15:
			f.Kind, f.Target = c.moveReplica(ctx, r, say)
			if f.Kind == "" {
				continue // no move could be asked now
			}
			log.mu.Lock()
			log.moves++
			log.mu.Unlock()
		case p < 52:
			f.Kind, f.Target = "kill-leader", lead.id
			c.killRestart(ctx, lead, between(r, 200*time.Millisecond, 2*time.Second))
			log.mu.Lock()
			log.kills++
			log.leaderKills++
			log.mu.Unlock()
		case p < 58:
			f.Kind, f.Target = "kill", other.id
			c.killRestart(ctx, other, between(r, 200*time.Millisecond, 2*time.Second))
			log.mu.Lock()
			log.kills++
			log.mu.Unlock()
		case p < 70:
			n := lead
			if r.IntN(3) == 0 {
				n = other
			}
			f.Kind, f.Target = "pause", n.id
			c.pause(ctx, n, hold)
			log.mu.Lock()
			log.pauses++
			log.mu.Unlock()
		default:
			f.Kind, f.Target = c.partition(ctx, r, p, lead, other, hold)
			log.mu.Lock()
			log.partitions++
			log.mu.Unlock()
		}
		f.End = time.Now().UnixNano()
		log.add(f)
		say("fault %s %s for %v", f.Kind, f.Target, time.Duration(f.End-f.Start).Round(time.Millisecond))
	}
}

func (c *cluster) killRestart(ctx context.Context, n *node, down time.Duration) {
	c.ps.kill(n.proc)
	sleepCtx(context.WithoutCancel(ctx), down)
	if err := c.start(n); err != nil {
		// The next health check reports the node as down; the run's end
		// tries once more.
		fmt.Println("chaos:", err)
	}
}

// pause stops n for longer than the election timeout: a paused leader
// wakes up still believing it leads.
func (c *cluster) pause(ctx context.Context, n *node, hold time.Duration) {
	n.proc.signal(syscall.SIGSTOP)
	n.paused = true
	sleepCtx(context.WithoutCancel(ctx), hold)
	n.proc.signal(syscall.SIGCONT)
	n.paused = false
}

func both(a, b string) []Pair { return []Pair{{a, b}, {b, a}} }

// partition cuts the network in one of four shapes and heals it.
func (c *cluster) partition(ctx context.Context, r *rand.Rand, p int, lead, other *node, hold time.Duration) (string, string) {
	bg := context.WithoutCancel(ctx)
	defer c.proxy.Heal()
	var cut []Pair
	switch {
	case p < 82:
		for _, n := range c.nodes {
			if n != lead {
				cut = append(cut, both(lead.id, n.id)...)
			}
		}
		c.proxy.SetRules(cut, nil)
		sleepCtx(bg, hold)
		return "isolate-leader", lead.id
	case p < 90:
		for _, n := range c.nodes {
			if n != other {
				cut = append(cut, both(other.id, n.id)...)
			}
		}
		c.proxy.SetRules(cut, nil)
		sleepCtx(bg, hold)
		return "cut-minority", other.id
	case p < 95:
		// One direction only: the leader can no longer reach a follower,
		// which can still reach the leader.
		c.proxy.SetRules([]Pair{{lead.id, other.id}}, nil)
		sleepCtx(bg, hold)
		return "one-way", lead.id + "->" + other.id
	default:
		end := time.Now().Add(hold + 2*time.Second)
		on := false
		for time.Now().Before(end) {
			on = !on
			if on {
				c.proxy.SetRules(both(lead.id, other.id), map[Pair]time.Duration{})
			} else {
				c.proxy.SetRules(nil, map[Pair]time.Duration{{lead.id, other.id}: 20 * time.Millisecond})
			}
			sleepCtx(bg, between(r, 100*time.Millisecond, 600*time.Millisecond))
		}
		return "flap", lead.id + "<->" + other.id
	}
}

// moveReplica moves a replica of a random shard, its leader's half the
// time, to the node that holds none of it, and waits (up to a minute) for
// the move to end. It returns the fault's kind and target, or "" when no
// node could be asked or the move was refused.
func (c *cluster) moveReplica(ctx context.Context, r *rand.Rand, say func(string, ...any)) (string, string) {
	var st httpapi.ClusterStatus
	var asked *node
	for _, n := range c.nodes {
		if n.paused || n.proc == nil || n.proc.exited() {
			continue
		}
		var err error
		if st, err = c.status(ctx, n); err == nil && len(st.Shards) > 0 {
			asked = n
			break
		}
	}
	if asked == nil {
		return "", ""
	}
	s := st.Shards[r.IntN(len(st.Shards))]
	if len(s.Replicas) == 0 || s.MoveTo != "" {
		return "", ""
	}
	from := s.Replicas[r.IntN(len(s.Replicas))]
	if r.IntN(2) == 0 && s.LeaderID != "" {
		from = s.LeaderID
	}
	to := ""
	for _, n := range c.nodes {
		if !slices.Contains(s.Replicas, n.id) {
			to = n.id
		}
	}
	if to == "" {
		return "", ""
	}
	mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err := asked.status.MoveReplica(mctx, s.Shard, from, to)
	cancel()
	if err != nil {
		say("moving shard %d from %s to %s was refused: %v", s.Shard, from, to, err)
		return "", ""
	}
	target := fmt.Sprintf("shard %d %s->%s", s.Shard, from, to)
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if done := c.moved(ctx, s.Shard, to); done {
			return "move", target
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	say("the move of %s had not ended after a minute; going on", target)
	return "move", target
}

// moved reports whether some node's status shows shard k on node to with
// no move under way.
func (c *cluster) moved(ctx context.Context, k int, to string) bool {
	for _, n := range c.nodes {
		if n.paused || n.proc == nil || n.proc.exited() {
			continue
		}
		st, err := c.status(ctx, n)
		if err != nil {
			continue
		}
		for _, s := range st.Shards {
			if s.Shard == k && s.MoveTo == "" && slices.Contains(s.Replicas, to) {
				return true
			}
		}
	}
	return false
}
