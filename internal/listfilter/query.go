package listfilter

import (
	"strings"
	"unicode"

	"github.com/heddlewf/heddle/engine"
)

// Match reports whether job j passes every term of q.
func (q *Query) Match(j *engine.Job) bool {
	if q == nil {
		return true
	}
	for i := range q.Terms {
		if !q.Terms[i].match(j) {
			return false
		}
	}
	return true
}

func (t *Term) match(j *engine.Job) bool {
	switch t.Field {
	case FieldStatus:
		in := false
		for _, s := range t.statuses {
			in = in || j.Status == s
		}
		return in == (t.Op == OpEq)
	case FieldType:
		return t.matchText(j.Type)
	case FieldQueue:
		return t.matchText(j.Queue)
	case FieldID:
		return t.matchText(j.WorkflowID)
	case FieldCreated:
		return t.matchTime(j.CreatedMS)
	case FieldClosed:
		// An open run has no closing time, and so matches no bound.
		return j.ClosedMS != 0 && t.matchTime(j.ClosedMS)
	case FieldPaused:
		paused := j.Paused() && !j.Status.Terminal()
		return (paused == t.truth) == (t.Op == OpEq)
	}
	return false
}

func (t *Term) matchText(s string) bool {
	in := false
	for _, v := range t.Values {
		if v.Prefix {
			in = in || strings.HasPrefix(s, v.Text)
		} else {
			in = in || s == v.Text
		}
	}
	return in == (t.Op == OpEq)
}

func (t *Term) matchTime(ms int64) bool {
	switch t.Op {
	case OpGt:
		return ms > t.atMS
	case OpGe:
		return ms >= t.atMS
	case OpLt:
		return ms < t.atMS
	case OpLe:
		return ms <= t.atMS
	}
	return false
}

// serverSide reports whether the list API applies t itself (ListQuery
// carries it), so that a page of the API's needs no filtering after.
func (t *Term) serverSide() bool {
	single := t.Op == OpEq && len(t.Values) == 1 && !t.Values[0].Prefix
	switch t.Field {
	case FieldStatus, FieldType, FieldQueue:
		return single
	case FieldCreated:
		return true
	case FieldPaused:
		return t.Op == OpEq && t.truth
	}
	return false
}

// ListQuery returns the part of q the list API filters by itself: the
// first status, type and queue terms that name one value exactly, and the
// narrowest creation time range. Match checks the rest; a run the API
// returns for it may still fail Match.
func (q *Query) ListQuery() engine.ListQuery {
	var lq engine.ListQuery
	if q == nil {
		return lq
	}
	for i := range q.Terms {
		t := &q.Terms[i]
		if !t.serverSide() {
			continue
		}
		switch t.Field {
		case FieldStatus:
			if lq.Status == engine.StatusNone {
				lq.Status = t.statuses[0]
			}
		case FieldType:
			if lq.Type == "" {
				lq.Type = t.Values[0].Text
			}
		case FieldQueue:
			if lq.Queue == "" {
				lq.Queue = t.Values[0].Text
			}
		case FieldPaused:
			lq.Paused = true
		case FieldCreated:
			from, before := t.bounds()
			if from != 0 && from > lq.CreatedFromMS {
				lq.CreatedFromMS = from
			}
			if before != 0 && (lq.CreatedBeforeMS == 0 || before < lq.CreatedBeforeMS) {
				lq.CreatedBeforeMS = before
			}
		}
	}
	return lq
}

// bounds returns a time term as the list API's range: an inclusive lower
// bound or an exclusive upper bound in Unix ms (0: none).
func (t *Term) bounds() (fromMS, beforeMS int64) {
	switch t.Op {
	case OpGt:
		return t.atMS + 1, 0
	case OpGe:
		return t.atMS, 0
	case OpLt:
		return 0, t.atMS
	case OpLe:
		return 0, t.atMS + 1
	}
	return 0, 0
}

// exact reports whether the list API applies every term of q itself.
func (q *Query) exact() bool {
	if q == nil {
		return true
	}
	seen := map[Field]bool{}
	for i := range q.Terms {
		t := &q.Terms[i]
		// A second term of a field the API filters by once is checked here.
		if !t.serverSide() || (t.Field != FieldCreated && seen[t.Field]) {
			return false
		}
		seen[t.Field] = true
	}
	return true
}

// And returns a query whose terms are q's and then o's.
func (q *Query) And(o *Query) *Query {
	out := &Query{}
	if q != nil {
		out.Terms = append(out.Terms, q.Terms...)
	}
	if o != nil {
		out.Terms = append(out.Terms, o.Terms...)
	}
	return out
}

// FromListQuery returns the terms that say what lq's status, type and
// queue say (its cursor, limit and time range are left out), so that the
// CLI's --status, --type and --queue flags join a --query.
func FromListQuery(lq engine.ListQuery) *Query {
	q := &Query{}
	if lq.Status != engine.StatusNone {
		q.Terms = append(q.Terms, Term{Field: FieldStatus, Op: OpEq,
			Values: []Value{{Text: lq.Status.String()}}, statuses: []engine.Status{lq.Status}})
	}
	if lq.Type != "" {
		q.Terms = append(q.Terms, Term{Field: FieldType, Op: OpEq, Values: []Value{{Text: lq.Type, Quoted: needsQuotes(lq.Type)}}})
	}
	if lq.Queue != "" {
		q.Terms = append(q.Terms, Term{Field: FieldQueue, Op: OpEq, Values: []Value{{Text: lq.Queue, Quoted: needsQuotes(lq.Queue)}}})
	}
	if lq.Paused {
		q.Terms = append(q.Terms, Term{Field: FieldPaused, Op: OpEq, Values: []Value{{Text: "true"}}, truth: true})
	}
	return q
}

// String writes q back in the language, one space between terms; Parse
// reads it as the same query (relative times as they were written: the
// Values keep the text).
func (q *Query) String() string {
	if q == nil {
		return ""
	}
	parts := make([]string, len(q.Terms))
	for i := range q.Terms {
		parts[i] = q.Terms[i].String()
	}
	return strings.Join(parts, " ")
}

func (t *Term) String() string {
	vals := make([]string, len(t.Values))
	for i, v := range t.Values {
		vals[i] = v.String()
	}
	return string(t.Field) + string(t.Op) + strings.Join(vals, ",")
}

func (v Value) String() string {
	switch {
	case v.Prefix:
		return v.Text + "*"
	case v.Quoted || needsQuotes(v.Text):
		return quote(v.Text)
	}
	return v.Text
}

// needsQuotes reports whether a bare s would read differently.
func needsQuotes(s string) bool {
	return s == "" || strings.HasSuffix(s, "*") || strings.ContainsFunc(s, func(r rune) bool {
		return r == '"' || r == ',' || r == '\\' || r <= ' ' || r == 0x7f || unicode.IsSpace(r)
	})
}

// quote writes s as a quoted value of the language.
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

// Quote returns s as a value the language reads back as s: bare when it
// can be, else in double quotes.
func Quote(s string) string {
	if needsQuotes(s) {
		return quote(s)
	}
	return s
}
