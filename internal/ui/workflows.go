package ui

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/listfilter"
)

// The workflow list's page sizes; the first is the default.
var pageSizes = []int{25, 50, 100, 500}

// listForm is the workflow list's filter form, as the browser sent it.
type listForm struct {
	Q, Status, Type, Queue, From, To string
	Limit                            int
}

func readListForm(r *http.Request) listForm {
	q := r.URL.Query()
	f := listForm{Q: strings.TrimSpace(q.Get("q")), Status: q.Get("status"), Type: strings.TrimSpace(q.Get("type")),
		Queue: strings.TrimSpace(q.Get("queue")), From: strings.TrimSpace(q.Get("from")), To: strings.TrimSpace(q.Get("to")),
		Limit: pageSizes[0]}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n >= 1 && n <= engine.MaxPage {
		f.Limit = n
	}
	return f
}

// text is the form as one query of the filter language: the fields as
// terms, then the free text.
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
	if f.Q != "" {
		terms = append(terms, f.Q)
	}
	return strings.Join(terms, " ")
}

// quoteKeepStar quotes a form field's value, but leaves a trailing "*" a
// prefix match, as it is in the query box.
func quoteKeepStar(v string) string {
	if s, ok := strings.CutSuffix(v, "*"); ok && s != "" && listfilter.Quote(s) == s {
		return v
	}
	return listfilter.Quote(v)
}

// values is the form as URL parameters, with the cursor after.
func (f listForm) values(after engine.JobID) url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"q": f.Q, "status": f.Status, "type": f.Type, "queue": f.Queue, "from": f.From, "to": f.To} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if f.Limit != pageSizes[0] {
		v.Set("limit", strconv.Itoa(f.Limit))
	}
	if after != 0 {
		v.Set("after", strconv.FormatUint(uint64(after), 10))
	}
	return v
}

// workflowsData is the workflow list page's.
type workflowsData struct {
	Form     listForm
	Statuses []string
	Sizes    []int
	// Query is the whole filter in the language, as the CLI takes it.
	Query      string
	QueryError string
	Runs       []*engine.Job
	// First and Next link the first and the following page ("" for none).
	First, Next string
	// Cut: the page stopped at the scan budget, Scanned runs read.
	Cut     bool
	Scanned int
}

func (h *Handler) workflows(rq *request) (*page, error) {
	f := readListForm(rq.r)
	d := &workflowsData{Form: f, Sizes: pageSizes}
	for _, s := range engine.Statuses() {
		d.Statuses = append(d.Statuses, s.String())
	}
	p := &page{Template: "workflows.html", Title: "Workflows", Nav: "workflows", Data: d}
	var after engine.JobID
	if s := rq.r.URL.Query().Get("after"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, &pageError{status: http.StatusBadRequest, msg: fmt.Sprintf("after=%q is not a cursor of this page", s)}
		}
		after = engine.JobID(n)
	}
	q, err := listfilter.Parse(f.text(), rq.now)
	if err != nil {
		d.Query = f.text()
		var se *listfilter.SyntaxError
		if errors.As(err, &se) {
			d.QueryError = fmt.Sprintf("At column %d: %s", se.Col, se.Msg)
		} else {
			d.QueryError = err.Error()
		}
		p.Status = http.StatusBadRequest
		return p, nil
	}
	d.Query = q.String()
	res, err := q.Page(rq.ctx, rq.api, after, f.Limit, 0)
	if err != nil {
		return nil, err
	}
	d.Runs, d.Cut, d.Scanned = res.Jobs, res.Cut, res.Scanned
	if after != 0 {
		d.First = Path + "/workflows?" + f.values(0).Encode()
	}
	if res.Next != 0 {
		d.Next = Path + "/workflows?" + f.values(res.Next).Encode()
	}
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
