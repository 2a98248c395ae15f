package listfilter

import (
	"math"
	"slices"
	"strings"

	"github.com/heddlewf/heddle/engine"
)

// Expr is a node of a parsed filter: an And, an Or or a Pred.
type Expr interface {
	// Match reports whether run j passes the node.
	Match(j *engine.Job) bool
	// Bounds says what every run the node matches has in common, for
	// the indexes: a superset of the matches, never fewer.
	Bounds() Bounds
	// write appends the node in the language; inAnd says whether the
	// node stands in an And, where an Or needs parentheses.
	write(b *strings.Builder, inAnd bool)
}

// And matches the runs that every one of its terms matches.
type And []Expr

// Or matches the runs that any one of its terms matches.
type Or []Expr

// Match implements Expr.
func (a And) Match(j *engine.Job) bool {
	for _, e := range a {
		if !e.Match(j) {
			return false
		}
	}
	return true
}

// Match implements Expr.
func (o Or) Match(j *engine.Job) bool {
	for _, e := range o {
		if e.Match(j) {
			return true
		}
	}
	return false
}

// Bounds implements Expr: every term's bounds hold.
func (a And) Bounds() Bounds {
	b := Any()
	for _, e := range a {
		b = b.and(e.Bounds())
	}
	return b
}

// Bounds implements Expr: one term's bounds hold.
func (o Or) Bounds() Bounds {
	if len(o) == 0 {
		return Any()
	}
	b := o[0].Bounds()
	for _, e := range o[1:] {
		b = b.or(e.Bounds())
	}
	return b
}

func (a And) write(b *strings.Builder, _ bool) {
	for i, e := range a {
		if i > 0 {
			b.WriteString(" AND ")
		}
		e.write(b, true)
	}
}

func (o Or) write(b *strings.Builder, inAnd bool) {
	if inAnd {
		b.WriteByte('(')
	}
	for i, e := range o {
		if i > 0 {
			b.WriteString(" OR ")
		}
		e.write(b, false)
	}
	if inAnd {
		b.WriteByte(')')
	}
}

// Pred is one comparison: Field Op Values.
type Pred struct {
	Field Field
	Op    Op
	// Values are the values as written, without their quotes: one, two
	// for BETWEEN, any number for IN.
	Values []string
	// statuses is a status predicate's values, as one set.
	statuses statusSet
	// timesMS is a time predicate's values, in Unix ms.
	timesMS []int64
	// ids is a run-id predicate's values.
	ids []engine.JobID
	// truth is a boolean predicate's value.
	truth bool
}

// Match implements Expr.
func (p *Pred) Match(j *engine.Job) bool {
	switch kindOf(p.Field) {
	case kindStatus:
		in := statusBit(j)&p.statuses != 0
		return in == (p.Op == OpEq || p.Op == OpIn)
	case kindTime:
		ms := j.CreatedMS
		if p.Field == FieldCloseTime {
			if !j.Status.Terminal() {
				return false // an open run has no closing time, as SQL's NULL compares with nothing
			}
			ms = j.ClosedMS
		}
		return p.matchTime(ms)
	case kindRunID:
		in := slices.Contains(p.ids, j.ID)
		return in == (p.Op == OpEq || p.Op == OpIn)
	case kindBool:
		return (isPaused(j) == p.truth) == (p.Op == OpEq)
	}
	s := p.text(j)
	switch p.Op {
	case OpStartsWith:
		return strings.HasPrefix(s, p.Values[0])
	case OpNotStartsWith:
		return !strings.HasPrefix(s, p.Values[0])
	case OpEq, OpIn:
		return slices.Contains(p.Values, s)
	}
	return !slices.Contains(p.Values, s) // != and NOT IN
}

func (p *Pred) text(j *engine.Job) string {
	switch p.Field {
	case FieldWorkflowType:
		return j.Type
	case FieldTaskQueue:
		return j.Queue
	}
	return j.WorkflowID
}

func (p *Pred) matchTime(ms int64) bool {
	v := p.timesMS
	switch p.Op {
	case OpEq:
		return ms == v[0]
	case OpNe:
		return ms != v[0]
	case OpGt:
		return ms > v[0]
	case OpGe:
		return ms >= v[0]
	case OpLt:
		return ms < v[0]
	case OpLe:
		return ms <= v[0]
	case OpBetween:
		return ms >= v[0] && ms <= v[1]
	}
	return ms < v[0] || ms > v[1] // NOT BETWEEN
}

