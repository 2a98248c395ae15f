package listfilter

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// now is the fixed "now" of every test: relative times count back from it.
var now = time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)

func ms(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		query string
		// canon is String() of the parse: what the UI shows and what
		// parses back to the same query.
		canon string
		// list is what the list API is asked.
		list engine.ListQuery
		// exact: the API filters everything; no page needs filtering after.
		exact bool
	}{
		{"", "", engine.ListQuery{}, true},
		{"   ", "", engine.ListQuery{}, true},
		{"status=Running", "status=Running", engine.ListQuery{Status: engine.StatusRunning}, true},
		{"status=running", "status=running", engine.ListQuery{Status: engine.StatusRunning}, true},
		{"STATUS:Waiting", "status=Waiting", engine.ListQuery{Status: engine.StatusWaiting}, true},
		{"status=Running type=Order queue=q", "status=Running type=Order queue=q",
			engine.ListQuery{Status: engine.StatusRunning, Type: "Order", Queue: "q"}, true},
		{"task_queue=q workflow_id=a", "queue=q id=a", engine.ListQuery{Queue: "q"}, false},
		{"status=Running,Waiting", "status=Running,Waiting", engine.ListQuery{}, false},
		{"status!=Completed", "status!=Completed", engine.ListQuery{}, false},
		{"type=Ord*", "type=Ord*", engine.ListQuery{}, false},
		{`type="Ord*"`, `type="Ord*"`, engine.ListQuery{Type: "Ord*"}, true},
		{`type="Nightly report",x`, `type="Nightly report",x`, engine.ListQuery{}, false},
		{`type="say \"hi\" \\ bye"`, `type="say \"hi\" \\ bye"`, engine.ListQuery{Type: `say "hi" \ bye`}, true},
		{"type=a type=b", "type=a type=b", engine.ListQuery{Type: "a"}, false},
		{"created>2026-11-01T00:00Z", "created>2026-11-01T00:00Z",
			engine.ListQuery{CreatedFromMS: ms("2026-11-01T00:00:00Z") + 1}, true},
		{"created>=2026-11-01 created<2026-11-02", "created>=2026-11-01 created<2026-11-02",
			engine.ListQuery{CreatedFromMS: ms("2026-11-01T00:00:00Z"), CreatedBeforeMS: ms("2026-11-02T00:00:00Z")}, true},
		{"created<=2026-11-01T10:30:00+02:00", "created<=2026-11-01T10:30:00+02:00",
			engine.ListQuery{CreatedBeforeMS: ms("2026-11-01T08:30:00Z") + 1}, true},
		{"created>-24h", "created>-24h", engine.ListQuery{CreatedFromMS: ms("2026-11-01T12:00:00Z") + 1}, true},
		{"created>=now-7d created<now", "created>=now-7d created<now",
			engine.ListQuery{CreatedFromMS: ms("2026-10-26T12:00:00Z"), CreatedBeforeMS: now.UnixMilli()}, true},
		{"created>=NOW-90m", "created>=NOW-90m", engine.ListQuery{CreatedFromMS: ms("2026-11-02T10:30:00Z")}, true},
		{"created>1000 created>2000 created<9000 created<5000", "created>1000 created>2000 created<9000 created<5000",
			engine.ListQuery{CreatedFromMS: 2001, CreatedBeforeMS: 5000}, true},
		{"paused=true", "paused=true", engine.ListQuery{Paused: true}, true},
		{"paused=TRUE status=Waiting", "paused=TRUE status=Waiting", engine.ListQuery{Paused: true, Status: engine.StatusWaiting}, true},
		{"paused=false", "paused=false", engine.ListQuery{}, false},
		{"paused!=true", "paused!=true", engine.ListQuery{}, false},
		{"created>2026-11-01T10:30", "created>2026-11-01T10:30", engine.ListQuery{CreatedFromMS: ms("2026-11-01T10:30:00Z") + 1}, true},
		{"closed>-1h", "closed>-1h", engine.ListQuery{}, false},
		{"  status=Failed\t\tqueue=x  ", "status=Failed queue=x", engine.ListQuery{Status: engine.StatusFailed, Queue: "x"}, true},
		{"id=order-*", "id=order-*", engine.ListQuery{}, false},
		{"id=ünï", "id=ünï", engine.ListQuery{}, false},
	} {
		q, err := Parse(tc.query, now)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.query, err)
			continue
		}
		if got := q.String(); got != tc.canon {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.query, got, tc.canon)
		}
		if got := q.ListQuery(); got != tc.list {
			t.Errorf("Parse(%q).ListQuery() = %+v, want %+v", tc.query, got, tc.list)
		}
		if got := q.exact(); got != tc.exact {
			t.Errorf("Parse(%q).exact() = %v, want %v", tc.query, got, tc.exact)
		}
		// The canonical form reads back as the same query.
		q2, err := Parse(q.String(), now)
		if err != nil {
			t.Errorf("Parse(%q) of the canonical form of %q: %v", q.String(), tc.query, err)
		} else if q2.String() != q.String() || q2.ListQuery() != q.ListQuery() {
			t.Errorf("canonical %q of %q parses to %q", q.String(), tc.query, q2.String())
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		query string
		col   int
		msg   string // a part of the message
	}{
		{"Running", 1, `"Running" is not a term`},
		{"status = Running", 1, `"status" is not a term`},
		{"=Running", 1, `"=Running" is not a term`},
		{"state=Running", 1, `unknown field "state": want one of status, type, queue, id, created, closed, paused`},
		{"paused=yes", 8, `"yes" is not true or false`},
		{"paused=true,false", 13, "paused takes true or false, not a list"},
		{"paused>true", 7, "paused takes the operators = !=, not >"},
		{"status=Runing", 8, `"Runing" is not a status: want one of Queued, Running`},
		{"status>Running", 7, "status takes the operators = !=, not >"},
		{"created=2026-11-01", 8, "created takes the operators > >= < <=, not ="},
		{"type=", 6, "missing value"},
		{"type=a,", 8, "missing value"},
		{"type=a,,b", 8, "missing value"},
		{`type=""`, 6, "a value must not be empty"},
		{`type="abc`, 6, "no closing quote"},
		{`type="a\b"`, 8, "a backslash escapes only"},
		{`type=ab"c"`, 8, "a quote inside a bare value"},
		{`type="a"b`, 9, "expected a space before the next term"},
		{"type=*", 6, `"*" alone matches everything`},
		{"status=Run*", 8, "not by a prefix"},
		{"created>yesterday", 9, `"yesterday" is not a time`},
		{"created>-1x", 9, `"1x" is not a duration`},
		{"created>-0s", 9, "must be positive"},
		{"created>now+1h", 9, `after "now" comes "-"`},
		{"created>2026-11-01,2026-11-02", 19, "created takes one time, not a list"},
		{"created>99999999999999999999", 9, "too large for Unix milliseconds"},
		{"created>-999999999d", 9, "too many days"},
		{"created>*", 9, "alone matches everything"},
		{"created>2026*", 9, "a time takes no"},
		{"status=Running type", 16, `"type" is not a term`},
		{"type=a queue", 8, `"queue" is not a term`},
		{"queue", 1, `"queue" is not a term`},
		{strings.Repeat("x", maxQueryRunes+1), maxQueryRunes + 1, "at most 4096 characters"},
	} {
		_, err := Parse(tc.query, now)
		var se *SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) = %v, want a *SyntaxError", tc.query, err)
			continue
		}
		if se.Col != tc.col || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("Parse(%q): column %d %q, want column %d containing %q", tc.query, se.Col, se.Msg, tc.col, tc.msg)
		}
		if se.Code() != SyntaxCode || !strings.Contains(err.Error(), SyntaxCode) {
			t.Errorf("Parse(%q): error %q lacks its code", tc.query, err)
		}
	}
}

