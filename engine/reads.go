package engine

// HistoryPage is one page of a job's history.
type HistoryPage struct {
	Events []Event `json:"events"`
	// Next is the seq to pass as afterSeq for the following page; 0 when
	// this page reached the end of the history.
	Next uint64 `json:"next"`
}

// MaxPage bounds the size of one History or List page.
const MaxPage = 1000

// ListQuery filters and pages List. Zero fields do not filter.
type ListQuery struct {
	Status Status
	Type   string
	Queue  string
	// Paused keeps only the open runs that are paused (Job.Paused: an
	// operator's Pause, or an activity task its run's pause holds).
	Paused bool
	// CreatedFromMS and CreatedBeforeMS keep the jobs created in
	// [CreatedFromMS, CreatedBeforeMS), in Unix ms; 0 leaves that side open.
	CreatedFromMS   int64
	CreatedBeforeMS int64
	// After is the cursor: only jobs with a larger id are listed (none
	// when it is the largest JobID).
	After JobID
	// Limit bounds the page (0 means 100; at most MaxPage).
	Limit int
}

// ListPage is one page of List, in job-id (creation) order.
type ListPage struct {
	Jobs []*Job `json:"jobs"`
	// Next is the cursor for the following page; 0 at the end.
	Next JobID `json:"next"`
}
