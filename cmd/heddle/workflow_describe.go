package main

// This file is "heddle workflow describe": one run's record, and for a
// closed run the result or failure its last event carries (the job record
// holds only the status, so the outcome is read from the history).

import (
	"context"
	"fmt"

	"github.com/heddlewf/heddle/engine"
)

func runWFDescribe(ctx context.Context, wio wfIO, args []string) error {
	f := newWFFlags(wio, "ID [flags]",
		"Shows one run: status, type, queue, attempt, times, what it waits for, and the\n"+
			"result or failure of a closed run. A workflow id shows its current run.")
	pos, err := f.parse(args, "ID")
	if err != nil {
		return err
	}
	svc, err := f.client()
	if err != nil {
		return err
	}
	j, err := wfDescribe(ctx, svc, pos[0])
	if err != nil {
		return err
	}
	closing, err := wfClosing(ctx, svc, j)
	if err != nil {
		return err
	}
	doc := wfJobOf(j, closing)
	if f.json {
		return wfPrintJSON(wio.out, doc)
	}
	return wfPrintJob(wio.out, doc)
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