// Bounds implements Expr.
func (p *Pred) Bounds() Bounds {
	b := Any()
	pos := p.Op == OpEq || p.Op == OpIn
	switch kindOf(p.Field) {
	case kindStatus:
		switch {
		case pos && p.statuses&pausedSet != 0:
			// A paused run may be in any open status; only Paused alone
			// keeps the paused runs and nothing else.
			b.statuses = p.statuses&^pausedSet | openSet
			b.Paused = p.statuses == pausedSet
		case pos:
			b.statuses = p.statuses
		default:
			b.statuses = allStatuses &^ p.statuses
		}
	case kindBool:
		if (p.Op == OpEq) == p.truth {
			b.statuses, b.Paused = openSet, true
		}
	case kindRunID:
		if pos {
			b.RunIDs = IDSet{Values: slices.Clone(p.ids)}
			slices.Sort(b.RunIDs.Values)
			b.RunIDs.Values = slices.Compact(b.RunIDs.Values)
		}
	case kindText:
		if pos {
			set := TextSet{Values: slices.Clone(p.Values)}
			slices.Sort(set.Values)
			set.Values = slices.Compact(set.Values)
			switch p.Field {
			case FieldWorkflowType:
				b.Types = set
			case FieldTaskQueue:
				b.Queues = set
			default:
				b.WorkflowIDs = set
			}
		}
	case kindTime:
		r := p.timeRange()
		if p.Field == FieldCloseTime {
			b.Close = r
			b.statuses = closedSet // only a run that ended has a closing time
		} else {
			b.Start = r
		}
	}
	return b
}

// timeRange is the inclusive range of times p can match.
func (p *Pred) timeRange() TimeRange {
	r := AnyTime()
	v := p.timesMS
	switch p.Op {
	case OpEq:
		r.FromMS, r.ToMS = v[0], v[0]
	case OpGt:
		if v[0] == math.MaxInt64 {
			return emptyTime()
		}
		r.FromMS = v[0] + 1
	case OpGe:
		r.FromMS = v[0]
	case OpLt:
		if v[0] == math.MinInt64 {
			return emptyTime()
		}
		r.ToMS = v[0] - 1
	case OpLe:
		r.ToMS = v[0]
	case OpBetween:
		r.FromMS, r.ToMS = v[0], v[1]
	}
	return r
}

func (p *Pred) write(b *strings.Builder, _ bool) {
	b.WriteString(string(p.Field))
	b.WriteByte(' ')
	b.WriteString(string(p.Op))
	b.WriteByte(' ')
	switch p.Op {
	case OpIn, OpNotIn:
		b.WriteByte('(')
		for i, v := range p.Values {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(quote(v))
		}
		b.WriteByte(')')
	case OpBetween, OpNotBetween:
		b.WriteString(quote(p.Values[0]))
		b.WriteString(" AND ")
		b.WriteString(quote(p.Values[1]))
	default:
		b.WriteString(quote(p.Values[0]))
	}
}

// Bounds is what every run an expression matches has in common, in the
// terms the list's indexes answer: the statuses it may be in, the
// workflow ids, types, queues and run ids it may have (a set, or any),
// and the ranges its start and closing times fall in. A run outside the
// bounds never matches; one inside them may not either.
type Bounds struct {
	statuses    statusSet
	WorkflowIDs TextSet
	Types       TextSet
	Queues      TextSet
	RunIDs      IDSet
	Start       TimeRange
	// Close bounds the closing time of the runs that ended; a bound on it
	// also keeps only the runs that ended (see Statuses).
	Close TimeRange
	// Paused keeps only the open runs that are paused, which the paused
	// index holds.
	Paused bool
}

// Any is the bounds of an expression that may match every run.
func Any() Bounds {
	return Bounds{statuses: allStatuses, WorkflowIDs: anyText(), Types: anyText(), Queues: anyText(),
		RunIDs: IDSet{All: true}, Start: AnyTime(), Close: AnyTime()}
}

// Statuses lists the heddle statuses a matching run may be in, in
// numeric order (every status when the expression does not narrow them).
func (b Bounds) Statuses() []engine.Status {
	var out []engine.Status
	for _, s := range engine.Statuses() {
		if b.statuses&bitOf(s) != 0 || (s == engine.StatusCompleted && b.statuses&(1<<continuedBit) != 0) {
			out = append(out, s)
		}
	}
	return out
}

// AllStatuses reports whether the bounds leave every status possible.
func (b Bounds) AllStatuses() bool { return b.statuses&allStatuses == allStatuses }

