package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
)

// The schedules pages: the list (Temporal's Schedules page) and one
// schedule with its runs and its buttons (pause, unpause, trigger,
// backfill), as "heddle schedule" offers them.

const (
	// schedulePageSize is how many schedules one page lists.
	schedulePageSize = 50
	// maxScheduleRunsRead bounds the runs of one schedule the page reads
	// for their status (its running and recent runs: at most 110).
	maxScheduleRunsRead = 30
)

// scheduleView is one schedule as the pages show it.
type scheduleView struct {
	*engine.Schedule
	// When says when it acts, in words; Overlap its overlap policy's name.
	When, Overlap string
	// MaxBackfill bounds the spec times of one backfill; MaxRecent the
	// runs a schedule remembers.
	MaxBackfill, MaxRecent int
	// Next are its coming action times (none while paused).
	Next []int64
	// Running and Recent are its open runs and the others of those it
	// started last, newest first, with their records when read.
	Running, Recent []scheduleRunView
}

// scheduleRunView is a run a schedule started.
type scheduleRunView struct {
	engine.ScheduleRun
	// Run is the run's record, nil when it was not read (or is gone).
	Run *engine.Job
}

// schedulesData is the list's.
type schedulesData struct {
	Schedules []scheduleView
	After     string
	NextURL   string
}

// scheduleData is one schedule's page.
type scheduleData struct {
	S scheduleView
	// Overlaps are the policies a trigger or a backfill may take.
	Overlaps []string
	// Backfill is what was typed into the backfill form when it failed.
	Backfill backfillForm
}

type backfillForm struct{ Start, End, Overlap string }

// The flash messages of the schedule buttons, by the done= they redirect
// with.
var scheduleDone = map[string]string{
	"pause":    "Schedule paused: it takes no action until it is unpaused.",
	"unpause":  "Schedule unpaused: it acts at its next time.",
	"trigger":  "Triggered: the schedule took one action now.",
	"backfill": "Backfilled: the schedule took the actions of the range.",
}

// loadSchedules reads a page of the schedules.
func loadSchedules(ctx context.Context, api *backend, r *http.Request) (any, error) {
	d := &schedulesData{After: r.URL.Query().Get("after")}
	p, err := api.ListSchedules(ctx, engine.ScheduleListQuery{After: d.After, Limit: schedulePageSize})
	if err != nil {
		return nil, err
	}
	for _, sd := range p.Schedules {
		d.Schedules = append(d.Schedules, newScheduleView(sd))
	}
	if p.Next != "" {
		d.NextURL = Path + "/schedules?" + url.Values{"after": {p.Next}}.Encode()
	}
	return d, nil
}

func newScheduleView(sd *engine.ScheduleDescription) scheduleView {
	s := sd.Schedule
	v := scheduleView{Schedule: s, When: specText(s.Spec), MaxBackfill: engine.MaxBackfillTimes, MaxRecent: engine.MaxScheduleRecent, Overlap: s.Policy.Overlap.String(), Next: sd.NextActionTimesMS}
	if s.Policy.Overlap == engine.OverlapUnspecified {
		v.Overlap = engine.OverlapSkip.String()
	}
	for i := len(s.Running) - 1; i >= 0; i-- {
		v.Running = append(v.Running, scheduleRunView{ScheduleRun: s.Running[i]})
	}
	// Recent holds the open runs too: each run is listed once (a run on
	// its way to another shard has no job id yet: it is known by its
	// workflow id and time).
	type runKey struct {
		wf        string
		nominalMS int64
	}
	open := map[runKey]bool{}
	for _, r := range s.Running {
		open[runKey{r.WorkflowID, r.NominalMS}] = true
	}
	for i := len(s.Recent) - 1; i >= 0; i-- {
		if r := s.Recent[i]; !open[runKey{r.WorkflowID, r.NominalMS}] {
			v.Recent = append(v.Recent, scheduleRunView{ScheduleRun: s.Recent[i]})
		}
	}
	return v
}

// specText says when a spec acts: "cron 0 9 * * MON-FRI; every 1h".
func specText(sp engine.ScheduleSpec) string {
	var parts []string
	for _, c := range sp.CronExpressions {
		parts = append(parts, "cron "+c)
	}
	for _, iv := range sp.Intervals {
		p := "every " + fmtDuration(iv.EveryMS)
		if iv.OffsetMS != 0 {
			p += " (offset " + fmtDuration(iv.OffsetMS) + ")"
		}
		parts = append(parts, p)
	}
	if sp.JitterMS != 0 {
		parts = append(parts, "jitter up to "+fmtDuration(sp.JitterMS))
	}
	if len(parts) == 0 {
		return "no times: it acts only when triggered or backfilled"
	}
	return strings.Join(parts, "; ")
}

// schedulesFeature is the schedules entry of features.
func schedulesFeature() feature {
	for _, f := range features {
		if f.Path == "schedules" {
			return f
		}
	}
	panic("ui: features has no schedules entry")
}

