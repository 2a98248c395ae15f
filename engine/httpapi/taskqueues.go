package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// The task queue view over HTTP (engine.TaskQueueReader).
//
// Pollers are seen by the node that serves their polls, and a worker's
// long poll waits on the node it reached, a follower too, without reaching
// the leader until there is work. So a node answering a describe asks every
// other member for its own view (GET /v1/node/task-queues, with the
// caller's token) and merges them; a member that cannot be asked is named
// in the answer's unreached list. The backlog comes from the store, as any
// read does.

// pollRecorder is implemented by *embedded.Engine: the claim route tells it
// that a worker polls, also while its long poll waits without proposing.
type pollRecorder interface {
	BeginPoll(c engine.Claim) (end func())
}

// taskQueueViewer is implemented by *embedded.Engine: its own view of the
// queues' pollers and rates, without the backlog.
type taskQueueViewer interface {
	TaskQueueViews() []engine.TaskQueueDescription
}

// peerViewTimeout bounds the wait for one member's view; a member that
// has not answered by then is reported unreached.
const peerViewTimeout = 2 * time.Second

// maxPeerViewBytes bounds one member's answer.
const maxPeerViewBytes = 32 << 20

func (s *Server) taskQueueRoutes() {
	if _, ok := s.cfg.Service.(engine.TaskQueueReader); !ok {
		return
	}
	s.handle("GET /v1/task-queues", RoleReader, s.listTaskQueues)
	s.handle("GET /v1/task-queues/{queue}", RoleReader, s.describeTaskQueue)
	s.handle("GET /v1/node/task-queues", RoleReader, s.nodeTaskQueues)
	s.handle("GET /v1/jobs/{job}/queued-reason", RoleReader, s.queuedReason)
	s.handle("GET /v1/workflows/{workflow}/queued-reason", RoleReader, s.queuedReason)
}

// beginPoll records a worker's poll with the Service, when it keeps a
// task queue view; the returned func ends it.
func (s *Server) beginPoll(cmd engine.Claim) func() {
	if pr, ok := s.cfg.Service.(pollRecorder); ok {
		return pr.BeginPoll(cmd)
	}
	return func() {}
}

func (s *Server) describeTaskQueue(c *call) (any, error) {
	tq := s.cfg.Service.(engine.TaskQueueReader)
	d, err := tq.DescribeTaskQueue(c.r.Context(), c.r.PathValue("queue"))
	if err != nil {
		return nil, err
	}
	views, unreached := s.clusterViews(c)
	mergeInto(d, views)
	d.Unreached = unreached
	return d, nil
}

func (s *Server) listTaskQueues(c *call) (any, error) {
	tq := s.cfg.Service.(engine.TaskQueueReader)
	l, err := tq.ListTaskQueues(c.r.Context())
	if err != nil {
		return nil, err
	}
	views, unreached := s.clusterViews(c)
	for i := range l.Queues {
		mergeInto(&l.Queues[i], views)
	}
	// A queue only another member saw polled holds no job (the list
	// names every queue that ever held one): it is added as it is.
	for _, nv := range views {
		for _, v := range nv {
			i, found := slices.BinarySearchFunc(l.Queues, v.Name, byName)
			switch {
			case found:
				continue
			case len(l.Queues) >= engine.MaxTaskQueues:
				l.Truncated = true
				continue
			}
			d := engine.TaskQueueDescription{Name: v.Name, Pollers: []engine.TaskQueuePoller{}, NowMS: v.NowMS}
			mergeInto(&d, views)
			l.Queues = slices.Insert(l.Queues, i, d)
		}
	}
	l.Unreached = unreached
	return l, nil
}

func byName(d engine.TaskQueueDescription, name string) int { return strings.Compare(d.Name, name) }

// nodeTaskQueues answers this node's own view: what the others merge.
func (s *Server) nodeTaskQueues(c *call) (any, error) {
	l := &engine.TaskQueueList{Queues: []engine.TaskQueueDescription{}}
	if v, ok := s.cfg.Service.(taskQueueViewer); ok {
		if views := v.TaskQueueViews(); views != nil {
			l.Queues = views
		}
	}
	return l, nil
}

func (s *Server) queuedReason(c *call) (any, error) {
	t, err := c.target()
	if err != nil {
		return nil, err
	}
	ctx := c.r.Context()
	j, err := s.cfg.Service.Describe(ctx, t)
	if err != nil {
		return nil, err
	}
	if j.Status != engine.StatusQueued {
		return &engine.QueuedReason{}, nil
	}
	d, err := s.cfg.Service.(engine.TaskQueueReader).DescribeTaskQueue(ctx, j.Queue)
	if err != nil {
		return nil, err
	}
	views, _ := s.clusterViews(c)
	mergeInto(d, views)
	if v, ok := s.cfg.Service.(taskQueueViewer); ok && views == nil {
		views = map[string][]engine.TaskQueueDescription{"": v.TaskQueueViews()} // not a cluster: this node's
	}
	polled := map[string]bool{}
	for _, nv := range views {
		for _, q := range engine.PolledQueues(nv) {
			polled[q] = true
		}
	}
	names := make([]string, 0, len(polled))
	for q := range polled {
		names = append(names, q)
	}
	slices.Sort(names)
	return engine.ExplainQueued(j, d, names), nil
}