func TestMatch(t *testing.T) {
	job := &engine.Job{ID: 7, WorkflowID: "order-42", Type: "Order", Queue: "orders", Status: engine.StatusCompleted,
		CreatedMS: ms("2026-11-01T10:00:00Z"), ClosedMS: ms("2026-11-01T11:00:00Z")}
	open := &engine.Job{ID: 8, WorkflowID: "order-43", Type: "Order", Queue: "orders", Status: engine.StatusRunning,
		CreatedMS: ms("2026-11-01T10:00:00Z"), Pause: &engine.PauseInfo{AtMS: 1}}
	job.Pause = &engine.PauseInfo{AtMS: 1}
	for _, tc := range []struct {
		query     string
		job, open bool
	}{
		{"", true, true},
		{"status=Completed", true, false},
		{"status=completed,running", true, true},
		{"status!=Completed", false, true},
		{"status!=Completed,Running", false, false},
		{"type=Order", true, true},
		{"type=order", false, false}, // types, queues and ids are matched as written
		{"type!=Order", false, false},
		{"type=Ord*", true, true},
		{`type="Ord*"`, false, false},
		{"type!=Ord*,X", false, false},
		{"id=order-42", true, false},
		{"id=order-4*", true, true},
		{"id=order-42,order-43", true, true},
		{"workflow_id!=order-42", false, true},
		{"queue=orders,other", true, true},
		{"queue=other", false, false},
		{"created>=2026-11-01T10:00Z", true, true},
		{"created>2026-11-01T10:00Z", false, false},
		{"created<=2026-11-01T10:00Z", true, true},
		{"created<2026-11-01T10:00Z", false, false},
		{"closed>2026-11-01", true, false},
		{"closed<2026-11-03", true, false}, // an open run has no closing time to compare
		{"closed<=2026-11-01T11:00Z status=Completed", true, false},
		{"closed<2026-11-01T11:00Z", false, false},
		{"created>-30h", true, true},
		{"created>-24h", false, false},
		// The open run is paused: a pause of a closed run holds nothing.
		{"paused=true", false, true},
		{"paused=false", true, false},
		{"paused!=true", true, false},
	} {
		q, err := Parse(tc.query, now)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.query, err)
		}
		if got := q.Match(job); got != tc.job {
			t.Errorf("%q matches the closed run: %v, want %v", tc.query, got, tc.job)
		}
		if got := q.Match(open); got != tc.open {
			t.Errorf("%q matches the open run: %v, want %v", tc.query, got, tc.open)
		}
	}
	var nilQuery *Query
	if !nilQuery.Match(job) || nilQuery.String() != "" || nilQuery.ListQuery() != (engine.ListQuery{}) {
		t.Error("a nil query must match everything")
	}
}

