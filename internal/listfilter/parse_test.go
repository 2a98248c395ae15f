package listfilter

import (
	"errors"
	"fmt"
	"math"
	"slices"
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
		// canon is String() of the parse: Temporal's syntax, which the UI
		// shows and which parses back to the same query.
		canon string
	}{
		{"", ""},
		{"   ", ""},
		// Temporal's syntax.
		{`WorkflowType="X"`, `WorkflowType = "X"`},
		{`WorkflowType = 'X' AND ExecutionStatus = 'Running'`, `WorkflowType = "X" AND ExecutionStatus = "Running"`},
		{`workflowtype = "X" and executionstatus = "running"`, `WorkflowType = "X" AND ExecutionStatus = "Running"`},
		{`WorkflowId = "a" OR WorkflowId = "b" AND TaskQueue = "q"`, `WorkflowId = "a" OR WorkflowId = "b" AND TaskQueue = "q"`},
		{`(WorkflowId = "a" OR WorkflowId = "b") AND TaskQueue = "q"`, `(WorkflowId = "a" OR WorkflowId = "b") AND TaskQueue = "q"`},
		{`((((WorkflowId = "a"))))`, `WorkflowId = "a"`},
		{`ExecutionStatus IN ('Failed','TimedOut')`, `ExecutionStatus IN ("Failed", "TimedOut")`},
		{`ExecutionStatus NOT IN ("Completed")`, `ExecutionStatus NOT IN ("Completed")`},
		{`ExecutionStatus != "Canceled"`, `ExecutionStatus != "Canceled"`},
		{`ExecutionStatus = "Cancelled"`, `ExecutionStatus = "Canceled"`},
		{`WorkflowId STARTS_WITH "order-"`, `WorkflowId STARTS_WITH "order-"`},
		{`StartTime > "2026-11-01T00:00:00Z"`, `StartTime > "2026-11-01T00:00:00Z"`},
		{`StartTime BETWEEN "2026-11-01" AND "2026-11-02" AND CloseTime <= "now"`, `StartTime BETWEEN "2026-11-01" AND "2026-11-02" AND CloseTime <= "now"`},
		{`CloseTime NOT BETWEEN 1000 AND 2000`, `CloseTime NOT BETWEEN "1000" AND "2000"`},
		{`RunId IN (7, 9)`, `RunId IN ("7", "9")`},
		{`ORDER BY StartTime`, `ORDER BY StartTime ASC`},
		{`order by closetime desc`, `ORDER BY CloseTime DESC`},
		{`WorkflowType = "X" ORDER BY StartTime DESC`, `WorkflowType = "X" ORDER BY StartTime DESC`},
		{`TaskQueue <> "q"`, `TaskQueue != "q"`},
		{`WorkflowId == 'it\'s'`, `WorkflowId = "it's"`},
		{`WorkflowType = "say \"hi\" \\ bye"`, `WorkflowType = "say \"hi\" \\ bye"`},
		{`HeddleStatus = "Running"`, `HeddleStatus = "Running"`},
		// heddle's terms.
		{"status=Running", `ExecutionStatus = "Running"`},
		{"STATUS:waiting", `ExecutionStatus = "Waiting"`},
		{"status=open", `ExecutionStatus = "Open"`},
		{"status=Running type=Order queue=q", `ExecutionStatus = "Running" AND WorkflowType = "Order" AND TaskQueue = "q"`},
		{"task_queue=q workflow_id=a", `TaskQueue = "q" AND WorkflowId = "a"`},
		{"status=Running,Waiting", `ExecutionStatus IN ("Running", "Waiting")`},
		{"status!=Completed,Failed", `ExecutionStatus NOT IN ("Completed", "Failed")`},
		{"type=Ord*", `WorkflowType STARTS_WITH "Ord"`},
		{`type="Ord*"`, `WorkflowType = "Ord*"`},
		{`type="Nightly report",x,y*`, `WorkflowType IN ("Nightly report", "x") OR WorkflowType STARTS_WITH "y"`},
		{`type=a,b* queue=q`, `(WorkflowType = "a" OR WorkflowType STARTS_WITH "b") AND TaskQueue = "q"`},
		{`id!=a,b*`, `WorkflowId != "a" AND WorkflowId NOT STARTS_WITH "b"`},
		{"created>-24h closed<=now", `StartTime > "-24h" AND CloseTime <= "now"`},
		{"created>=2026-11-01T10:30:00+02:00", `StartTime >= "2026-11-01T10:30:00+02:00"`},
		{"  status=Failed\t\tqueue=x  ", `ExecutionStatus = "Failed" AND TaskQueue = "x"`},
		{"id=ünï", `WorkflowId = "ünï"`},
		{"run=7", `RunId = "7"`},
		// Pause: heddle's field, and Temporal's status.
		{"paused=true", `Paused = "true"`},
		{"Paused = FALSE", `Paused = "false"`},
		{"is_paused!=true status=Waiting", `Paused != "true" AND ExecutionStatus = "Waiting"`},
		{`ExecutionStatus = "paused"`, `ExecutionStatus = "Paused"`},
		{`ExecutionStatus IN ("Paused", "Failed")`, `ExecutionStatus IN ("Paused", "Failed")`},
		// Both at once.
		{`status=Running AND (type=a OR WorkflowType = "b") ORDER BY CloseTime`, `ExecutionStatus = "Running" AND (WorkflowType = "a" OR WorkflowType = "b") ORDER BY CloseTime ASC`},
	} {
		q, err := Parse(tc.query, now)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.query, err)
			continue
		}
		if got := q.String(); got != tc.canon {
			t.Errorf("Parse(%q).String() =\n  %s\nwant\n  %s", tc.query, got, tc.canon)
		}
		// The canonical form reads back as the same query.
		q2, err := Parse(q.String(), now)
		if err != nil {
			t.Errorf("the canonical form %q of %q: %v", q.String(), tc.query, err)
		} else if q2.String() != q.String() || q2.Digest() != q.Digest() {
			t.Errorf("canonical %q of %q parses to %q", q.String(), tc.query, q2.String())
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		query string
		col   int
		token string
		msg   string // a part of the message
	}{
		{"Running", 1, "Running", `unknown field "Running"`},
		{"status", 7, "", `after status comes an operator`},
		{"=Running", 1, "=", "expected a field name"},
		{"state=Running", 1, "state", `unknown field "state": want one of ExecutionStatus, WorkflowType`},
		{`WorkflowTyp = "x"`, 1, "WorkflowTyp", `unknown field "WorkflowTyp"`},
		{"status=Runing", 8, "Runing", `"Runing" is not a status of ExecutionStatus: want one of Running, Completed, ContinuedAsNew`},
		{`HeddleStatus = "ContinuedAsNew"`, 16, `"ContinuedAsNew"`, `is not a status of HeddleStatus`},
		{"status>Running", 7, ">", "ExecutionStatus takes the operators =, !=, IN, NOT IN, not >"},
		{`WorkflowType > "a"`, 14, ">", "WorkflowType takes the operators"},
		{"StartTime STARTS_WITH 2026", 11, "STARTS_WITH", "StartTime takes the operators"},
		{"type=", 6, "", "missing value of WorkflowType"},
		{"type=a,", 8, "", "missing value"},
		{"type=a,,b", 8, ",", "missing value"},
		{`type=""`, 6, `""`, "a value must not be empty"},
		{`type="abc`, 6, `"abc`, "no closing quote"},
		{`type="a\b"`, 8, `\b"`, "a backslash escapes only"},
		{`type=ab"c"`, 8, `"c"`, "a quote inside a bare value"},
		{`type="a"b`, 9, "b", `unknown field "b"`},
		{"type=*", 6, "*", `"*" alone matches everything`},
		{"status=Run*", 8, "Run", "matched in full"},
		{`type IN (a*)`, 10, "a", "only after = or !="},
		{"created>yesterday", 9, "yesterday", `"yesterday" is not a time`},
		{"created>-1x", 9, "-1x", `"1x" is not a duration`},
		{"created>-0s", 9, "-0s", "must be positive"},
		{"created>now+1h", 9, "now", `after "now" comes "-"`},
		{"created>2026-11-01,2026-11-02", 19, ",", "takes one value, not a list"},
		{"created>99999999999999999999", 9, "99999999999999999999", "too large for Unix milliseconds"},
		{"run=0", 5, "0", "not a run id"},
		{"paused=yes", 8, "yes", `"yes" is not true or false`},
		{"paused=true,false", 12, ",", "Paused = takes one value, not a list"},
		{"paused>true", 7, ">", "Paused takes the operators =, !=, not >"},
		{"paused IN (true)", 8, "IN", "Paused takes the operators =, !=, not IN"},
		{"paused=tr*", 8, "tr", "matched in full"},
		{`HeddleStatus = "Paused"`, 16, `"Paused"`, "is not a status of HeddleStatus"},
		{"run=x", 5, "x", "not a run id"},
		{`StartTime BETWEEN "2026-11-02" AND "2026-11-01"`, 19, `"2026-11-02"`, "the earlier time first"},
		{`StartTime BETWEEN "2026-11-02"`, 31, "", "two times joined by AND"},
		{`ExecutionStatus IN "Running"`, 20, `"Running"`, "a list in parentheses"},
		{`ExecutionStatus IN ("Running" "Failed")`, 31, `"Failed"`, "expected , or )"},
		{`ExecutionStatus IN ("Running"`, 20, "(", "has no closing )"},
		{`(type=a`, 1, "(", "has no closing )"},
		{`(type=a OR`, 11, "", "OR needs a comparison"},
		{`type=a AND`, 11, "", "AND needs a comparison"},
		{`type=a)`, 7, ")", "a ) closes no ("},
		{`()`, 2, ")", "empty parentheses"},
		{`(type=a type=b queue`, 21, "", "after queue comes an operator"},
		{`NOT type=a`, 1, "NOT", "NOT is written inside a comparison"},
		{`type = AND queue=q`, 8, "AND", "AND is a keyword"},
		{`ORDER StartTime`, 7, "StartTime", "ORDER is followed by BY"},
		{`ORDER BY WorkflowType`, 10, "WorkflowType", "ORDER BY takes StartTime or CloseTime"},
		{`type=a ORDER BY StartTime DESC queue=q`, 32, "queue", "expected AND, OR or ORDER BY"},
		{strings.Repeat("(", maxDepth+1) + "type=a" + strings.Repeat(")", maxDepth+1), maxDepth + 1, "(", "nest at most 32 deep"},
		{strings.Repeat("type=a ", maxPreds) + "type=b", 7*maxPreds + 1, "type", "at most 256 comparisons"},
		{"type IN (" + strings.Repeat("a,", maxValues) + "a)", 10 + 2*maxValues, "a", "at most 256 values"},
		{strings.Repeat("x", maxQueryRunes+1), maxQueryRunes + 1, "", "at most 4096 characters"},
	} {
		_, err := Parse(tc.query, now)
		var se *SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, ErrSyntax) || !errors.Is(err, engine.ErrInvalidCommand) {
			t.Errorf("Parse(%q) = %v, want a *SyntaxError", tc.query, err)
			continue
		}
		if se.Col != tc.col || se.Token != tc.token || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("Parse(%q): column %d token %q %q,\n want column %d token %q containing %q", tc.query, se.Col, se.Token, se.Msg, tc.col, tc.token, tc.msg)
		}
		if se.Code() != SyntaxCode || !strings.Contains(err.Error(), SyntaxCode) || !strings.Contains(err.Error(), fmt.Sprintf("column %d", tc.col)) {
			t.Errorf("Parse(%q): error %q lacks its code or column", tc.query, err)
		}
	}
}

