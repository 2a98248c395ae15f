package main

// This file is "heddle step": the steps of a run (one per activity), each
// with its state from docs/state-machines.md §3, and the answer a person
// gives a step that asks for one (NEEDS_USER). Like "heddle workflow" it
// talks to the HTTP API only.

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/spf13/cobra"
)

func newStepCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "step",
		Short: "list the steps of a run, or answer a step that needs a person",
		Long: "Shows the steps of a heddle run (one per activity) with their states, and answers\n" +
			"a step that waits for a person (NEEDS_USER), through the HTTP API.\n\n" +
			"An ID argument is a workflow id (its current run), or a numeric job (run) id;\n" +
			"-w/--workflow-id and -r/--run-id name a run without that guess.",
		Args: unknownCommandArgs,
		RunE: missingCommand,
	}
	g := addAPIFlags(cmd)
	cmd.AddCommand(newStepListCommand(g), newStepAnswerCommand(g))
	return cmd
}

// stepDoc is one step as -o json prints it.
type stepDoc struct {
	Step     string `json:"step"`
	Activity string `json:"activity,omitempty"`
	State    string `json:"state"`
	Attempt  uint32 `json:"attempt,omitempty"`
	Resource string `json:"resource,omitempty"`
	// Worker runs the step now: the holder of its step lease, or of the
	// run's lease for a step that lease covers.
	Worker          string            `json:"worker,omitempty"`
	LastHeartbeatAt string            `json:"last_heartbeat_at,omitempty"`
	LeaseExpiresAt  string            `json:"lease_expires_at,omitempty"`
	Avoid           []string          `json:"avoid"`
	Capabilities    []string          `json:"capabilities,omitempty"`
	Selector        map[string]string `json:"selector,omitempty"`
	DependsOn       []string          `json:"depends_on,omitempty"`
	WaitingForUnit  bool              `json:"waiting_for_resource,omitempty"`
	Question        json.RawMessage   `json:"question,omitempty"`
	// QuestionBase64 is the question when it is JSON nested too deep to
	// embed (see wfEmbeddable).
	QuestionBase64 []byte `json:"question_base64,omitempty"`
	AnswerDueAt    string `json:"answer_due_at,omitempty"`
	Decision       string `json:"decision,omitempty"`
	// Explicit: the step holds a step lease of its own (a step record).
	Explicit bool `json:"explicit,omitempty"`
	// Paused is set while an operator holds the activity (heddle activity
	// pause); AttemptBase is the tries made before its last reset, and
	// Options the options an operator gave it (heddle activity
	// update-options).
	Paused      *wfPauseDoc             `json:"paused,omitempty"`
	AttemptBase uint32                  `json:"attempt_base,omitempty"`
	Options     *engine.ActivityOptions `json:"options,omitempty"`
	UpdatedAt   string                  `json:"updated_at,omitempty"`
}

// question is what the step asks, in whichever field it is.
func (s stepDoc) question() []byte {
	if len(s.Question) > 0 {
		return s.Question
	}
	return s.QuestionBase64
}

// stepListDoc is step list's document.
type stepListDoc struct {
	WorkflowID string    `json:"workflow_id"`
	JobID      uint64    `json:"job_id"`
	Steps      []stepDoc `json:"steps"`
}

func stepDocOf(s engine.StepInfo) stepDoc {
	d := stepDoc{Step: s.Step, Activity: s.Activity, State: s.State.String(), Attempt: s.Attempt, Resource: s.Resource,
		Worker: s.Worker, LastHeartbeatAt: wfRFC3339(s.LastHeartbeatMS), LeaseExpiresAt: wfRFC3339(s.LeaseExpiryMS),
		Avoid: s.Avoid, Capabilities: s.Capabilities, Selector: s.Selector, DependsOn: s.DependsOn,
		WaitingForUnit: s.WaitingForResource, AnswerDueAt: wfRFC3339(s.AnswerDueMS),
		Decision: string(s.Decision), Explicit: s.Explicit, UpdatedAt: wfRFC3339(s.UpdatedMS),
		AttemptBase: s.AttemptBase, Options: s.Options}
	if p := s.Pause; p != nil {
		d.Paused = &wfPauseDoc{At: wfRFC3339(p.AtMS), By: p.By, Reason: p.Reason}
	}
	d.Question, d.QuestionBase64 = wfPayloadFields(s.Question)
	if d.Avoid == nil {
		d.Avoid = []string{}
	}
	return d
}

func newStepListCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list {ID | -w WORKFLOW-ID | -r RUN-ID}",
		Short: "list a run's steps: state, attempt, resource, worker, last heartbeat, avoid-list",
		Long: "Lists the steps of a run, one per activity, in step order: each one's state\n" +
			"(PENDING, WAITING_DEPS, LEASED, RUNNING, SUCCEEDED, FAILED_RETRYABLE, RETRYING,\n" +
			"FAILED_RESOURCE, SWITCHING_RESOURCE, FAILED_FATAL, FAILED, NEEDS_USER,\n" +
			"LEASE_TIMEOUT), its newest attempt, the resource it holds, the worker running it,\n" +
			"its last heartbeat, the resources it avoids, and the question of a step that\n" +
			"waits for a person. A workflow id lists its current run's steps.",
		Args: cobra.ArbitraryArgs,
	}
	target := addTargetFlags(cmd.Flags())
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		id, _, err := target.args(args)
		if err != nil {
			return err
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		j, err := target.describe(c.ctx, svc, id)
		if err != nil {
			return err
		}
		steps, err := svc.Steps(c.ctx, engine.Target{Job: j.ID})
		if err != nil {
			return err
		}
		doc := stepListDoc{WorkflowID: j.WorkflowID, JobID: uint64(j.ID), Steps: []stepDoc{}}
		for _, s := range steps {
			doc.Steps = append(doc.Steps, stepDocOf(s))
		}
		switch c.format {
		case formatJSON:
			return c.doc(doc)
		case formatJSONL:
			return printLines(c.out, doc.Steps)
		}
		return stepPrintList(c.out, doc)
	})
	return cmd
}

