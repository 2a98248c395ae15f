package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// taskRoutes registers the review task routes (doc.go lists them). They
// need a Service that also implements engine.TaskService, as *embedded.Engine
// does; with another the routes answer no_route.
func (s *Server) taskRoutes() {
	ts, _ := s.cfg.Service.(engine.TaskService)
	need := func(h func(engine.TaskService, *call) (any, error)) handler {
		return func(c *call) (any, error) {
			if ts == nil {
				return nil, fmt.Errorf("%w: this server's service has no review tasks", ErrNoRoute)
			}
			return h(ts, c)
		}
	}
	s.handleTask("POST /v1/tasks", taskClient, need(func(ts engine.TaskService, c *call) (any, error) {
		var cmd engine.CreateTask
		if err := c.decode(&cmd); err != nil {
			return nil, err
		}
		// Who created the task is the server's to say, as for a decision.
		cmd.By = decidedBy(c.r, cmd.By)
		return ts.CreateTask(c.r.Context(), cmd)
	}))
	for _, op := range engine.TaskOps() {
		// One route per human command: the path names the command, the
		// body the task, who decides, and why.
		s.handleTask("POST /v1/tasks/"+string(op), taskClient, need(func(ts engine.TaskService, c *call) (any, error) {
			var cmd engine.TaskCommand
			if err := c.decode(&cmd); err != nil {
				return nil, err
			}
			if cmd.Op != "" && cmd.Op != op {
				return nil, fmt.Errorf("%w: the body's op %q is not the path's %q", engine.ErrInvalidCommand, cmd.Op, op)
			}
			cmd.Op = op
			cmd.By = decidedBy(c.r, cmd.By)
			return ts.TaskCommand(c.r.Context(), cmd)
		}))
	}
	// A Draft job's input, configured before its activation.
	s.handleTask("POST /v1/jobs/configure", taskClient, func(c *call) (any, error) {
		jc, ok := s.cfg.Service.(interface {
			ConfigureJob(context.Context, engine.ConfigureJob) (*engine.StatusResult, error)
		})
		if !ok {
			return nil, fmt.Errorf("%w: this server's service cannot configure jobs", ErrNoRoute)
		}
		return decodeRun(c, jc.ConfigureJob)
	})
	s.handleTask("POST /v1/tasks/claim", taskWorker, need(func(ts engine.TaskService, c *call) (any, error) {
		var cmd engine.ClaimTasks
		if err := c.decode(&cmd); err != nil {
			return nil, err
		}
		wait, err := c.waitParam(0)
		if err != nil {
			return nil, err
		}
		tasks, err := s.claimTasksWait(c.r.Context(), ts, cmd, wait)
		if tasks == nil {
			tasks = []engine.ClaimedTask{} // JSON readers see [], not null
		}
		return &engine.ClaimTasksResult{Tasks: tasks}, err
	}))
	s.handleTask("POST /v1/tasks/report", taskWorker, need(func(ts engine.TaskService, c *call) (any, error) {
		return decodeRun(c, ts.TaskReport)
	}))
	s.handleTask("POST /v1/tasks/heartbeat", taskWorker, need(func(ts engine.TaskService, c *call) (any, error) {
		return decodeRun(c, ts.TaskHeartbeat)
	}))
	s.handleTask("GET /v1/tasks", taskReader, need(func(ts engine.TaskService, c *call) (any, error) {
		job := c.r.URL.Query().Get("job")
		if job == "" {
			return nil, fmt.Errorf("%w: GET /v1/tasks needs ?job=", engine.ErrInvalidCommand)
		}
		tasks, err := ts.ListTasks(c.r.Context(), job)
		return &TaskList{Tasks: tasks}, err
	}))
	s.handleTask("GET "+awaitingPath, taskReader, need(listAwaiting))
	s.handleTask("GET /v1/tasks/{task}", taskReader, need(func(ts engine.TaskService, c *call) (any, error) {
		id, err := taskParam(c)
		if err != nil {
			return nil, err
		}
		return ts.DescribeTask(c.r.Context(), engine.TaskTarget{ID: id})
	}))
	s.handleTask("GET /v1/tasks/{task}/history", taskReader, need(func(ts engine.TaskService, c *call) (any, error) {
		id, err := taskParam(c)
		if err != nil {
			return nil, err
		}
		evs, err := ts.TaskHistory(c.r.Context(), id)
		return &TaskHistory{Events: evs}, err
	}))
	s.handleTask("GET /v1/manifests/{job}", taskReader, need(func(ts engine.TaskService, c *call) (any, error) {
		return ts.TaskManifest(c.r.Context(), c.r.PathValue("job"))
	}))
	s.handleTask("GET /v1/manifests/{job}/phases/{phase}", taskReader, need(func(ts engine.TaskService, c *call) (any, error) {
		return ts.DescribeTask(c.r.Context(), engine.TaskTarget{Job: c.r.PathValue("job"), Phase: c.r.PathValue("phase")})
	}))
}