// Jobs of the match table: a run that completed, one that continued as
// new, and an open one (heddle's Waiting).
var (
	doneJob = &engine.Job{ID: 7, WorkflowID: "order-42", Type: "Order", Queue: "orders", Status: engine.StatusCompleted,
		CreatedMS: ms("2026-11-01T10:00:00Z"), ClosedMS: ms("2026-11-01T11:00:00Z")}
	canJob = &engine.Job{ID: 8, WorkflowID: "order-42", Type: "Order", Queue: "orders", Status: engine.StatusCompleted,
		CreatedMS: ms("2026-11-01T10:00:00Z"), ClosedMS: ms("2026-11-01T12:00:00Z"), NextRunID: 9, NextRunReason: engine.ReasonContinuedAsNew}
	openJob = &engine.Job{ID: 9, WorkflowID: "order-42", Type: "Order", Queue: "orders", Status: engine.StatusWaiting,
		CreatedMS: ms("2026-11-01T12:00:00Z"), PrevRunID: 8}
)

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		query           string
		done, can, open bool
	}{
		{"", true, true, true},
		{`ExecutionStatus = "Running"`, false, false, true},
		{"status=Running", false, false, true},
		{"status=open", false, false, true},
		{"status=closed", true, true, false},
		{"status=Waiting", false, false, true},
		{"HeddleStatus=Running", false, false, false}, // heddle's own Running: a worker holds the lease
		{"HeddleStatus=Waiting", false, false, true},
		{"status=Completed", true, false, false},
		{"HeddleStatus=Completed", true, true, false},
		{`ExecutionStatus = "ContinuedAsNew"`, false, true, false},
		{"status!=Completed", false, true, true},
		{"status!=Completed,ContinuedAsNew", false, false, true},
		{"type=Order", true, true, true},
		{"type=order", false, false, false}, // types, queues and ids are matched as written
		{"type=Ord*", true, true, true},
		{`type="Ord*"`, false, false, false},
		{"type!=Ord*,X", false, false, false},
		{"id=order-4*", true, true, true},
		{`WorkflowId STARTS_WITH "order-"`, true, true, true},
		{`WorkflowId NOT IN ("order-42")`, false, false, false},
		{"run=8", false, true, false},
		{"run!=8", true, false, true},
		{"created>=2026-11-01T10:00Z", true, true, true},
		{"created>2026-11-01T10:00Z", false, false, true},
		{`StartTime = 1793527200000`, true, true, false},
		{`StartTime BETWEEN "2026-11-01T09:00Z" AND "2026-11-01T10:00Z"`, true, true, false},
		{`StartTime NOT BETWEEN "2026-11-01T09:00Z" AND "2026-11-01T10:00Z"`, false, false, true},
		{"closed>2026-11-01", true, true, false},
		{"closed<2026-11-03", true, true, false}, // an open run has no closing time to compare
		{"closed!=1", true, true, false},
		{"closed<2026-11-01T11:00Z", false, false, false},
		{`CloseTime >= "2026-11-01T12:00Z" OR ExecutionStatus = "Running"`, false, true, true},
		{`(status=Completed OR run=9) AND type=Order`, true, false, true},
		{`status=Completed OR run=9 AND type=Nope`, true, false, false},
	} {
		q, err := Parse(tc.query, now)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.query, err)
		}
		for _, c := range []struct {
			name string
			j    *engine.Job
			want bool
		}{{"completed", doneJob, tc.done}, {"continued", canJob, tc.can}, {"open", openJob, tc.open}} {
			if got := q.Match(c.j); got != c.want {
				t.Errorf("%q matches the %s run: %v, want %v", tc.query, c.name, got, c.want)
			}
			// The bounds never leave out a match.
			if b := q.Bounds(); c.want && !inBounds(b, c.j) {
				t.Errorf("%q: its bounds leave out the %s run it matches: %+v", tc.query, c.name, b)
			}
		}
	}
	var nilQuery *Query
	if !nilQuery.Match(doneJob) || nilQuery.String() != "" || !nilQuery.StatusOnly() {
		t.Error("a nil query must match everything")
	}
}

