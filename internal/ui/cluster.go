package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
)

// clusterData is the cluster page's.
type clusterData struct {
	// Alone: the node runs without a cluster (heddle dev); Self is then
	// its readiness only.
	Alone bool
	// Status is this node's view: its state, the leader, the term and
	// its indexes.
	Status  engine.ClusterStatus
	Members []memberView
	Self    memberView
	// ShardCount is the shard count of a sharded cluster (0 on a cluster
	// of one Raft group: the page then has no shards table). Shards are
	// the rows of one page of them, shards ShardFrom to ShardTo-1; the
	// page is bounded (shardPageSize) whatever the shard count.
	ShardCount         int
	Shards             []shardView
	ShardFrom, ShardTo int
	// PrevShards and NextShards link the pages of shards before and after
	// this one ("" when there is none).
	PrevShards, NextShards string
}

// shardPageSize is how many shards' rows the cluster page shows at once: a
// cluster of 4,096 shards is 16 pages, each as quick to render as a small
// cluster's.
const shardPageSize = 256

// shardView is one shard's row, from every member's view of it, as
// "heddle cluster status" prints it.
type shardView struct {
	Shard int
	// Leader is the member that says it leads the shard, else the leader
	// a replica knows of ("" when none is known); Desired is the one the
	// placement wants.
	Leader, Desired string
	Term            uint64
	// Commit is the leader's commit index (the highest a replica
	// reported, when the leader did not answer).
	Commit   uint64
	Replicas []replicaView
	// MoveFrom and MoveTo name a move of a replica under way, and
	// MoveCancelling says it was cancelled and is being undone.
	MoveFrom, MoveTo string
	MoveCancelling   bool
	// Answered: some replica of the shard answered.
	Answered bool

	leaderApplied uint64
	seenLeader    bool
	applied       map[string]uint64
}

// Moved reports whether the shard is led by another node than the one the
// placement wants.
func (s shardView) Moved() bool { return s.Leader != "" && s.Desired != "" && s.Leader != s.Desired }

// replicaView is one replica of a shard and its lag: the entries its leader
// applied to its state that it has not. Known is false when its member did
// not answer (the page shows "?").
type replicaView struct {
	ID    string
	Lag   uint64
	Known bool
}

// memberView is one member, as it answers for itself.
type memberView struct {
	engine.ClusterMember
	Self bool
	// Status is the member's own view of the cluster (nil when it did not
	// answer: StatusError says why).
	Status      *engine.ClusterStatus
	StatusError string
	// Ready: the member's /readyz answered that it is ready; else NotWhy
	// says why not. Checked: the member was asked.
	Ready   bool
	NotWhy  string
	Checked bool
}

func (h *Handler) cluster(rq *request) (*page, error) {
	d := &clusterData{}
	p := &page{Template: "cluster.html", Title: "Cluster", Nav: "cluster", Data: d}
	st, err := rq.api.Status(rq.ctx)
	if errors.Is(err, httpapi.ErrNoCluster) {
		d.Alone = true
		d.Self = memberView{Self: true, Checked: true}
		d.Self.Ready, d.Self.NotWhy = readiness(rq.api.get(rq.ctx, "/readyz"))
		return p, nil
	}
	if err != nil {
		return nil, err
	}
	d.Status = st
	d.Members = make([]memberView, len(st.Members))
	var wg sync.WaitGroup
	for i, m := range st.Members {
		d.Members[i] = memberView{ClusterMember: m, Self: m.ID == st.ID}
		mv := &d.Members[i]
		if mv.Self {
			own := st
			mv.Status, mv.Checked = &own, true
			mv.Ready, mv.NotWhy = readiness(rq.api.get(rq.ctx, "/readyz"))
			continue
		}
		if m.HTTPAddr == "" {
			mv.StatusError = "no HTTP address known"
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.probeMember(rq.ctx, mv)
		}()
	}
	wg.Wait()
	d.shardRows(rq.r.URL.Query().Get("shards"))
	return p, nil
}

