package engine

import (
	"context"
	"fmt"
)

// HistoryPage is one page of a job's history.
type HistoryPage struct {
	Events []Event `json:"events"`
	// Next is the seq to pass as afterSeq for the following page; 0 when
	// this page reached the end of the history.
	Next uint64 `json:"next"`
}

// MaxPage bounds the size of one History or List page.
const MaxPage = 1000

// MaxPageBytes bounds the payload bytes of one History page: a page ends
// before the event that would take it past this many (its Next says where
// the next page starts), and always holds at least one event, which
// Limits.MaxPayloadBytes bounds. Without it a page of MaxPage events of
// the largest payloads would be a gigabyte a node reads into memory.
const MaxPageBytes = 4 << 20

// ListQuery filters, sorts and pages List. Zero fields do not filter; the
// zero ListQuery lists every run, newest first. The filters combine: a run
// is listed when it passes every one of them.
type ListQuery struct {
	// Status keeps the runs in exactly this status of heddle's (Running:
	// a worker holds the run's lease now).
	Status Status
	// ExecutionStatus keeps the runs in a status named as a person or
	// Temporal names one (docs/concepts.md, "Statuses in lists"): "open"
	// or Temporal's "Running" for every run that has not ended, "closed"
	// for every one that has, Temporal's Completed, ContinuedAsNew,
	// Failed, Canceled, Terminated and TimedOut, Temporal's Paused (the
	// open runs that are paused), or one of heddle's own open statuses
	// (Queued, Waiting, ...); any case.
	ExecutionStatus string
	Type            string
	Queue           string
	// WorkflowID keeps every run of one workflow id: the current one and
	// the ones before it (a continue-as-new chain, retries, later starts).
	WorkflowID string
	// Paused keeps only the open runs that are paused (Job.Paused: an
	// operator's Pause, or an activity task its run's pause holds).
	Paused bool
	// CreatedFromMS and CreatedBeforeMS keep the jobs created in
	// [CreatedFromMS, CreatedBeforeMS), in Unix ms; 0 leaves that side open.
	CreatedFromMS   int64
	CreatedBeforeMS int64
	// Query is a filter in the list-filter language: Temporal's
	// (WorkflowType = "order" AND ExecutionStatus = "Running" ORDER BY
	// StartTime DESC) or heddle's terms (type=order status=Running), as
	// internal/listfilter and docs/concepts.md describe it. Its ORDER BY
	// sets the order when Order is ListOrderDefault.
	Query string
	// NowMS is the time relative times of Query ("-24h", "now") count back
	// from, in Unix ms; 0 means the reading node's clock.
	NowMS int64
	// Order sorts the page.
	Order ListOrder
	// PageToken continues a listing from a page's NextPageToken (the runs
	// after it) or PrevPageToken (the runs before it). It belongs to the
	// query and order it came from, and is refused with any other.
	PageToken string
	// After is the first cursor of List: the runs with a larger id, oldest
	// first. It sorts the page by ListStartAsc when Order is
	// ListOrderDefault, and cannot be given with a PageToken.
	After JobID
	// Limit bounds the page (0 means 100; at most MaxPage).
	Limit int
	// Places asks for ListPage.Places: the place of each run of the page,
	// as a page token. A sharded cluster's router asks it of each shard to
	// merge their pages into one order; other callers leave it false.
	Places bool
}

// ListOrder is the order of a List page.
type ListOrder uint8

// The orders of List. Sorted by start time, runs with the same start keep
// the order of their ids (which is the order they were created in);
// sorted by closing time, runs that have not ended come after every run
// that has, in both directions (as Temporal's Elasticsearch visibility
// sorts a missing CloseTime), newest first in ListCloseDesc.
const (
	// ListOrderDefault is ListStartDesc, unless the Query's ORDER BY
	// names an order (or After is set: then ListStartAsc).
	ListOrderDefault ListOrder = iota
	ListStartDesc
	ListStartAsc
	ListCloseDesc
	ListCloseAsc
	numListOrders
)

