package listfilter

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// Query is a parsed filter: an expression and an order.
type Query struct {
	// Expr is the filter; nil matches every run.
	Expr Expr
	// Order is the ORDER BY of the text (ListOrderDefault without one);
	// Compile resolves it.
	Order engine.ListOrder
	// statusOnly: Expr tests statuses and nothing else.
	statusOnly bool
}

// Match reports whether run j passes q's filter.
func (q *Query) Match(j *engine.Job) bool {
	return q == nil || q.Expr == nil || q.Expr.Match(j)
}

// Bounds is the bounds of q's filter (Any for none).
func (q *Query) Bounds() Bounds {
	if q == nil || q.Expr == nil {
		return Any()
	}
	return q.Expr.Bounds()
}

// StatusOnly reports whether q's filter tests the runs' statuses and
// nothing else, in a way their heddle statuses alone decide, so that a
// count can read the status indexes instead of the runs' records.
func (q *Query) StatusOnly() bool {
	if q == nil || q.Expr == nil {
		return true
	}
	return q.statusOnly && q.Bounds().statusesExact()
}

// String writes q in Temporal's syntax (field names, quoted values, AND,
// OR, IN, BETWEEN, STARTS_WITH, ORDER BY); Parse reads it back as the same
// query, relative times as they were written.
func (q *Query) String() string {
	if q == nil {
		return ""
	}
	var b strings.Builder
	if q.Expr != nil {
		q.Expr.write(&b, false)
	}
	if q.Order != engine.ListOrderDefault {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("ORDER BY ")
		b.WriteString(orderText(q.Order))
	}
	return b.String()
}

func orderText(o engine.ListOrder) string {
	switch o {
	case engine.ListStartAsc:
		return "StartTime ASC"
	case engine.ListCloseDesc:
		return "CloseTime DESC"
	case engine.ListCloseAsc:
		return "CloseTime ASC"
	}
	return "StartTime DESC"
}

// Digest fingerprints q (its text and order), so that a page token made
// for one query is not taken by another.
func (q *Query) Digest() uint64 {
	h := fnv.New64a()
	h.Write([]byte(q.String()))
	h.Write([]byte{0, byte(q.Order)})
	return h.Sum64()
}

// Compile is the filter and the order of a ListQuery: its Query parsed
// (relative times counting back from lq.NowMS, or now when it is 0), its
// filter fields added as predicates that every run must also pass, and
// its order resolved: Order, else the Query's ORDER BY, else oldest first
// when After is set, else newest first. A bad query or field is an error
// that matches engine.ErrInvalidCommand (and ErrSyntax for the text).
func Compile(lq engine.ListQuery, now time.Time) (*Query, error) {
	if lq.NowMS != 0 {
		now = time.UnixMilli(lq.NowMS)
	}
	q, err := Parse(lq.Query, now)
	if err != nil {
		return nil, err
	}
	var terms And
	if q.Expr != nil {
		terms = append(terms, q.Expr)
	}
	statusOnly := q.Expr == nil || q.statusOnly
	if lq.Status != engine.StatusNone {
		if !slices.Contains(engine.Statuses(), lq.Status) {
			return nil, fmt.Errorf("%w: list status %d is not a status", engine.ErrInvalidCommand, uint8(lq.Status))
		}
		set := bitOf(lq.Status)
		if lq.Status == engine.StatusCompleted {
			set |= 1 << continuedBit
		}
		terms = append(terms, &Pred{Field: FieldHeddleStatus, Op: OpEq, Values: []string{lq.Status.String()}, statuses: set})
	}
	if lq.ExecutionStatus != "" {
		set, ok := statusNamed(FieldExecutionStatus, lq.ExecutionStatus)
		if !ok {
			return nil, fmt.Errorf("%w: %q is not a status: want one of %s", engine.ErrInvalidCommand, lq.ExecutionStatus, statusNames(FieldExecutionStatus))
		}
		terms = append(terms, &Pred{Field: FieldExecutionStatus, Op: OpEq, Values: []string{canonicalStatus(FieldExecutionStatus, lq.ExecutionStatus)}, statuses: set})
		if set&pausedSet != 0 {
			statusOnly = false // a pause is a flag the status indexes do not hold
		}
	}
	for _, f := range []struct {
		field Field
		v     string
	}{{FieldWorkflowType, lq.Type}, {FieldTaskQueue, lq.Queue}, {FieldWorkflowID, lq.WorkflowID}} {
		if f.v != "" {
			terms = append(terms, &Pred{Field: f.field, Op: OpEq, Values: []string{f.v}})
			statusOnly = false
		}
	}
	if lq.Paused {
		terms = append(terms, &Pred{Field: FieldPaused, Op: OpEq, Values: []string{"true"}, truth: true})
		statusOnly = false
	}
	if lq.CreatedFromMS != 0 {
		terms = append(terms, &Pred{Field: FieldStartTime, Op: OpGe, Values: []string{fmt.Sprint(lq.CreatedFromMS)}, timesMS: []int64{lq.CreatedFromMS}})
		statusOnly = false
	}
	if lq.CreatedBeforeMS != 0 {
		terms = append(terms, &Pred{Field: FieldStartTime, Op: OpLt, Values: []string{fmt.Sprint(lq.CreatedBeforeMS)}, timesMS: []int64{lq.CreatedBeforeMS}})
		statusOnly = false
	}
	out := &Query{statusOnly: statusOnly}
	switch len(terms) {
	case 0:
	case 1:
		out.Expr = terms[0]
	default:
		out.Expr = flattenAnd(terms)
	}
	switch {
	case lq.Order > engine.ListCloseAsc:
		return nil, fmt.Errorf("%w: list order %d is not an order", engine.ErrInvalidCommand, uint8(lq.Order))
	case lq.After != 0 && lq.PageToken != "":
		return nil, fmt.Errorf("%w: a list takes After or a PageToken, not both", engine.ErrInvalidCommand)
	case lq.Order != engine.ListOrderDefault && q.Order != engine.ListOrderDefault && lq.Order != q.Order:
		return nil, fmt.Errorf("%w: the list's order %s and the query's ORDER BY %s disagree", engine.ErrInvalidCommand, lq.Order, orderText(q.Order))
	case lq.Order != engine.ListOrderDefault:
		out.Order = lq.Order
	case q.Order != engine.ListOrderDefault:
		out.Order = q.Order
	case lq.After != 0:
		out.Order = engine.ListStartAsc
	default:
		out.Order = engine.ListStartDesc
	}
	if lq.After != 0 && out.Order != engine.ListStartAsc {
		return nil, fmt.Errorf("%w: After pages oldest first by start time, not %s: page with the PageToken of a page", engine.ErrInvalidCommand, out.Order)
	}
	return out, nil
}

// flattenAnd merges the Ands among terms into one.
func flattenAnd(terms And) And {
	var out And
	for _, t := range terms {
		if a, ok := t.(And); ok {
			out = append(out, a...)
		} else {
			out = append(out, t)
		}
	}
	return out
}

// canonicalStatus is a status name as the vocabulary of f spells it.
func canonicalStatus(f Field, name string) string {
	if f == FieldHeddleStatus {
		for _, s := range engine.Statuses() {
			if strings.EqualFold(name, s.String()) {
				return s.String()
			}
		}
		if strings.EqualFold(name, "open") {
			return "Open"
		}
		return "Closed"
	}
	for _, e := range executionStatuses {
		if strings.EqualFold(name, e.name) {
			if e.name == "Cancelled" {
				return "Canceled"
			}
			return e.name
		}
	}
	return name
}
