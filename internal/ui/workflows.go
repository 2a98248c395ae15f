package ui

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/listfilter"
)

// The workflow list's page sizes; the first is the default.
var pageSizes = []int{25, 50, 100, 500}

// sortChoice is one entry of the list's sort menu.
type sortChoice struct {
	Value, Label string
}

// sortChoices are the orders of the list; the first is the default.
var sortChoices = []sortChoice{
	{"start_desc", "Newest first"},
	{"start_asc", "Oldest first"},
	{"close_desc", "Closed, newest first"},
	{"close_asc", "Closed, oldest first"},
}

// listForm is the workflow list's filter form, as the browser sent it.
type listForm struct {
	Q, Status, Type, Queue, From, To, Sort string
	Limit                                  int
}

func readListForm(r *http.Request) listForm {
	q := r.URL.Query()
	f := listForm{Q: strings.TrimSpace(q.Get("q")), Status: q.Get("status"), Type: strings.TrimSpace(q.Get("type")),
		Queue: strings.TrimSpace(q.Get("queue")), From: strings.TrimSpace(q.Get("from")), To: strings.TrimSpace(q.Get("to")),
		Sort: q.Get("sort"), Limit: pageSizes[0]}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n >= 1 && n <= engine.MaxPage {
		f.Limit = n
	}
	if f.Sort == sortChoices[0].Value {
		f.Sort = ""
	}
	return f
}

// text is the form as one query of the filter language: the fields as
// heddle's terms, then the free text (in parentheses when it has an OR,
// so that the fields hold for all of it; its ORDER BY, if any, last).
func (f listForm) text() string {
	var terms []string
	add := func(field, v string) {
		if v != "" {
			terms = append(terms, field+"="+quoteKeepStar(v))
		}
	}
	add("status", f.Status)
	add("type", f.Type)
	add("queue", f.Queue)
	if f.From != "" {
		terms = append(terms, "created>="+quoteKeepStar(f.From))
	}
	if f.To != "" {
		terms = append(terms, "created<"+quoteKeepStar(f.To))
	}
	if f.Q == "" {
		return strings.Join(terms, " ")
	}
	if len(terms) == 0 {
		return f.Q
	}
	// The fields hold beside the whole of the free text: an OR at its top
	// goes in parentheses, and its ORDER BY, which ends a query, after.
	q, order := f.Q, ""
	if m := orderByTail.FindStringIndex(q); m != nil {
		q, order = strings.TrimSpace(q[:m[0]]), q[m[0]:]
	}
	if parsed, err := listfilter.Parse(q, time.Time{}); err == nil {
		if _, or := parsed.Expr.(listfilter.Or); or {
			q = "(" + q + ")"
		}
	}
	if q != "" {
		terms = append(terms, q)
	}
	if order != "" {
		terms = append(terms, order)
	}
	return strings.Join(terms, " ")
}

// orderByTail finds the ORDER BY that ends a query.
var orderByTail = regexp.MustCompile(`(?i)\border\s+by\s+\w+(\s+(asc|desc))?\s*$`)