// statusesExact reports whether a run's heddle status alone decides
// whether an expression with these bounds matches it, given that the
// expression tests nothing but statuses: false when the bounds split
// Completed runs by whether they continued as new.
func (b Bounds) statusesExact() bool {
	c, n := b.statuses&bitOf(engine.StatusCompleted) != 0, b.statuses&(1<<continuedBit) != 0
	return c == n
}

// Empty reports whether no run can match.
func (b Bounds) Empty() bool {
	return b.statuses&allStatuses == 0 || b.WorkflowIDs.empty() || b.Types.empty() || b.Queues.empty() ||
		b.RunIDs.empty() || b.Start.Empty() || b.Close.Empty()
}

func (b Bounds) and(o Bounds) Bounds {
	return Bounds{statuses: b.statuses & o.statuses, WorkflowIDs: b.WorkflowIDs.and(o.WorkflowIDs),
		Types: b.Types.and(o.Types), Queues: b.Queues.and(o.Queues), RunIDs: b.RunIDs.and(o.RunIDs),
		Start: b.Start.and(o.Start), Close: b.Close.and(o.Close), Paused: b.Paused || o.Paused}
}

func (b Bounds) or(o Bounds) Bounds {
	return Bounds{statuses: b.statuses | o.statuses, WorkflowIDs: b.WorkflowIDs.or(o.WorkflowIDs),
		Types: b.Types.or(o.Types), Queues: b.Queues.or(o.Queues), RunIDs: b.RunIDs.or(o.RunIDs),
		Start: b.Start.or(o.Start), Close: b.Close.or(o.Close), Paused: b.Paused && o.Paused}
}

// TextSet is the values a text field may have: All, or one of Values
// (sorted; none: no run matches).
type TextSet struct {
	All    bool
	Values []string
}

func anyText() TextSet { return TextSet{All: true} }

func (s TextSet) empty() bool { return !s.All && len(s.Values) == 0 }

func (s TextSet) and(o TextSet) TextSet {
	switch {
	case s.All:
		return o
	case o.All:
		return s
	}
	out := TextSet{Values: []string{}}
	for _, v := range s.Values {
		if _, ok := slices.BinarySearch(o.Values, v); ok {
			out.Values = append(out.Values, v)
		}
	}
	return out
}

func (s TextSet) or(o TextSet) TextSet {
	if s.All || o.All {
		return anyText()
	}
	v := append(slices.Clone(s.Values), o.Values...)
	slices.Sort(v)
	return TextSet{Values: slices.Compact(v)}
}

// IDSet is the run ids a run may have: All, or one of Values (sorted).
type IDSet struct {
	All    bool
	Values []engine.JobID
}

func (s IDSet) empty() bool { return !s.All && len(s.Values) == 0 }

func (s IDSet) and(o IDSet) IDSet {
	switch {
	case s.All:
		return o
	case o.All:
		return s
	}
	out := IDSet{Values: []engine.JobID{}}
	for _, v := range s.Values {
		if _, ok := slices.BinarySearch(o.Values, v); ok {
			out.Values = append(out.Values, v)
		}
	}
	return out
}

func (s IDSet) or(o IDSet) IDSet {
	if s.All || o.All {
		return IDSet{All: true}
	}
	v := append(slices.Clone(s.Values), o.Values...)
	slices.Sort(v)
	return IDSet{Values: slices.Compact(v)}
}

// TimeRange is an inclusive range of Unix ms; From > To is empty.
type TimeRange struct {
	FromMS, ToMS int64
}

// AnyTime is the range of every time.
func AnyTime() TimeRange { return TimeRange{FromMS: math.MinInt64, ToMS: math.MaxInt64} }

func emptyTime() TimeRange { return TimeRange{FromMS: math.MaxInt64, ToMS: math.MinInt64} }

// Empty reports whether no time is in r.
func (r TimeRange) Empty() bool { return r.FromMS > r.ToMS }

// All reports whether r holds every time.
func (r TimeRange) All() bool { return r == AnyTime() }

func (r TimeRange) and(o TimeRange) TimeRange {
	return TimeRange{FromMS: max(r.FromMS, o.FromMS), ToMS: min(r.ToMS, o.ToMS)}
}

func (r TimeRange) or(o TimeRange) TimeRange {
	switch {
	case r.Empty():
		return o
	case o.Empty():
		return r
	}
	return TimeRange{FromMS: min(r.FromMS, o.FromMS), ToMS: max(r.ToMS, o.ToMS)}
}

// quote writes s as a double-quoted value of the language.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// Quote returns s as a value the language reads back as s, in double
// quotes.
func Quote(s string) string { return quote(s) }
