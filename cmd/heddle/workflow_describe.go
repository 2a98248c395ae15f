package main

// This file is "heddle workflow describe": one run's record, and for a
// closed run the result or failure its last event carries (the job record
// holds only the status, so the outcome is read from the history).

import (
	"context"
	"errors"
	"fmt"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/spf13/cobra"
)

func newWFDescribeCommand(g *wfGlobals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe {ID | -w WORKFLOW-ID | -r RUN-ID}",
		Short: "show one run: status, type, queue, attempt, times, pending activities, result or failure",
		Long: "Shows one run: status, type, queue, attempt, times, what it waits for, the steps\n" +
			"of an open run that have not ended (who runs each, its state and last heartbeat),\n" +
			"its pending activities (the try, the last try's failure, when the next try\n" +
			"starts), and the result or failure of a closed run. A workflow id shows its\n" +
			"current run. For a Queued run it says why no worker has taken it: no worker\n" +
			"polls its task queue, none runs its type, or they have no free slot (see\n" +
			"heddle task-queue).",
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
		closing, err := wfClosing(c.ctx, svc, j)
		if err != nil {
			return err
		}
		doc := wfJobOf(j, closing)
		if !j.Status.Terminal() {
			steps, err := svc.Steps(c.ctx, engine.Target{Job: j.ID})
			if err != nil {
				return err
			}
			for _, s := range steps {
				if !s.State.Terminal() {
					doc.Steps = append(doc.Steps, stepDocOf(s))
				}
			}
			if doc.PendingActivities, doc.PendingTruncated, err = wfPendingActivities(c.ctx, svc, j, steps); err != nil {
				return err
			}
		}
		if j.Status == engine.StatusQueued {
			// Why it waits; a node without the task queue view (an
			// older one) answers no_route, and describe goes on without.
			r, err := svc.QueuedReason(c.ctx, engine.Target{Job: j.ID})
			switch {
			case err == nil && r.Queued:
				doc.QueuedReason = &wfQueuedReasonDoc{Code: r.Code, Message: r.Message}
			case err != nil && !errors.Is(err, httpapi.ErrNoRoute):
				return err
			}
		}
		if !c.table() {
			return c.doc(doc)
		}
		return wfPrintJob(c.out, doc)
	})
	return cmd
}

// wfClosing returns the last event of a closed run, nil for an open one.
func wfClosing(ctx context.Context, svc engine.Service, j *engine.Job) (*engine.Event, error) {
	if !j.Status.Terminal() || j.LastSeq == 0 {
		return nil, nil
	}
	page, err := svc.History(ctx, j.ID, j.LastSeq-1, 1)
	if err != nil {
		return nil, err
	}
	if len(page.Events) != 1 {
		return nil, fmt.Errorf("job %d is %s but its history has no event %d", j.ID, j.Status, j.LastSeq)
	}
	return &page.Events[0], nil
}