func TestQuoteAndFromListQuery(t *testing.T) {
	for _, s := range []string{"plain", "two words", `a"b`, `back\slash`, "a,b", "star*", "tab\there", "ünï"} {
		q, err := Parse("type="+Quote(s), now)
		if err != nil {
			t.Errorf("type=%s: %v", Quote(s), err)
			continue
		}
		if got := q.ListQuery().Type; got != s {
			t.Errorf("Quote(%q) reads back as %q", s, got)
		}
	}
	q := FromListQuery(engine.ListQuery{Status: engine.StatusWaiting, Type: "My type", Queue: "q*", After: 9, Limit: 3})
	if got, want := q.String(), `status=Waiting type="My type" queue="q*"`; got != want {
		t.Errorf("FromListQuery: %q, want %q", got, want)
	}
	if got, want := q.ListQuery(), (engine.ListQuery{Status: engine.StatusWaiting, Type: "My type", Queue: "q*"}); got != want {
		t.Errorf("FromListQuery(...).ListQuery() = %+v, want %+v", got, want)
	}
	both := mustParse(t, "id=a*").And(q)
	if got, want := both.String(), `id=a* status=Waiting type="My type" queue="q*"`; got != want {
		t.Errorf("And: %q, want %q", got, want)
	}
}

func mustParse(t *testing.T, s string) *Query {
	t.Helper()
	q, err := Parse(s, now)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "status=Running type=Order", `type="a \"b\"",c*`, "created>-24h closed<=2026-11-01T10:30Z",
		"id!=x,y* queue:q", "created>=now-7d", "=", `"`, "status=Running,", "created>99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := Parse(s, now)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("Parse(%q): an error that is not ErrSyntax: %v", s, err)
			}
			return
		}
		// What parses writes back to a text that parses to the same query.
		q2, err := Parse(q.String(), now)
		if err != nil {
			t.Fatalf("canonical %q of %q does not parse: %v", q.String(), s, err)
		}
		if q2.String() != q.String() || q2.ListQuery() != q.ListQuery() {
			t.Fatalf("canonical %q of %q parses to %q", q.String(), s, q2.String())
		}
	})
}
