package main

// This file holds the flags "heddle schedule create" and "update" share:
// the spec, the workflow to start and the policies. Create needs a spec,
// a type and a queue; update changes only what was given.

import (
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type schedFlags struct {
	fs                      *pflag.FlagSet
	cron, every             []string
	startAt, endAt          string
	jitter, catchup         time.Duration
	typ, queue, workflowID  string
	input                   wfJSONValues
	execTimeout, runTimeout time.Duration
	overlap                 engine.OverlapPolicy
	pauseOnFailure, paused  bool
	note                    string
	remaining               int64
}

func overlapNames() string {
	var names []string
	for p := engine.OverlapSkip; p <= engine.OverlapAllowAll; p++ {
		names = append(names, p.String())
	}
	return strings.Join(names, ", ")
}

func addSchedFlags(cmd *cobra.Command) *schedFlags {
	f := &schedFlags{fs: cmd.Flags(), input: wfJSONValues{repeat: true}}
	fs := f.fs
	fs.StringArrayVar(&f.cron, "cron", nil, "a cron `expression` in UTC (\"0 9 * * MON\", \"@daily\"); repeat for more")
	fs.StringArrayVar(&f.every, "every", nil, "an interval, a `duration` and optionally /OFFSET (\"1h\", \"1h/15m\"); repeat for more")
	fs.StringVar(&f.startAt, "start-at", "", "no time before this RFC 3339 `time`")
	fs.StringVar(&f.endAt, "end-at", "", "no time after this RFC 3339 `time`")
	fs.DurationVar(&f.jitter, "jitter", 0, "delay each action by up to this `duration` (the same delay for a given time on every node)")
	fs.StringVar(&f.typ, "type", "", "workflow `type` to start, as registered on the worker")
	fs.StringVarP(&f.queue, "task-queue", "t", "", "task `queue` whose workers run it")
	fs.StringVarP(&f.workflowID, "workflow-id", "w", "", "base `id` of the runs' workflow ids (default: the schedule id)")
	fs.Var(&f.input, "input", "a workflow argument as `JSON` (strings quoted: '\"x\"'); repeat for more arguments")
	fs.DurationVar(&f.execTimeout, "execution-timeout", 0, "bound each run's whole chain of runs to this `duration`")
	fs.DurationVar(&f.runTimeout, "run-timeout", 0, "bound each run to this `duration`")
	fs.Func("overlap", "what to do when a time comes while a run is open, a `policy`: "+overlapNames()+" (default Skip)", func(s string) error {
		p, err := engine.ParseOverlapPolicy(s)
		f.overlap = p
		return err
	})
	fs.DurationVar(&f.catchup, "catchup-window", 0, "skip times missed by more than this `duration` (default one year; at least 10s)")
	fs.BoolVar(&f.pauseOnFailure, "pause-on-failure", false, "pause when a run fails or times out")
	fs.BoolVar(&f.paused, "paused", false, "the schedule is paused")
	fs.StringVar(&f.note, "note", "", "a `note` kept on the schedule")
	fs.Int64Var(&f.remaining, "remaining-actions", 0, "take at most `N` more actions from the spec (0: no limit)")
	return f
}

// apply writes the flags given into the schedule's parts (every flag for
// create, which starts from zero values).
func (f *schedFlags) apply(spec *engine.ScheduleSpec, act *engine.ScheduleAction, pol *engine.SchedulePolicy, st *engine.ScheduleState, create bool) error {
	set := func(name string) bool { return create || f.fs.Changed(name) }
	if create && len(f.cron)+len(f.every) == 0 {
		return usagef("give at least one --cron or --every")
	}
	if create && (f.typ == "" || f.queue == "") {
		return usagef("--type and --task-queue are required")
	}
	if f.fs.Changed("cron") || f.fs.Changed("every") || create {
		spec.CronExpressions, spec.Intervals = f.cron, nil
		for _, e := range f.every {
			every, offset, _ := strings.Cut(e, "/")
			ed, err := time.ParseDuration(every)
			if err != nil {
				return usagef("--every %q: %v", e, err)
			}
			var od time.Duration
			if offset != "" {
				if od, err = time.ParseDuration(offset); err != nil {
					return usagef("--every %q: offset: %v", e, err)
				}
			}
			spec.Intervals = append(spec.Intervals, engine.ScheduleInterval{EveryMS: ed.Milliseconds(), OffsetMS: od.Milliseconds()})
		}
	}
	for _, t := range []struct {
		name string
		v    string
		dst  *int64
	}{{"start-at", f.startAt, &spec.StartAtMS}, {"end-at", f.endAt, &spec.EndAtMS}} {
		if !set(t.name) {
			continue
		}
		*t.dst = 0
		if t.v != "" {
			at, err := time.Parse(time.RFC3339, t.v)
			if err != nil {
				return usagef("--%s %q is not an RFC 3339 time", t.name, t.v)
			}
			*t.dst = at.UnixMilli()
		}
	}
	if set("jitter") {
		spec.JitterMS = f.jitter.Milliseconds()
	}
	if set("type") {
		act.Type = f.typ
	}
	if set("task-queue") {
		act.Queue = f.queue
	}
	if set("workflow-id") {
		act.WorkflowID = f.workflowID
	}
	if set("input") {
		in, err := f.input.payload()
		if err != nil {
			return usagef("--input: %v", err)
		}
		act.Input = in
	}
	if set("execution-timeout") {
		act.ExecutionTimeoutMS = f.execTimeout.Milliseconds()
	}
	if set("run-timeout") {
		act.RunTimeoutMS = f.runTimeout.Milliseconds()
	}
	if set("overlap") {
		pol.Overlap = f.overlap
	}
	if set("catchup-window") {
		pol.CatchupWindowMS = f.catchup.Milliseconds()
	}
	if set("pause-on-failure") {
		pol.PauseOnFailure = f.pauseOnFailure
	}
	if set("paused") {
		st.Paused = f.paused
	}
	if set("note") {
		st.Note = f.note
	}
	if set("remaining-actions") {
		if f.remaining < 0 {
			return usagef("--remaining-actions %d is negative", f.remaining)
		}
		st.LimitedActions, st.RemainingActions = f.remaining > 0, f.remaining
	}
	if spec.StartAtMS < 0 || spec.EndAtMS < 0 {
		return usagef("--start-at and --end-at must be after 1970")
	}
	for _, e := range spec.CronExpressions {
		if err := engine.ParseCron(e); err != nil {
			return usagef("--cron: %v", err)
		}
	}
	return nil
}
