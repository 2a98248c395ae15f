package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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
	return p, nil
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

func (h *Handler) memberStatus(ctx context.Context, base, token string) (*engine.ClusterStatus, error) {
	_, body, err := h.memberGet(ctx, base+"/v1/cluster?stale=1", token)
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
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, nil, err
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