// taskClaimWaiter is implemented by *embedded.Engine: a task claim that
// waits for commits instead of polling.
type taskClaimWaiter interface {
	ClaimTasksWait(context.Context, engine.ClaimTasks) ([]engine.ClaimedTask, error)
}

// claimTasksWait claims tasks; with a wait it is a long poll that answers
// as soon as it claimed something, or empty when the wait is over.
func (s *Server) claimTasksWait(ctx context.Context, ts engine.TaskService, cmd engine.ClaimTasks, wait time.Duration) ([]engine.ClaimedTask, error) {
	w, ok := ts.(taskClaimWaiter)
	if wait <= 0 || !ok {
		return ts.ClaimTasks(context.WithoutCancel(ctx), cmd)
	}
	pctx, cancel := s.pollContext(ctx, wait)
	defer cancel()
	tasks, err := w.ClaimTasksWait(pctx, cmd)
	if err != nil && pctx.Err() != nil && isContextError(err) {
		return nil, s.pollEnded()
	}
	return tasks, err
}

// taskAccess says who may call a task route: a person steering tasks (or
// a program creating them), a worker or reviewer holding them, or anyone
// who may read.
type taskAccess uint8

const (
	taskClient taskAccess = iota
	taskWorker
	taskReader
)

// handleTask registers a task route. Every task route goes through here,
// so that where tokens carry roles one line maps taskClient, taskWorker
// and taskReader to the client, worker and reader roles.
func (s *Server) handleTask(pattern string, a taskAccess, h handler) {
	s.handle(pattern, [...]Role{taskClient: RoleClient, taskWorker: RoleWorker, taskReader: RoleReader}[a], h)
}

// decidedBy is who created a task or made a human decision on it: the
// caller's identity where tokens or certificates name callers, else the
// request's by (the CLI's --by). A server without tokens names no caller,
// so there the body's by stands: anyone who reaches such a server may do
// anything, as anyone.
func decidedBy(r *http.Request, by string) string {
	if id := identityOf(r); id.Name != "" {
		return id.Name
	}
	return by
}

// TaskList is the answer of GET /v1/tasks.
type TaskList struct {
	Tasks []engine.Task `json:"tasks" msgpack:"tasks"`
}

// TaskHistory is the answer of GET /v1/tasks/{task}/history.
type TaskHistory struct {
	Events []engine.TaskEvent `json:"events" msgpack:"events"`
}

func decodeRun[C, R any](c *call, run func(context.Context, C) (R, error)) (any, error) {
	var cmd C
	if err := c.decode(&cmd); err != nil {
		return nil, err
	}
	return run(c.r.Context(), cmd)
}

func taskParam(c *call) (engine.TaskID, error) {
	s := c.r.PathValue("task")
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("%w: task id %q in the path is not a positive integer", engine.ErrInvalidCommand, s)
	}
	return engine.TaskID(id), nil
}

// taskStateDetail adds the task's state and the commands legal in it to
// the body of an illegal task command, so a 409 says what may be done.
func taskStateDetail(err error, body *ErrorBody) {
	var se *engine.TaskStateError
	if errors.As(err, &se) {
		body.TaskState = se.State.String()
		body.LegalCommands = make([]string, len(se.Legal))
		for i, op := range se.Legal {
			body.LegalCommands[i] = string(op)
		}
		if len(body.LegalCommands) == 0 {
			body.LegalCommands = nil
		}
	}
}

// taskStateError rebuilds the *engine.TaskStateError of an illegal task
// command's answer, or returns nil for any other.
func (e *RemoteError) taskStateError() error {
	if e.Body.Name != "illegal_task_command" {
		return nil
	}
	st, _ := engine.ParseTaskState(e.Body.TaskState)
	se := &engine.TaskStateError{State: st, Command: e.Body.Message}
	for _, op := range e.Body.LegalCommands {
		se.Legal = append(se.Legal, engine.TaskOp(op))
	}
	return se
}