// stepPrintList prints steps as a table, and the question of each step
// that asks one below it.
func stepPrintList(w io.Writer, d stepListDoc) error {
	if len(d.Steps) == 0 {
		_, err := fmt.Fprintf(w, "Run %d of %s has no activity steps yet.\n", d.JobID, wfCell(d.WorkflowID))
		return err
	}
	t := newWFTable(w)
	t.row("STEP", "ACTIVITY", "STATE", "ATTEMPT", "RESOURCE", "WORKER", "HEARTBEAT", "AVOID")
	var asks []stepDoc
	for _, s := range d.Steps {
		state := s.State
		if s.Paused != nil {
			state += " (paused)"
		}
		t.row(wfCell(s.Step), wfCell(s.Activity), state, stepNum(s.Attempt), stepDash(wfCell(s.Resource)),
			stepDash(wfCell(s.Worker)), stepDash(wfRelRFC(s.LastHeartbeatAt)), stepDash(wfCell(strings.Join(s.Avoid, ","))))
		if len(s.question()) > 0 {
			asks = append(asks, s)
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	p := newPrinter(w)
	for _, s := range asks {
		due := ""
		if s.AnswerDueAt != "" {
			due = ", answer due " + wfRelRFC(s.AnswerDueAt)
		}
		p.printf("Step %s asks: %s%s\n", wfCell(s.Step), wfCell(wfPayloadText(s.question(), wfResultWidth)), due)
	}
	return p.err()
}

// stepLine is a step in one line of describe: "Browse RUNNING, attempt 2
// on b2, by w1, heartbeat 3s ago".
func stepLine(s stepDoc) string {
	parts := []string{wfCell(s.Activity) + " " + s.State}
	if s.Paused != nil {
		parts[0] += " (paused)"
	}
	if s.Attempt > 0 {
		parts = append(parts, "attempt "+fmt.Sprint(s.Attempt))
	}
	if s.Resource != "" {
		parts[len(parts)-1] += " on " + wfCell(s.Resource)
	}
	if s.Worker != "" {
		parts = append(parts, "by "+wfCell(s.Worker))
	}
	if s.LastHeartbeatAt != "" {
		parts = append(parts, "heartbeat "+wfRelRFC(s.LastHeartbeatAt))
	}
	if q := s.question(); len(q) > 0 {
		parts = append(parts, "asks "+wfCell(wfPayloadText(q, wfCellWidth)))
	}
	return strings.Join(parts, ", ")
}

func stepNum(n uint32) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func stepDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// stepAnswerDoc is step answer's document.
type stepAnswerDoc struct {
	WorkflowID string `json:"workflow_id"`
	JobID      uint64 `json:"job_id"`
	Step       string `json:"step"`
	State      string `json:"state"`
	Attempt    uint32 `json:"attempt"`
}

func newStepAnswerCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "answer {ID | -w WORKFLOW-ID | -r RUN-ID} STEP {ANSWER | --answer ANSWER}",
		Short: "answer a step that waits for a person (NEEDS_USER)",
		Long: "Answers a step that waits for a person (NEEDS_USER, its question shown by\n" +
			"\"heddle step list\"): the activity runs again with the answer, as the bytes given,\n" +
			"in activity.GetInfo(ctx).Answer. A step that asks nothing is refused.",
		Args: cobra.ArbitraryArgs,
	}
	target := addTargetFlags(cmd.Flags())
	var answer string
	cmd.Flags().StringVar(&answer, "answer", "", "the `answer`, instead of the ANSWER argument")
	cmd.RunE = g.runE(func(c *wfCall, args []string) error {
		rest := []string{"STEP"}
		if !cmd.Flags().Changed("answer") {
			rest = append(rest, "ANSWER")
		}
		id, pos, err := target.args(args, rest...)
		if err != nil {
			return err
		}
		step := pos[0]
		if step == "" {
			return usagef("STEP must not be empty")
		}
		if len(pos) > 1 {
			answer = pos[1]
		}
		svc, err := c.client()
		if err != nil {
			return err
		}
		j, err := target.describe(c.ctx, svc, id)
		if err != nil {
			return err
		}
		res, err := svc.AnswerStep(c.ctx, engine.AnswerStep{Target: engine.Target{Job: j.ID}, Step: step, Answer: []byte(answer)})
		if err != nil {
			return err
		}
		doc := stepAnswerDoc{WorkflowID: j.WorkflowID, JobID: uint64(j.ID), Step: step, State: res.State.String(), Attempt: res.StepAttempt}
		if !c.table() {
			return c.doc(doc)
		}
		_, err = fmt.Fprintf(c.out, "Answered step %s of %s (run %d): %s, attempt %d\n", wfCell(step), wfCell(j.WorkflowID), j.ID, doc.State, doc.Attempt)
		return err
	})
	return cmd
}