// inBounds reports whether j is within b.
func inBounds(b Bounds, j *engine.Job) bool {
	if !slices.Contains(b.Statuses(), j.Status) || b.statuses&statusBit(j) == 0 {
		return false
	}
	in := func(s TextSet, v string) bool { return s.All || slices.Contains(s.Values, v) }
	if !in(b.WorkflowIDs, j.WorkflowID) || !in(b.Types, j.Type) || !in(b.Queues, j.Queue) {
		return false
	}
	if !b.RunIDs.All && !slices.Contains(b.RunIDs.Values, j.ID) {
		return false
	}
	if j.CreatedMS < b.Start.FromMS || j.CreatedMS > b.Start.ToMS {
		return false
	}
	return !j.Status.Terminal() || (j.ClosedMS >= b.Close.FromMS && j.ClosedMS <= b.Close.ToMS)
}

func TestBounds(t *testing.T) {
	set := func(v ...string) TextSet { return TextSet{Values: v} }
	for _, tc := range []struct {
		query    string
		statuses []engine.Status
		ids      TextSet
		types    TextSet
		start    TimeRange
		close    TimeRange
		empty    bool
	}{
		{"", engine.Statuses(), anyText(), anyText(), AnyTime(), AnyTime(), false},
		{"status=Running", []engine.Status{1, 2, 3, 4, 5, 9, 10}, anyText(), anyText(), AnyTime(), AnyTime(), false},
		{"status=ContinuedAsNew", []engine.Status{engine.StatusCompleted}, anyText(), anyText(), AnyTime(), AnyTime(), false},
		{"status!=Running", []engine.Status{6, 7, 8, 11, 12}, anyText(), anyText(), AnyTime(), AnyTime(), false},
		{"id=a,b type=T", engine.Statuses(), set("a", "b"), set("T"), AnyTime(), AnyTime(), false},
		{"id=a OR id=b", engine.Statuses(), set("a", "b"), anyText(), AnyTime(), AnyTime(), false},
		{"id=a OR type=T", engine.Statuses(), anyText(), anyText(), AnyTime(), AnyTime(), false},
		{"id=a id=b", engine.Statuses(), TextSet{Values: []string{}}, anyText(), AnyTime(), AnyTime(), true},
		{"id=a*", engine.Statuses(), anyText(), anyText(), AnyTime(), AnyTime(), false},
		{"created>1000 created<=5000", engine.Statuses(), anyText(), anyText(), TimeRange{1001, 5000}, AnyTime(), false},
		{"created>1000 OR created<=5000", engine.Statuses(), anyText(), anyText(), TimeRange{math.MinInt64, math.MaxInt64}, AnyTime(), false},
		{"(created>=1000 created<2000) OR created BETWEEN 3000 AND 4000", engine.Statuses(), anyText(), anyText(), TimeRange{1000, 4000}, AnyTime(), false},
		{"created>5000 created<5000", engine.Statuses(), anyText(), anyText(), TimeRange{5001, 4999}, AnyTime(), true},
		{"closed>=1000", []engine.Status{6, 7, 8, 11, 12}, anyText(), anyText(), AnyTime(), TimeRange{1000, math.MaxInt64}, false},
		{"closed>=1000 status=Running", nil, anyText(), anyText(), AnyTime(), TimeRange{1000, math.MaxInt64}, true},
	} {
		q, err := Parse(tc.query, now)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.query, err)
		}
		b := q.Bounds()
		if !slices.Equal(b.Statuses(), tc.statuses) || !textEq(b.WorkflowIDs, tc.ids) || !textEq(b.Types, tc.types) ||
			b.Start != tc.start || b.Close != tc.close || b.Empty() != tc.empty {
			t.Errorf("%q: bounds %v ids %+v types %+v start %+v close %+v empty %v;\nwant %v %+v %+v %+v %+v %v", tc.query,
				b.Statuses(), b.WorkflowIDs, b.Types, b.Start, b.Close, b.Empty(), tc.statuses, tc.ids, tc.types, tc.start, tc.close, tc.empty)
		}
	}
}

