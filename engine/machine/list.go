package machine

import (
	"errors"
	"fmt"
	"math"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/listfilter"
	"github.com/heddlewf/heddle/storage"
)

// How List finds runs. Every order is one or two segments, each an index
// walked in one direction:
//
//   - by start time (ListStartDesc, ListStartAsc): one segment in run-id
//     order, which is the order of start times (Apply stamps each run with
//     a time no earlier than the run before it, and Verify checks it);
//   - by closing time (ListCloseDesc, ListCloseAsc): the runs that ended,
//     from the closing-time index (segment 0), and then the runs that have
//     not, in run-id order (segment 1): in both directions the open runs
//     come last, as Temporal's Elasticsearch visibility sorts a missing
//     CloseTime.
//
// A run-id segment walks the narrowest index the filter's bounds allow:
// the run ids it names, else the runs of the workflow ids it names, else
// the paused index when only paused runs can match, else the status indexes of the statuses it allows (when that is not all of
// them), else the type or queue index of the values it names, else every
// run. Several indexes of one field (two workflow ids, the seven open
// statuses) are merged in id order, reading a few keys of each at a time.
// A start-time bound becomes a run-id range, found by a binary search over
// the runs' start times. Each run found is read and checked with the
// filter; a page reads at most engine.MaxListScan runs.

// The segments of an order.
const (
	segClosed = 0 // in a close order, the runs that ended; in a start order, every run
	segOpen   = 1 // in a close order, the runs that have not ended
)

// listPos is a place in an order: a segment, and in it the closing time
// (in the closing-time segment) and the run id.
type listPos struct {
	seg  uint8
	atMS int64
	id   uint64
}

// less orders two places of one segment.
func (p listPos) less(o listPos) bool {
	if p.atMS != o.atMS {
		return p.atMS < o.atMS
	}
	return p.id < o.id
}

// suffix is the part of an index key after its prefix that p stands for.
func (p listPos) suffix(closed bool) []byte {
	if closed {
		return append(storage.U64(uint64(p.atMS)), storage.U64(p.id)...)
	}
	return storage.U64(p.id)
}

// segment is one index walk of a plan.
type segment struct {
	seg uint8
	// closed: the segment walks the closing-time index.
	closed bool
	// prefixes are the indexes merged (each ends its keys in a run id);
	// ids, when not nil, are the run ids to read instead.
	prefixes [][]byte
	ids      []uint64
	// lo and hi bound the places walked, both included.
	lo, hi listPos
	// asc: the order walks this segment upwards.
	asc bool
	// openOnly: skip the runs that ended (they are in the other segment).
	openOnly bool
}

// plan is how one list query walks the indexes.
type plan struct {
	segs []*segment // in the order's forward direction
}

// chunk is how many keys a merged index reads at a time.
const chunk = 64

// planList makes the plan of order over the runs within b.
func planList(r *storage.Reader, order engine.ListOrder, b listfilter.Bounds) (*plan, error) {
	p := &plan{}
	if b.Empty() {
		return p, nil
	}
	lo, hi, err := startRange(r, b.Start)
	if err != nil {
		return nil, err
	}
	if lo > hi {
		return p, nil
	}
	statuses := b.Statuses()
	if !order.ByClose() {
		s := &segment{seg: segClosed, lo: listPos{id: lo}, hi: listPos{id: hi}, asc: order == engine.ListStartAsc}
		s.prefixes, s.ids = idSources(b, statuses, b.AllStatuses())
		p.segs = append(p.segs, s)
		return p, nil
	}
	asc := order == engine.ListCloseAsc
	var closed, open []engine.Status
	for _, s := range statuses {
		if s.Terminal() {
			closed = append(closed, s)
		} else {
			open = append(open, s)
		}
	}
	if len(closed) > 0 && !b.Close.Empty() {
		from, to := max(b.Close.FromMS, 0), b.Close.ToMS
		if from <= to {
			p.segs = append(p.segs, &segment{seg: segClosed, closed: true, prefixes: [][]byte{storage.ClosedPrefix},
				lo: listPos{seg: segClosed, atMS: from}, hi: listPos{seg: segClosed, atMS: to, id: math.MaxUint64}, asc: asc})
		}
	}
	if len(open) > 0 && b.Close.All() {
		s := &segment{seg: segOpen, lo: listPos{seg: segOpen, id: lo}, hi: listPos{seg: segOpen, id: hi}, asc: asc, openOnly: true}
		s.prefixes, s.ids = idSources(b, open, false)
		p.segs = append(p.segs, s)
	}
	return p, nil
}