// quoteKeepStar writes a form field's value as a bare value of the
// language when it reads back as itself, keeping a trailing "*" a prefix
// match as it is in the query box, and in quotes otherwise.
func quoteKeepStar(v string) string {
	s, star := strings.CutSuffix(v, "*")
	bare := s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return r <= ' ' || r == 0x7f || strings.ContainsRune(`"',()*\`, r)
	}) && !strings.EqualFold(s, "and") && !strings.EqualFold(s, "or")
	switch {
	case bare && star:
		return v
	case bare:
		return s
	}
	return listfilter.Quote(v)
}

// values is the form as URL parameters, with a page token.
func (f listForm) values(token string) url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"q": f.Q, "status": f.Status, "type": f.Type, "queue": f.Queue, "from": f.From, "to": f.To, "sort": f.Sort} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if f.Limit != pageSizes[0] {
		v.Set("limit", strconv.Itoa(f.Limit))
	}
	if token != "" {
		v.Set("page", token)
	}
	return v
}

// workflowsData is the workflow list page's.
type workflowsData struct {
	Form     listForm
	Statuses []string
	Sizes    []int
	Sorts    []sortChoice
	// Query is the whole filter in the language, as the CLI takes it, and
	// Order its --order ("" for the default).
	Query, Order string
	QueryError   string
	Runs         []*engine.Job
	// OrderNote says how the runs are sorted.
	OrderNote string
	// First, Prev and Next link the first page and the pages before and
	// after this one ("" for none).
	First, Prev, Next string
	// Cut: the page stopped at the scan budget, Scanned runs read.
	Cut     bool
	Scanned int
	// BatchOps are the Batch panel's operations.
	BatchOps []engine.BatchOperation
}

func (h *Handler) workflows(rq *request) (*page, error) {
	f := readListForm(rq.r)
	d := &workflowsData{Form: f, Sizes: pageSizes, Sorts: sortChoices, Statuses: listfilter.ExecutionStatusNames(), BatchOps: batchOps}
	p := &page{Template: "workflows.html", Title: "Workflows", Nav: "workflows", Data: d}
	d.Query = f.text()
	order, err := engine.ParseListOrder(f.Sort)
	if err != nil {
		return nil, &pageError{status: http.StatusBadRequest, msg: fmt.Sprintf("sort=%q is not an order of this page", f.Sort)}
	}
	if f.Sort != "" {
		d.Order = f.Sort
	}
	// A mistake in the query box is told by its column there; one in a
	// field by its column in the whole query the fields make.
	_, err = listfilter.Parse(f.Q, rq.now)
	if err == nil {
		_, err = listfilter.Parse(d.Query, rq.now)
	}
	if err != nil {
		var se *listfilter.SyntaxError
		if errors.As(err, &se) {
			at := "at the end"
			if se.Token != "" {
				at = fmt.Sprintf("at %q", se.Token)
			}
			d.QueryError = fmt.Sprintf("At column %d, %s: %s", se.Col, at, se.Msg)
		} else {
			d.QueryError = err.Error()
		}
		p.Status = http.StatusBadRequest
		return p, nil
	}
	token := rq.r.URL.Query().Get("page")
	res, err := rq.api.List(rq.ctx, engine.ListQuery{Query: d.Query, Order: order, PageToken: token, Limit: f.Limit, NowMS: rq.now.UnixMilli()})
	if errors.Is(err, engine.ErrInvalidCommand) {
		if token != "" {
			return nil, &pageError{status: http.StatusBadRequest, msg: "This page's link belongs to another filter or sort: start again from the first page."}
		}
		d.QueryError = err.Error()
		p.Status = http.StatusBadRequest
		return p, nil
	}
	if err != nil {
		return nil, err
	}
	d.Runs, d.Cut, d.Scanned = res.Jobs, res.Cut, res.Scanned
	if token != "" {
		d.First = Path + "/workflows?" + f.values("").Encode()
	}
	if res.PrevPageToken != "" {
		d.Prev = Path + "/workflows?" + f.values(res.PrevPageToken).Encode()
	}
	if res.NextPageToken != "" {
		d.Next = Path + "/workflows?" + f.values(res.NextPageToken).Encode()
	}
	d.OrderNote = map[engine.ListOrder]string{
		engine.ListStartDesc: "Runs are listed newest first, by the time they started.",
		engine.ListStartAsc:  "Runs are listed oldest first, by the time they started.",
		engine.ListCloseDesc: "Runs that ended are listed first, the latest to end first; then the open runs, newest first.",
		engine.ListCloseAsc:  "Runs that ended are listed first, the earliest to end first; then the open runs, oldest first.",
	}[res.Order]
	return p, nil
}

// workflowByID sends the browser to the current run of a workflow id.
func (h *Handler) workflowByID(rq *request) (*page, error) {
	id := rq.r.URL.Query().Get("id")
	if id == "" {
		return nil, &pageError{status: http.StatusBadRequest, msg: "Name a workflow id: /ui/workflow?id=..."}
	}
	j, err := rq.api.Describe(rq.ctx, engine.Target{WorkflowID: id})
	if err != nil {
		return nil, err
	}
	return nil, redirect{to: runPath(j.ID)}
}

// runPath is the page of one run.
func runPath(id engine.JobID) string { return fmt.Sprintf("%s/runs/%d", Path, id) }

// runsOfPath is the workflow list filtered to the runs of one workflow id.
func runsOfPath(workflowID string) string {
	return Path + "/workflows?" + url.Values{"q": {"WorkflowId = " + listfilter.Quote(workflowID)}}.Encode()
}