var _ engine.TaskService = (*Client)(nil)

// CreateTask implements engine.TaskService.
func (c *Client) CreateTask(ctx context.Context, cmd engine.CreateTask) (*engine.TaskResult, error) {
	return send[engine.TaskResult](ctx, c, "/v1/tasks", &cmd, &cmd.Header)
}

// TaskCommand implements engine.TaskService.
func (c *Client) TaskCommand(ctx context.Context, cmd engine.TaskCommand) (*engine.TaskResult, error) {
	if cmd.Op == "" {
		return nil, fmt.Errorf("%w: a task command needs an op", engine.ErrInvalidCommand)
	}
	return send[engine.TaskResult](ctx, c, "/v1/tasks/"+url.PathEscape(string(cmd.Op)), &cmd, &cmd.Header)
}

// ClaimTasks implements engine.TaskService.
func (c *Client) ClaimTasks(ctx context.Context, cmd engine.ClaimTasks) ([]engine.ClaimedTask, error) {
	r, err := send[engine.ClaimTasksResult](ctx, c, "/v1/tasks/claim", &cmd, &cmd.Header)
	if err != nil {
		return nil, err
	}
	return r.Tasks, nil
}

// ClaimTasksWait claims with long polls: each waits on the server until a
// task is claimed or the poll's wait ends, and the next one follows at once
// until ctx ends. One request id serves every poll of the call: it is used
// up only by a poll that claimed something, whose retry then gets those
// tasks back.
func (c *Client) ClaimTasksWait(ctx context.Context, cmd engine.ClaimTasks) ([]engine.ClaimedTask, error) {
	if cmd.RequestID == "" {
		cmd.RequestID = randomID("http-")
	}
	return longPoll(ctx, c, "/v1/tasks/claim", &cmd, func(r *engine.ClaimTasksResult) []engine.ClaimedTask { return r.Tasks })
}

// ConfigureJob changes the input of a Draft job before its activation.
func (c *Client) ConfigureJob(ctx context.Context, cmd engine.ConfigureJob) (*engine.StatusResult, error) {
	return send[engine.StatusResult](ctx, c, "/v1/jobs/configure", &cmd, &cmd.Header)
}

// TaskReport implements engine.TaskService.
func (c *Client) TaskReport(ctx context.Context, cmd engine.TaskReport) (*engine.TaskResult, error) {
	return send[engine.TaskResult](ctx, c, "/v1/tasks/report", &cmd, &cmd.Header)
}

// TaskHeartbeat implements engine.TaskService.
func (c *Client) TaskHeartbeat(ctx context.Context, cmd engine.TaskHeartbeat) (*engine.TaskHeartbeatResult, error) {
	return send[engine.TaskHeartbeatResult](ctx, c, "/v1/tasks/heartbeat", &cmd, &cmd.Header)
}

// DescribeTask implements engine.TaskService.
func (c *Client) DescribeTask(ctx context.Context, t engine.TaskTarget) (*engine.Task, error) {
	if t.ID != 0 {
		return read[engine.Task](ctx, c, "/v1/tasks/"+strconv.FormatUint(uint64(t.ID), 10), nil)
	}
	return read[engine.Task](ctx, c, "/v1/manifests/"+url.PathEscape(t.Job)+"/phases/"+url.PathEscape(t.Phase), nil)
}

// TaskHistory implements engine.TaskService.
func (c *Client) TaskHistory(ctx context.Context, id engine.TaskID) ([]engine.TaskEvent, error) {
	r, err := read[TaskHistory](ctx, c, "/v1/tasks/"+strconv.FormatUint(uint64(id), 10)+"/history", nil)
	if err != nil {
		return nil, err
	}
	return r.Events, nil
}

// ListTasks implements engine.TaskService.
func (c *Client) ListTasks(ctx context.Context, job string) ([]engine.Task, error) {
	r, err := read[TaskList](ctx, c, "/v1/tasks", url.Values{"job": {job}})
	if err != nil {
		return nil, err
	}
	return r.Tasks, nil
}

// TaskManifest implements engine.TaskService.
func (c *Client) TaskManifest(ctx context.Context, job string) (*engine.Manifest, error) {
	return read[engine.Manifest](ctx, c, "/v1/manifests/"+url.PathEscape(job), nil)
}