// idSources picks the narrowest run-id index for a segment of runs in
// statuses (every status when all is set).
func idSources(b listfilter.Bounds, statuses []engine.Status, all bool) ([][]byte, []uint64) {
	var prefixes [][]byte
	switch {
	case !b.RunIDs.All:
		ids := make([]uint64, 0, len(b.RunIDs.Values))
		for _, id := range b.RunIDs.Values {
			ids = append(ids, uint64(id))
		}
		return nil, ids
	case !b.WorkflowIDs.All:
		for _, wf := range b.WorkflowIDs.Values {
			if len(wf) <= storage.MaxKeyString {
				prefixes = append(prefixes, storage.RunsPrefix(wf))
			}
		}
	case b.Paused:
		// The paused index holds only the open runs that are paused
		// (and the activity tasks their runs' pauses hold): few, as a
		// rule, and in run-id order as every run-id segment walks.
		prefixes = [][]byte{storage.PausedPrefix}
	case !all:
		for _, s := range statuses {
			prefixes = append(prefixes, storage.StatusPrefix(byte(s)))
		}
	case !b.Types.All:
		for _, t := range b.Types.Values {
			if len(t) <= storage.MaxKeyString {
				prefixes = append(prefixes, storage.TypePrefix(t))
			}
		}
	case !b.Queues.All:
		for _, q := range b.Queues.Values {
			if len(q) <= storage.MaxKeyString {
				prefixes = append(prefixes, storage.QueuePrefix(q))
			}
		}
	default:
		prefixes = [][]byte{storage.JobPrefix}
	}
	return prefixes, nil
}

// startRange turns a start-time range into the range of run ids whose
// runs started in it, both included (lo > hi: none), by binary searches
// over the runs' start times, which rise with their ids.
func startRange(r *storage.Reader, t listfilter.TimeRange) (lo, hi uint64, err error) {
	lo, hi = 0, math.MaxUint64
	if t.All() {
		return lo, hi, nil
	}
	if t.Empty() {
		return 1, 0, nil
	}
	last, err := storage.ReadU64(r, storage.KeyNextJob)
	if err != nil {
		return 0, 0, err
	}
	if t.FromMS != math.MinInt64 {
		if lo, err = firstStartedAt(r, last, func(ms int64) bool { return ms >= t.FromMS }); err != nil {
			return 0, 0, err
		}
	}
	if t.ToMS != math.MaxInt64 {
		after, err := firstStartedAt(r, last, func(ms int64) bool { return ms > t.ToMS })
		if err != nil {
			return 0, 0, err
		}
		if after == 0 {
			return 1, 0, nil
		}
		hi = after - 1
	}
	return lo, hi, nil
}

// firstStartedAt returns the smallest run id up to last whose start time
// passes ok (which, once true, stays true for every later run), or
// last+1 when none does.
func firstStartedAt(r *storage.Reader, last uint64, ok func(ms int64) bool) (uint64, error) {
	lo, hi := uint64(1), last+1 // the answer is in [lo, hi]
	for lo < hi {
		mid := lo + (hi-lo)/2
		// The first run at or after mid: ids have no gaps today, but the
		// search does not need that.
		var found *engine.Job
		err := r.Scan(storage.JobPrefix, storage.JobKey(mid), true, func(k, v []byte) (bool, error) {
			j := new(engine.Job)
			if _, err := storage.DecodeAt(k, v, storage.KindJob, jobVersion, j); err != nil {
				return false, err
			}
			found = j
			return false, nil
		})
		if err != nil {
			return 0, err
		}
		switch {
		case found == nil || uint64(found.ID) > last:
			hi = mid
		case ok(found.CreatedMS):
			hi = min(mid, uint64(found.ID))
		default:
			lo = uint64(found.ID) + 1
		}
	}
	return lo, nil
}