// schedule is one schedule's page.
func (h *Handler) schedule(rq *request) (*page, error) {
	id := rq.r.PathValue("id")
	sd, err := rq.api.DescribeSchedule(rq.ctx, id)
	switch {
	case errors.Is(err, engine.ErrUnknownSchedule):
		return nil, &pageError{status: http.StatusNotFound, msg: fmt.Sprintf("There is no schedule %q.", id)}
	case errors.Is(err, httpapi.ErrNoRoute):
		return h.feature(schedulesFeature())(rq)
	case err != nil:
		return nil, err
	}
	d := &scheduleData{S: newScheduleView(sd)}
	for p := engine.OverlapSkip; p <= engine.OverlapAllowAll; p++ {
		d.Overlaps = append(d.Overlaps, p.String())
	}
	read := 0
	for _, runs := range [][]scheduleRunView{d.S.Running, d.S.Recent} {
		for i := range runs {
			if read == maxScheduleRunsRead {
				break
			}
			if runs[i].Job == 0 {
				continue // on its way to another shard
			}
			read++
			j, err := rq.api.Describe(rq.ctx, engine.Target{Job: runs[i].Job})
			if err != nil && !errors.Is(err, engine.ErrUnknownJob) {
				return nil, err
			}
			runs[i].Run = j
		}
	}
	p := &page{Template: "schedule.html", Title: "Schedule " + id, Nav: "schedules", Data: d}
	p.Flash = scheduleDone[rq.r.URL.Query().Get("done")]
	return p, nil
}

// scheduleAct runs one of a schedule's buttons. Done, it sends the browser
// back to the schedule's page; refused, it shows that page with why.
func (h *Handler) scheduleAct(rq *request) (*page, error) {
	id, op := rq.r.PathValue("id"), rq.r.PathValue("op")
	note := formValue(rq.r, "note")
	bf := backfillForm{Start: formValue(rq.r, "start"), End: formValue(rq.r, "end"), Overlap: formValue(rq.r, "overlap")}
	var err error
	switch {
	case scheduleDone[op] == "":
		return nil, &pageError{status: http.StatusNotFound, msg: "There is no such button."}
	case !rq.can.Can(ActionSchedule):
		who := "This token"
		if r := rq.can.Role(); r != "" {
			who = "The " + r + " role"
		}
		err = &pageError{status: http.StatusForbidden, msg: fmt.Sprintf("%s may not %s schedules.", who, op)}
	default:
		err = h.doScheduleOp(rq, id, op, note, bf)
	}
	if err == nil {
		return nil, redirect{to: fmt.Sprintf("%s/schedules/%s?done=%s", Path, url.PathEscape(id), op)}
	}
	if errors.Is(err, httpapi.ErrUnauthorized) {
		return nil, err // to the sign-in page
	}
	p, perr := h.schedule(rq)
	if perr != nil {
		return nil, err // the schedule cannot be shown: the button's error says why
	}
	p.Status, p.Error = statusOf(err), fmt.Sprintf("Could not %s schedule %s: %v", op, id, err)
	var pe *pageError
	if errors.As(err, &pe) {
		p.Error = pe.msg
	}
	if d, ok := p.Data.(*scheduleData); ok {
		d.Backfill = bf
	}
	return p, nil
}

// doScheduleOp sends the command of button op.
func (h *Handler) doScheduleOp(rq *request, id, op, note string, bf backfillForm) error {
	if err := checkReason(note); err != nil {
		return err
	}
	overlap := engine.OverlapUnspecified
	if bf.Overlap != "" {
		var err error
		if overlap, err = engine.ParseOverlapPolicy(bf.Overlap); err != nil {
			return &pageError{status: http.StatusBadRequest, msg: fmt.Sprintf("%q is not an overlap policy.", bf.Overlap)}
		}
	}
	var err error
	switch op {
	case "pause", "unpause":
		_, err = rq.api.PauseSchedule(rq.ctx, engine.PauseSchedule{ID: id, Paused: op == "pause", Note: note})
	case "trigger":
		_, err = rq.api.TriggerSchedule(rq.ctx, engine.TriggerSchedule{ID: id, Overlap: overlap})
	case "backfill":
		start, serr := parseFormTime(bf.Start, rq.now)
		end, eerr := parseFormTime(bf.End, rq.now)
		switch {
		case serr != nil:
			return &pageError{status: http.StatusBadRequest, msg: "The start of the range: " + serr.Error()}
		case eerr != nil:
			return &pageError{status: http.StatusBadRequest, msg: "The end of the range: " + eerr.Error()}
		case !end.After(start):
			return &pageError{status: http.StatusBadRequest, msg: "The range's end must be after its start."}
		}
		_, err = rq.api.BackfillSchedule(rq.ctx, engine.BackfillSchedule{ID: id, StartMS: start.UnixMilli(), EndMS: end.UnixMilli(), Overlap: overlap})
	}
	return err
}

// formTimeLayouts are the times a form takes: what the page shows (UTC),
// RFC 3339, and a datetime-local input's.
var formTimeLayouts = []string{"2006-01-02 15:04:05.000Z", "2006-01-02 15:04:05Z", "2006-01-02 15:04Z", time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02T15:04:05"}

// parseFormTime reads a time typed into a form, in UTC unless it says
// otherwise, or a duration before now ("-2h").
func parseFormTime(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, errors.New("it is empty; write a time such as 2026-11-02 09:00Z, or -2h for two hours ago")
	}
	if strings.HasPrefix(s, "-") {
		if d, err := time.ParseDuration(s[1:]); err == nil {
			return now.Add(-d), nil
		}
	}
	for _, l := range formTimeLayouts {
		if t, err := time.ParseInLocation(l, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time such as 2026-11-02 09:00Z (UTC), 2026-11-02T09:00:00+01:00, or -2h", s)
}