var listOrderNames = [numListOrders]string{"", "start_desc", "start_asc", "close_desc", "close_asc"}

func (o ListOrder) String() string {
	if o < numListOrders {
		if o == ListOrderDefault {
			return "default"
		}
		return listOrderNames[o]
	}
	return fmt.Sprintf("ListOrder(%d)", uint8(o))
}

// ParseListOrder reads an order by its name (start_desc, start_asc,
// close_desc, close_asc; "" is ListOrderDefault).
func ParseListOrder(name string) (ListOrder, error) {
	for i, n := range listOrderNames {
		if n == name {
			return ListOrder(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown list order %q (want start_desc, start_asc, close_desc or close_asc)", ErrInvalidCommand, name)
}

// ByClose reports whether o sorts by closing time.
func (o ListOrder) ByClose() bool { return o == ListCloseDesc || o == ListCloseAsc }

// Desc reports whether o lists the newest first.
func (o ListOrder) Desc() bool {
	return o == ListStartDesc || o == ListCloseDesc || o == ListOrderDefault
}

// ListPage is one page of List, in the order its query asked for.
type ListPage struct {
	Jobs []*Job `json:"jobs"`
	// Next is the After cursor of the following page, for callers that
	// page with After (oldest first); 0 at the end, and in other orders.
	Next JobID `json:"next"`
	// NextPageToken is the PageToken of the runs after this page; empty
	// when none can follow. PrevPageToken is the PageToken of the runs
	// before it; empty on the first page.
	NextPageToken string `json:"next_page_token,omitempty" msgpack:"NextPageToken,omitempty"`
	PrevPageToken string `json:"prev_page_token,omitempty" msgpack:"PrevPageToken,omitempty"`
	// Order is the order the page is sorted in (ListOrderDefault
	// resolved).
	Order ListOrder `json:"order,omitempty" msgpack:"Order,omitempty"`
	// Scanned counts the run records the page read. A page whose filter
	// no index answers reads at most MaxListScan of them: Cut says it
	// stopped there before it was full, and NextPageToken goes on from
	// the last run read, so later pages may still hold matches.
	Scanned int  `json:"scanned,omitempty" msgpack:"Scanned,omitempty"`
	Cut     bool `json:"cut,omitempty" msgpack:"Cut,omitempty"`
	// Places, when ListQuery.Places asked for them, holds one page token
	// per run of Jobs, in the page's direction: on a page read forward (no
	// token, or a NextPageToken) the token of the runs after Jobs[i], as if
	// the page had ended there; on a page read back (a PrevPageToken) the
	// token of the runs before Jobs[i].
	Places []string `json:"places,omitempty" msgpack:"Places,omitempty"`
}

// MaxListScan bounds the run records one List page reads looking for
// runs that match a filter no index answers: ten of the largest pages.
const MaxListScan = 10 * MaxPage

// WorkflowCounter is implemented by a Service that counts runs: the
// embedded *Engine and engine/httpapi's Client. Count takes a ListQuery's
// filters (its order, token and limit are ignored) and counts every
// matching run, by status; a count of one status group reads only the
// status indexes, anything else reads each candidate run's record.
type WorkflowCounter interface {
	Count(ctx context.Context, q ListQuery) (*CountResult, error)
}

// CountResult is the answer of Count.
type CountResult struct {
	Count uint64 `json:"count"`
	// ByStatus counts the matching runs by heddle status name; statuses
	// with none are absent.
	ByStatus map[string]uint64 `json:"by_status"`
	// ContinuedAsNew counts the matching Completed runs that continued as
	// new runs (Temporal's ContinuedAsNew status); they are among
	// ByStatus["Completed"].
	ContinuedAsNew uint64 `json:"continued_as_new,omitempty"`
}
