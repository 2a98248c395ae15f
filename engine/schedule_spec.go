package engine

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// NextCronTime is the first time of line after afterMS, or 0 when it has none.
func NextCronTime(line string, afterMS int64) (int64, error) {
	s, err := parseCron(line)
	if err != nil {
		return 0, err
	}
	t := s.Next(time.UnixMilli(afterMS).UTC())
	if t.IsZero() {
		return 0, nil
	}
	return t.UnixMilli(), nil
}

// Cron lines are parsed by robfig/cron/v3's parser, the one Temporal's
// server and most Go cron users rely on: 5 fields, or 6 with seconds first,
// and the @ descriptors. Its TZ= and CRON_TZ= prefixes are refused: they
// load a zone from the host's database, which Apply must not read (two
// nodes could disagree). Every time is computed in UTC.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// maxScheduleTimeMS bounds a spec's start and end times, and its times: the
// end of the year 9999, the last an RFC 3339 workflow id can name.
const maxScheduleTimeMS = 253402300799999

// CompiledSpec is a ScheduleSpec ready to give its times.
type CompiledSpec struct {
	crons     []cron.Schedule
	intervals []ScheduleInterval
	startMS   int64
	endMS     int64
	jitterMS  int64
}

// ParseCron checks one cron line as a spec or a CronSchedule takes it.
func ParseCron(expr string) error {
	_, err := parseCron(expr)
	return err
}

func parseCron(expr string) (cron.Schedule, error) {
	e := strings.TrimSpace(expr)
	if strings.HasPrefix(e, "TZ=") || strings.HasPrefix(e, "CRON_TZ=") {
		return nil, fmt.Errorf("cron %q: time zones are not supported, times are UTC", expr)
	}
	s, err := cronParser.Parse(e)
	if err != nil {
		return nil, fmt.Errorf("cron %q: %v", expr, err)
	}
	return s, nil
}

// CompileSpec validates s and compiles it. The error names the field.
func CompileSpec(s *ScheduleSpec) (*CompiledSpec, string, error) {
	c := &CompiledSpec{intervals: s.Intervals, startMS: s.StartAtMS, endMS: s.EndAtMS, jitterMS: s.JitterMS}
	if len(s.CronExpressions) > MaxScheduleSpecs {
		return nil, "Spec.CronExpressions", fmt.Errorf("has %d entries, over the limit of %d", len(s.CronExpressions), MaxScheduleSpecs)
	}
	if len(s.Intervals) > MaxScheduleSpecs {
		return nil, "Spec.Intervals", fmt.Errorf("has %d entries, over the limit of %d", len(s.Intervals), MaxScheduleSpecs)
	}
	for i, e := range s.CronExpressions {
		cs, err := parseCron(e)
		if err != nil {
			return nil, fmt.Sprintf("Spec.CronExpressions[%d]", i), err
		}
		c.crons = append(c.crons, cs)
	}
	for i, iv := range s.Intervals {
		if iv.EveryMS < MinScheduleIntervalMS || iv.EveryMS > MaxDelayMS {
			return nil, fmt.Sprintf("Spec.Intervals[%d].EveryMS", i), fmt.Errorf("is %d, not in [%d, %d]", iv.EveryMS, MinScheduleIntervalMS, int64(MaxDelayMS))
		}
		if iv.OffsetMS < 0 || iv.OffsetMS >= iv.EveryMS {
			return nil, fmt.Sprintf("Spec.Intervals[%d].OffsetMS", i), fmt.Errorf("is %d, not in [0, EveryMS)", iv.OffsetMS)
		}
	}
	switch {
	case s.StartAtMS < 0 || s.StartAtMS > maxScheduleTimeMS:
		return nil, "Spec.StartAtMS", fmt.Errorf("is %d, not in [0, %d] (the year 9999)", s.StartAtMS, int64(maxScheduleTimeMS))
	case s.EndAtMS > maxScheduleTimeMS:
		return nil, "Spec.EndAtMS", fmt.Errorf("is %d, after the year 9999", s.EndAtMS)
	case s.EndAtMS < 0 || (s.EndAtMS > 0 && s.EndAtMS < s.StartAtMS):
		return nil, "Spec.EndAtMS", fmt.Errorf("is %d, before StartAtMS %d", s.EndAtMS, s.StartAtMS)
	case s.JitterMS < 0 || s.JitterMS > MaxDelayMS:
		return nil, "Spec.JitterMS", fmt.Errorf("is %d, not in [0, 100 years]", s.JitterMS)
	}
	return c, "", nil
}

// Next returns the first spec time strictly after afterMS, or 0 when there
// is none (past EndAtMS, or a cron line that never matches again).
func (c *CompiledSpec) Next(afterMS int64) int64 {
	if c.startMS > 0 && afterMS < c.startMS-1 {
		afterMS = c.startMS - 1
	}
	best := int64(0)
	after := time.UnixMilli(afterMS).UTC()
	for _, cs := range c.crons {
		t := cs.Next(after)
		if t.IsZero() {
			continue
		}
		if ms := t.UnixMilli(); best == 0 || ms < best {
			best = ms
		}
	}
	for _, iv := range c.intervals {
		// The times are offset + k*every; the first one after afterMS.
		k := floorDiv(afterMS-iv.OffsetMS, iv.EveryMS) + 1
		if ms := iv.OffsetMS + k*iv.EveryMS; best == 0 || ms < best {
			best = ms
		}
	}
	if best == 0 || (c.endMS > 0 && best > c.endMS) || best > maxScheduleTimeMS {
		return 0
	}
	return best
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// ScheduleJitter is the delay of the action at nominalMS of schedule id: a
// value in [0, jitterMS) derived from both, so that every node and every
// replay computes the same one, and schedules sharing a time spread out.
func ScheduleJitter(id string, nominalMS, jitterMS int64) int64 {
	if jitterMS <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	var b [8]byte
	for i := range b {
		b[i] = byte(uint64(nominalMS) >> (8 * i))
	}
	h.Write(b[:])
	return int64(h.Sum64() % uint64(jitterMS))
}

// ScheduleWorkflowID is the workflow id of the run schedule s starts for
// nominalMS: the action's base id (the schedule id when empty), "-", and
// the time in RFC 3339 (UTC, seconds).
func ScheduleWorkflowID(s *Schedule, nominalMS int64) string {
	base := s.Action.WorkflowID
	if base == "" {
		base = s.ID
	}
	return base + "-" + time.UnixMilli(nominalMS).UTC().Format(time.RFC3339)
}

// NextActionTimes returns up to n of s's coming action times (Unix ms,
// jitter included) from its next one, as Temporal's NextActionTimes; none
// while paused.
func NextActionTimes(s *Schedule, n int) []int64 {
	if s.State.Paused || s.NextNominalMS == 0 {
		return nil
	}
	c, _, err := CompileSpec(&s.Spec)
	if err != nil {
		return nil
	}
	var out []int64
	for t := s.NextNominalMS; t != 0 && len(out) < n; t = c.Next(t) {
		out = append(out, t+ScheduleJitter(s.ID, t, c.jitterMS))
	}
	return out
}