// Pause is a flag beside the status: a paused open run is Paused, and
// Running and Open too, in its own status as well; a run that ended with
// its pause record still set is not paused.
func TestMatchPaused(t *testing.T) {
	pause := &engine.PauseInfo{AtMS: 1}
	paused := &engine.Job{ID: 10, WorkflowID: "p", Type: "Order", Status: engine.StatusWaiting, CreatedMS: 1, Pause: pause}
	held := &engine.Job{ID: 11, WorkflowID: "h", Type: "Charge", Status: engine.StatusQueued, CreatedMS: 1, HeldByParent: true}
	ended := &engine.Job{ID: 12, WorkflowID: "e", Type: "Order", Status: engine.StatusTerminated, CreatedMS: 1, ClosedMS: 2, Pause: pause}
	for _, tc := range []struct {
		query                     string
		paused, held, ended, open bool
		onlyPaused                bool // the bounds name the paused index
	}{
		{"paused=true", true, true, false, false, true},
		{`ExecutionStatus = "Paused"`, true, true, false, false, true},
		{"paused!=false", true, true, false, false, true},
		{"paused=false", false, false, true, true, false},
		{"paused!=true", false, false, true, true, false},
		{`ExecutionStatus != "Paused"`, false, false, true, true, false},
		{`ExecutionStatus = "Running"`, true, true, false, true, false},
		{"status=open", true, true, false, true, false},
		{"status=Waiting", true, false, false, true, false},
		{"status=Waiting paused=true", true, false, false, false, true},
		{`ExecutionStatus IN ("Paused", "Terminated")`, true, true, true, false, false},
		{`ExecutionStatus NOT IN ("Paused", "Running")`, false, false, true, false, false},
		{"paused=true OR type=Order", true, true, true, true, false},
		{"paused=true type=Order", true, false, false, false, true},
	} {
		q, err := Parse(tc.query, now)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.query, err)
		}
		b := q.Bounds()
		if b.Paused != tc.onlyPaused {
			t.Errorf("%q: bounds keep only paused runs: %v, want %v", tc.query, b.Paused, tc.onlyPaused)
		}
		for _, c := range []struct {
			name string
			j    *engine.Job
			want bool
		}{{"paused", paused, tc.paused}, {"held", held, tc.held}, {"ended", ended, tc.ended}, {"open", openJob, tc.open}} {
			if got := q.Match(c.j); got != c.want {
				t.Errorf("%q matches the %s run: %v, want %v", tc.query, c.name, got, c.want)
			}
			if c.want && (!inBounds(b, c.j) || (b.Paused && !isPaused(c.j))) {
				t.Errorf("%q: its bounds leave out the %s run it matches: %+v", tc.query, c.name, b)
			}
		}
		if strings.Contains(strings.ToLower(tc.query), "paused") && q.StatusOnly() {
			t.Errorf("%q: a pause is no status: it cannot be counted from the status indexes", tc.query)
		}
	}
}