// walk calls fn with each place of the plan from start (nil: the
// beginning, or the end going back), forward or back. A start place is
// left out unless inclusive. fn returns false to stop.
func (p *plan) walk(r *storage.Reader, start *listPos, inclusive, forward bool, fn func(pos listPos) (bool, error)) error {
	order := make([]*segment, 0, len(p.segs))
	if forward {
		order = append(order, p.segs...)
	} else {
		for i := len(p.segs) - 1; i >= 0; i-- {
			order = append(order, p.segs[i])
		}
	}
	for _, s := range order {
		from := start
		if start != nil && start.seg != s.seg {
			// Forward, the segments before start's are behind it; back,
			// the ones after it.
			if (s.seg < start.seg) == forward {
				continue
			}
			from = nil
		}
		more, err := s.walk(r, from, inclusive, s.asc == forward, fn)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// walk walks one segment up (asc) or down from from (nil: its end).
func (s *segment) walk(r *storage.Reader, from *listPos, inclusive, asc bool, fn func(pos listPos) (bool, error)) (bool, error) {
	lo, hi := s.lo, s.hi
	if from != nil {
		f := *from
		f.seg = s.seg
		switch {
		case asc && !inclusive:
			if f.id == math.MaxUint64 {
				if f.atMS == math.MaxInt64 {
					return true, nil // nothing sorts after the last place
				}
				f.atMS, f.id = f.atMS+1, 0
			} else {
				f.id++
			}
			fallthrough
		case asc:
			if lo.less(f) {
				lo = f
			}
		case !inclusive:
			if f.id == 0 {
				if f.atMS == math.MinInt64 {
					return true, nil // nothing sorts before the first place
				}
				f.atMS, f.id = f.atMS-1, math.MaxUint64
			} else {
				f.id--
			}
			fallthrough
		default:
			if f.less(hi) {
				hi = f
			}
		}
	}
	if hi.less(lo) {
		return true, nil
	}
	if s.ids != nil {
		return s.walkIDs(lo, hi, asc, fn)
	}
	// One index is read in larger chunks than many merged.
	size := chunk
	if len(s.prefixes) == 1 {
		size = 8 * chunk
	}
	cursors := make([]*indexCursor, len(s.prefixes))
	for i, prefix := range s.prefixes {
		cursors[i] = &indexCursor{prefix: prefix, closed: s.closed, asc: asc, lo: lo, hi: hi, size: size}
	}
	for {
		var best *indexCursor
		for _, c := range cursors {
			if err := c.fill(r); err != nil {
				return false, err
			}
			if len(c.buf) == 0 {
				continue
			}
			if best == nil || (asc && c.buf[0].less(best.buf[0])) || (!asc && best.buf[0].less(c.buf[0])) {
				best = c
			}
		}
		if best == nil {
			return true, nil
		}
		pos := best.buf[0]
		best.buf = best.buf[1:]
		pos.seg = s.seg
		if more, err := fn(pos); err != nil || !more {
			return false, err
		}
	}
}

// walkIDs walks a segment of named run ids.
func (s *segment) walkIDs(lo, hi listPos, asc bool, fn func(pos listPos) (bool, error)) (bool, error) {
	for i := range s.ids {
		id := s.ids[i]
		if !asc {
			id = s.ids[len(s.ids)-1-i]
		}
		if id < lo.id || id > hi.id {
			continue
		}
		if more, err := fn(listPos{seg: s.seg, id: id}); err != nil || !more {
			return false, err
		}
	}
	return true, nil
}

// indexCursor reads one index between lo and hi, a chunk of keys at a
// time, so that many indexes are merged with one iterator open at once.
type indexCursor struct {
	prefix []byte
	closed bool
	asc    bool
	lo, hi listPos
	buf    []listPos
	size   int // keys a chunk reads
	// next is where the following chunk starts: the first key to read
	// (asc) or the key below which to read (down); nil before the first.
	next []byte
	done bool
}

func (c *indexCursor) fill(r *storage.Reader) error {
	if len(c.buf) > 0 || c.done {
		return nil
	}
	if c.next == nil {
		if c.asc {
			c.next = append(append([]byte(nil), c.prefix...), c.lo.suffix(c.closed)...)
		} else {
			// Just above hi: a key is never hi's key and a zero byte.
			c.next = append(append(append([]byte(nil), c.prefix...), c.hi.suffix(c.closed)...), 0)
		}
	}
	var last []byte
	visit := func(k []byte) (bool, error) {
		pos, err := c.parse(k)
		if err != nil {
			return false, err
		}
		last = k
		if (c.asc && c.hi.less(pos)) || (!c.asc && pos.less(c.lo)) {
			c.done = true
			return false, nil
		}
		c.buf = append(c.buf, pos)
		return len(c.buf) < c.size, nil
	}
	var err error
	if c.asc {
		err = r.Scan(c.prefix, c.next, false, func(k, _ []byte) (bool, error) { return visit(k) })
	} else {
		err = r.ScanReverse(c.prefix, c.next, visit)
	}
	if err != nil {
		return err
	}
	if len(c.buf) < c.size {
		c.done = true
	}
	if last != nil {
		if c.asc {
			c.next = append(last, 0) // the smallest key after last
		} else {
			c.next = last
		}
	}
	return nil
}

func (c *indexCursor) parse(k []byte) (listPos, error) {
	if c.closed {
		at, id, err := storage.ParseClosedKey(k)
		return listPos{atMS: at, id: id}, err
	}
	if len(k) != len(c.prefix)+8 {
		return listPos{}, &storage.CorruptError{Key: append([]byte(nil), k...), Kind: storage.KindKey, Reason: "index key of the wrong length"}
	}
	id, err := storage.TrailingJob(k)
	return listPos{id: id}, err
}

// ListJobs reads the page of runs q asks for, filtered by f (its
// compiled form, whose Order is resolved) and sorted by f.Order (see the
// comment at the top of this file). A page reads at most
// engine.MaxListScan run records. q.Limit 0 means 100.
func ListJobs(r *storage.Reader, q engine.ListQuery, f *listfilter.Query) (_ *engine.ListPage, err error) {
	defer markStorage(&err)
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	order := f.Order
	page := &engine.ListPage{Jobs: []*engine.Job{}, Order: order}
	digest := f.Digest()
	var start *listPos
	forward, inclusive := true, false
	switch {
	case q.PageToken != "":
		t, err := decodePageToken(q.PageToken)
		if err != nil {
			return page, err
		}
		if t.order != order || t.digest != digest {
			return page, fmt.Errorf("%w: the page token belongs to another query or order: page again from the first page", engine.ErrInvalidCommand)
		}
		start, forward, inclusive = &t.pos, !t.back, t.inclusive
	case q.After != 0:
		start = &listPos{seg: segClosed, id: uint64(q.After)}
	}
	b := f.Bounds()
	p, err := planList(r, order, b)
	if err != nil {
		return page, err
	}
	named := !b.RunIDs.All
	var found []*engine.Job
	var places []listPos
	var last *listPos
	more, cut := false, false
	err = p.walk(r, start, inclusive, forward, func(pos listPos) (bool, error) {
		if page.Scanned >= engine.MaxListScan {
			cut = true
			return false, nil
		}
		j, err := ReadJob(r, engine.JobID(pos.id))
		if named && errors.Is(err, engine.ErrUnknownJob) {
			return true, nil // a run id the query named that no run has
		}
		if err != nil {
			return false, err
		}
		page.Scanned++
		at := pos
		last = &at
		if !f.Match(j) || (pos.seg == segOpen && order.ByClose() && j.Status.Terminal()) {
			return true, nil
		}
		if len(found) == limit {
			more = true
			return false, nil
		}
		found, places = append(found, j), append(places, pos)
		return true, nil
	})
	if err != nil {
		return page, err
	}
	page.Cut = cut && len(found) < limit
	tok := func(pos listPos, back, inclusive bool) string {
		return pageToken{order: order, back: back, inclusive: inclusive, digest: digest, pos: pos}.encode()
	}
	// onward is the token that goes on past what this page read.
	var onward string
	switch {
	case more:
		onward = tok(places[len(places)-1], !forward, false)
	case cut && last != nil:
		onward = tok(*last, !forward, false)
	}
	if forward {
		page.Jobs = found
		if q.Places {
			page.Places = make([]string, len(places))
			for i, pos := range places {
				page.Places[i] = tok(pos, false, false)
			}
		}
		page.NextPageToken = onward
		switch {
		case start == nil:
		case len(found) > 0:
			page.PrevPageToken = tok(places[0], true, false)
		default:
			page.PrevPageToken = tok(*start, true, !inclusive)
		}
		switch {
		case order != engine.ListStartAsc:
		case more:
			page.Next = engine.JobID(places[len(places)-1].id)
		case cut && last != nil:
			page.Next = engine.JobID(last.id)
		}
		return page, nil
	}
	page.PrevPageToken = onward
	for i := len(found) - 1; i >= 0; i-- {
		page.Jobs = append(page.Jobs, found[i])
		if q.Places {
			page.Places = append(page.Places, tok(places[i], true, false))
		}
	}
	if len(found) > 0 {
		page.NextPageToken = tok(places[0], false, false)
	} else if start != nil {
		page.NextPageToken = tok(*start, false, !inclusive)
	}
	return page, nil
}

// CountJobs counts the runs f matches, by status. A filter of statuses
// alone is counted from the status indexes without reading a record;
// any other reads every run its indexes allow.
func CountJobs(r *storage.Reader, f *listfilter.Query) (_ *engine.CountResult, err error) {
	defer markStorage(&err)
	res := &engine.CountResult{ByStatus: map[string]uint64{}}
	b := f.Bounds()
	if b.Empty() {
		return res, nil
	}
	if f.StatusOnly() {
		for _, s := range b.Statuses() {
			var n uint64
			if err := r.Scan(storage.StatusPrefix(byte(s)), nil, false, func([]byte, []byte) (bool, error) { n++; return true, nil }); err != nil {
				return res, err
			}
			if n > 0 {
				res.ByStatus[s.String()] = n
				res.Count += n
			}
		}
		return res, nil
	}
	p, err := planList(r, engine.ListStartAsc, b)
	if err != nil {
		return res, err
	}
	named := !b.RunIDs.All
	err = p.walk(r, nil, false, true, func(pos listPos) (bool, error) {
		j, err := ReadJob(r, engine.JobID(pos.id))
		if named && errors.Is(err, engine.ErrUnknownJob) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if f.Match(j) {
			res.Count++
			res.ByStatus[j.Status.String()]++
		}
		return true, nil
	})
	return res, err
}