// mergeInto replaces d's pollers and rates, the answering node's own, by
// the merge of every member's view of its queue (this node's among them);
// with no views (not a cluster) it leaves d as it is.
func mergeInto(d *engine.TaskQueueDescription, views map[string][]engine.TaskQueueDescription) {
	if views == nil {
		return
	}
	d.Pollers = []engine.TaskQueuePoller{}
	d.Stats.AddRate, d.Stats.DispatchRate = 0, 0
	d.LastPollMS, d.LastPoller = 0, ""
	for _, nv := range views {
		if i, ok := slices.BinarySearchFunc(nv, d.Name, byName); ok {
			own := nv[i]
			d.Merge(&own)
		}
	}
}

// clusterViews returns every member's own view of its queues by member id,
// this node's among them, each poller naming its member, and the members
// that could not be asked. Outside a cluster it returns none, and so it
// does for a read of one shard (?shard=k): another node of a sharded
// cluster asks for that shard's backlog alone and merges the views itself.
func (s *Server) clusterViews(c *call) (map[string][]engine.TaskQueueDescription, []string) {
	viewer, ok := s.cfg.Service.(taskQueueViewer)
	if _, pinned := pinnedShard(c.r.Context()); !ok || pinned || s.cfg.Cluster == nil {
		return nil, nil
	}
	ctx := c.r.Context()
	st, err := s.cfg.Cluster.Status(ctx)
	if err != nil || st.ID == "" {
		return nil, nil
	}
	views := map[string][]engine.TaskQueueDescription{st.ID: named(viewer.TaskQueueViews(), st.ID)}
	var unreached []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range st.Members {
		if m.ID == st.ID {
			continue
		}
		if m.HTTPAddr == "" || callerOf(c.r).byCert {
			// A caller known by its certificate cannot be vouched for to
			// another member (its certificate is not passed on).
			unreached = append(unreached, m.ID)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := s.peerViews(ctx, m.HTTPAddr, c.r.Header.Get("Authorization"))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				unreached = append(unreached, m.ID)
				if s.cfg.Logger != nil {
					s.cfg.Logger.Debug("httpapi: a member's task queue view could not be read", "member", m.ID, "error", err)
				}
				return
			}
			views[m.ID] = named(v, m.ID)
		}()
	}
	wg.Wait()
	slices.Sort(unreached)
	return views, unreached
}

// named sorts views by name and names node on each poller.
func named(views []engine.TaskQueueDescription, node string) []engine.TaskQueueDescription {
	for i := range views {
		for k := range views[i].Pollers {
			views[i].Pollers[k].Nodes = []string{node}
		}
	}
	slices.SortFunc(views, func(a, b engine.TaskQueueDescription) int { return strings.Compare(a.Name, b.Name) })
	return views
}

// peerViews asks the member at httpAddr for its own view, once, with the
// caller's Authorization header.
func (s *Server) peerViews(ctx context.Context, httpAddr, authorization string) ([]engine.TaskQueueDescription, error) {
	base := hintURL(s.cfg.ForwardScheme+"://", httpAddr)
	pc := &Client{cfg: ClientConfig{HTTPClient: s.cfg.ForwardClient, RequestTimeout: peerViewTimeout,
		MaxResponseBytes: maxPeerViewBytes}}
	if authorization != "" {
		pc.cfg.Headers = func(context.Context) (map[string]string, error) {
			return map[string]string{"Authorization": authorization}, nil
		}
	}
	var l engine.TaskQueueList
	if _, err := pc.try(ctx, base, request{method: http.MethodGet, path: "/v1/node/task-queues", out: &l}, nil); err != nil {
		return nil, err
	}
	for _, q := range l.Queues {
		if len(q.Pollers) > engine.MaxPollersPerQueue {
			return nil, fmt.Errorf("httpapi: member at %s lists %d pollers of queue %q, over %d", httpAddr, len(q.Pollers), q.Name, engine.MaxPollersPerQueue)
		}
	}
	if len(l.Queues) > engine.MaxTaskQueues {
		return nil, fmt.Errorf("httpapi: member at %s lists %d task queues, over %d", httpAddr, len(l.Queues), engine.MaxTaskQueues)
	}
	return l.Queues, nil
}

var _ engine.TaskQueueReader = (*Client)(nil)

// DescribeTaskQueue implements engine.TaskQueueReader.
func (c *Client) DescribeTaskQueue(ctx context.Context, queue string) (*engine.TaskQueueDescription, error) {
	if queue == "" {
		return nil, fmt.Errorf("%w: a task queue name is required", engine.ErrInvalidCommand)
	}
	return read[engine.TaskQueueDescription](ctx, c, "/v1/task-queues/"+escapeSegment(queue), nil)
}

// ListTaskQueues implements engine.TaskQueueReader.
func (c *Client) ListTaskQueues(ctx context.Context) (*engine.TaskQueueList, error) {
	return read[engine.TaskQueueList](ctx, c, "/v1/task-queues", nil)
}

// QueuedReason implements engine.TaskQueueReader.
func (c *Client) QueuedReason(ctx context.Context, t engine.Target) (*engine.QueuedReason, error) {
	p, err := targetPath(t)
	if err != nil {
		return nil, err
	}
	return read[engine.QueuedReason](ctx, c, p+"/queued-reason", nil)
}