func textEq(a, b TextSet) bool { return a.All == b.All && slices.Equal(a.Values, b.Values) }

func TestCompile(t *testing.T) {
	for _, tc := range []struct {
		lq    engine.ListQuery
		canon string
		order engine.ListOrder
		err   string
	}{
		{engine.ListQuery{}, "", engine.ListStartDesc, ""},
		{engine.ListQuery{After: 3}, "", engine.ListStartAsc, ""},
		{engine.ListQuery{Query: "ORDER BY CloseTime DESC"}, "ORDER BY CloseTime DESC", engine.ListCloseDesc, ""},
		{engine.ListQuery{Order: engine.ListCloseAsc}, "", engine.ListCloseAsc, ""},
		{engine.ListQuery{Status: engine.StatusRunning, ExecutionStatus: "running", Type: "T", Queue: "q", WorkflowID: "w", CreatedFromMS: 5, CreatedBeforeMS: 9, Query: "id=a OR id=b"},
			`(WorkflowId = "a" OR WorkflowId = "b") AND HeddleStatus = "Running" AND ExecutionStatus = "Running" AND WorkflowType = "T" AND TaskQueue = "q" AND WorkflowId = "w" AND StartTime >= "5" AND StartTime < "9"`,
			engine.ListStartDesc, ""},
		{engine.ListQuery{ExecutionStatus: "nope"}, "", 0, `"nope" is not a status`},
		{engine.ListQuery{Status: 99}, "", 0, "not a status"},
		{engine.ListQuery{Order: 9}, "", 0, "not an order"},
		{engine.ListQuery{After: 3, PageToken: "x"}, "", 0, "not both"},
		{engine.ListQuery{After: 3, Order: engine.ListStartDesc}, "", 0, "After pages oldest first"},
		{engine.ListQuery{Order: engine.ListStartAsc, Query: "ORDER BY CloseTime"}, "", 0, "disagree"},
		{engine.ListQuery{Query: "type="}, "", 0, "missing value"},
		{engine.ListQuery{Paused: true, ExecutionStatus: "Running"}, `ExecutionStatus = "Running" AND Paused = "true"`, engine.ListStartDesc, ""},
	} {
		q, err := Compile(tc.lq, now)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, engine.ErrInvalidCommand) {
				t.Errorf("Compile(%+v) = %v, want an invalid-command error containing %q", tc.lq, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Compile(%+v): %v", tc.lq, err)
			continue
		}
		if q.Order != tc.order || (q.Expr == nil) != (tc.canon == "" || strings.HasPrefix(tc.canon, "ORDER")) {
			t.Errorf("Compile(%+v): order %v expr %v", tc.lq, q.Order, q.Expr)
		}
		var b strings.Builder
		if q.Expr != nil {
			q.Expr.write(&b, false)
		}
		if want, _ := strings.CutSuffix(tc.canon, "ORDER BY CloseTime DESC"); b.String() != strings.TrimSpace(want) {
			t.Errorf("Compile(%+v): %s, want %s", tc.lq, b.String(), tc.canon)
		}
	}
	// Statuses alone are counted from the indexes; anything else needs
	// the records.
	for _, tc := range []struct {
		lq   engine.ListQuery
		only bool
	}{
		{engine.ListQuery{}, true},
		{engine.ListQuery{Query: "status=Running,Failed"}, true},
		{engine.ListQuery{Status: engine.StatusQueued}, true},
		{engine.ListQuery{Query: "status=Completed"}, false}, // leaves the continued-as-new runs out
		{engine.ListQuery{Query: "HeddleStatus=Completed"}, true},
		{engine.ListQuery{Query: "status=Running type=x"}, false},
		{engine.ListQuery{Type: "x"}, false},
		{engine.ListQuery{Paused: true}, false},
		{engine.ListQuery{Query: `ExecutionStatus = "Paused"`}, false},
		{engine.ListQuery{Query: `ExecutionStatus != "Paused"`}, false},
		{engine.ListQuery{ExecutionStatus: "Paused"}, false},
	} {
		q, err := Compile(tc.lq, now)
		if err != nil || q.StatusOnly() != tc.only {
			t.Errorf("Compile(%+v).StatusOnly() = %v (%v), want %v", tc.lq, q.StatusOnly(), err, tc.only)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "status=Running type=Order", `type="a \"b\"",c*`, "created>-24h closed<=2026-11-01T10:30Z",
		"id!=x,y* queue:q", "created>=now-7d", "=", `"`, "status=Running,", "created>99999999999999999999",
		`(WorkflowType = 'X' OR (WorkflowId STARTS_WITH "a" AND ExecutionStatus IN ("Running","Failed"))) ORDER BY CloseTime DESC`,
		`StartTime BETWEEN "2026-11-01" AND "2026-11-02"`, `RunId NOT IN (1,2)`,
		strings.Repeat("(", 40) + "type=a" + strings.Repeat(")", 40),
		strings.Repeat("(", 20) + "type=a" + strings.Repeat(" OR type=b)", 20),
		strings.Repeat("type=a AND ", 300) + "type=b",
		"type IN (" + strings.Repeat(`"v",`, 300) + `"v")`,
		strings.Repeat("é", maxQueryRunes+1)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := Parse(s, now)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("Parse(%q): an error that is not a *SyntaxError: %v", s, err)
			}
			if se.Col < 1 || se.Col > len([]rune(s))+1 {
				t.Fatalf("Parse(%q): column %d is outside the query", s, se.Col)
			}
			return
		}
		// What parses writes back to a text that parses to the same query
		// (longer than the query it came from, it may pass Parse's bounds).
		q2, err := parse(q.String(), now, 16*maxQueryRunes, 16*maxQueryRunes)
		if err != nil {
			t.Fatalf("canonical %q of %q does not parse: %v", q.String(), s, err)
		}
		if q2.String() != q.String() {
			t.Fatalf("canonical %q of %q parses to %q", q.String(), s, q2.String())
		}
		// Matching and the bounds agree on every kind of run.
		for _, j := range []*engine.Job{doneJob, canJob, openJob} {
			if q.Match(j) != q2.Match(j) || (q.Match(j) && !inBounds(q.Bounds(), j)) {
				t.Fatalf("%q: run %d matches %v, canonical %v, within bounds %v", s, j.ID, q.Match(j), q2.Match(j), inBounds(q.Bounds(), j))
			}
		}
	})
}