// shardRows fills the shards table of a sharded cluster from the members'
// answers: the page of shards that starts at from (a shard number; the
// first page when it is not one), at most shardPageSize rows. Only the
// shards of the page are gathered, so the page's work and memory are
// bounded by the members' answers, not the shard count.
func (d *clusterData) shardRows(from string) {
	for _, m := range d.Members {
		if m.Status != nil {
			d.ShardCount = max(d.ShardCount, m.Status.ShardCount)
		}
	}
	if d.ShardCount == 0 {
		return
	}
	first, err := strconv.Atoi(from)
	if err != nil || first < 0 || first >= d.ShardCount {
		first = 0
	}
	first -= first % shardPageSize
	d.ShardFrom, d.ShardTo = first, min(first+shardPageSize, d.ShardCount)
	link := func(from int) string { return Path + "/cluster?shards=" + strconv.Itoa(from) + "#shards" }
	if first > 0 {
		d.PrevShards = link(first - shardPageSize)
	}
	if d.ShardTo < d.ShardCount {
		d.NextShards = link(d.ShardTo)
	}
	d.Shards = make([]shardView, d.ShardTo-d.ShardFrom)
	for i := range d.Shards {
		d.Shards[i] = shardView{Shard: d.ShardFrom + i, applied: map[string]uint64{}}
	}
	for _, m := range d.Members {
		if m.Status == nil {
			continue
		}
		for _, sh := range m.Status.Shards {
			if sh.Shard < d.ShardFrom || sh.Shard >= d.ShardTo {
				continue
			}
			r := &d.Shards[sh.Shard-d.ShardFrom]
			r.Answered = true
			r.applied[m.ID] = sh.AppliedIndex
			if len(sh.Replicas) > 0 {
				r.Replicas = make([]replicaView, len(sh.Replicas))
				for i, id := range sh.Replicas {
					r.Replicas[i].ID = id
				}
			}
			if sh.DesiredLeader != "" {
				r.Desired = sh.DesiredLeader
			}
			if sh.MoveTo != "" {
				r.MoveFrom, r.MoveTo, r.MoveCancelling = sh.MoveFrom, sh.MoveTo, sh.MoveCancelling
			}
			r.Term = max(r.Term, sh.Term)
			if sh.State == "Leader" {
				r.Leader, r.Commit, r.leaderApplied, r.seenLeader = m.ID, sh.CommitIndex, sh.AppliedIndex, true
			} else if r.Leader == "" {
				r.Leader = sh.LeaderID
			}
			if !r.seenLeader {
				r.Commit = max(r.Commit, sh.CommitIndex)
				r.leaderApplied = max(r.leaderApplied, sh.AppliedIndex)
			}
		}
	}
	for i := range d.Shards {
		r := &d.Shards[i]
		for j := range r.Replicas {
			rp := &r.Replicas[j]
			if a, ok := r.applied[rp.ID]; ok {
				rp.Lag, rp.Known = r.leaderApplied-min(a, r.leaderApplied), true
			}
		}
		r.applied = nil
	}
}

// probeMember asks another member for its status and its readiness (which
// needs no credentials), as this node: with Config.ProbeClient's
// certificate, or Config.ProbeToken. Never with the person's token, which
// would leave the node it was given to (and, on a cluster whose nodes
// serve TLS, travel over plain HTTP when the scheme was wrong).
func (h *Handler) probeMember(ctx context.Context, mv *memberView) {
	base := mv.HTTPAddr
	if !strings.Contains(base, "://") {
		base = h.cfg.ProbeScheme + "://" + base
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultProbeTimeout)
	defer cancel()
	mv.Checked = true
	st, err := h.memberStatus(ctx, base, h.cfg.ProbeToken)
	if err != nil {
		mv.StatusError = err.Error()
	} else {
		mv.Status = st
	}
	mv.Ready, mv.NotWhy = readiness(h.memberGet(ctx, base+"/readyz", ""))
}

// maxMemberStatusBytes bounds a member's answer to /v1/cluster. A node of a
// sharded cluster lists every shard it holds a replica of (about 250 bytes
// each), so 4,096 shards on three nodes is about 1 MiB; 4 MiB leaves room
// for long names and addresses.
const maxMemberStatusBytes = 4 << 20

// maxMemberBytes bounds a member's other answers (its /readyz).
const maxMemberBytes = 1 << 20

func (h *Handler) memberStatus(ctx context.Context, base, token string) (*engine.ClusterStatus, error) {
	_, body, err := h.memberGetLimit(ctx, base+"/v1/cluster?stale=1", token, maxMemberStatusBytes)
	if err != nil {
		return nil, err
	}
	st := new(engine.ClusterStatus)
	if err := json.Unmarshal(body, st); err != nil {
		return nil, fmt.Errorf("its status is not JSON: %w", err)
	}
	return st, nil
}

// memberGet makes one GET of another member, with no retry: a member that
// does not answer at once is shown so.
func (h *Handler) memberGet(ctx context.Context, url, token string) (int, []byte, error) {
	return h.memberGetLimit(ctx, url, token, maxMemberBytes)
}

// memberGetLimit is memberGet of an answer of at most limit bytes: a
// longer one is an error, not a truncated body.
func (h *Handler) memberGetLimit(ctx context.Context, url, token string, limit int64) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := h.cfg.ProbeClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("unreachable: %w", err)
	}
	defer func() { _ = resp.Body.Close() }() // a read-only probe: nothing is lost
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return resp.StatusCode, nil, err
	}
	if int64(len(body)) > limit {
		return resp.StatusCode, nil, fmt.Errorf("its answer is longer than %d bytes", limit)
	}
	if resp.StatusCode != http.StatusOK {
		var eb httpapi.ErrorBody
		if json.Unmarshal(body, &eb) == nil && eb.Message != "" {
			return resp.StatusCode, body, fmt.Errorf("%s", eb.Message)
		}
		return resp.StatusCode, body, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return resp.StatusCode, body, nil
}

// readiness reads a /readyz answer: ready, or why not.
func readiness(_ int, _ []byte, err error) (bool, string) {
	if err != nil {
		return false, err.Error()
	}
	return true, ""
}
