package engine

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/heddlewf/heddle/internal/msgpackscan"
	"github.com/heddlewf/heddle/storage"
)

// BoundedReader reads histories and steps as History and Steps do, with
// their large payloads left out. A payload is up to Limits.MaxPayloadBytes
// and a history has no bound on its events, so a view that shows a run
// (the web UI's run page, which refetches itself every two seconds) would
// otherwise read every payload of the run to show a few of them. The
// payloads left out are not copied: the read costs the bytes it returns.
// *Engine implements it in-process and package engine/httpapi over HTTP.
type BoundedReader interface {
	// QueryHistory returns one page of a job's history.
	QueryHistory(ctx context.Context, q HistoryQuery) (*HistoryPage, error)
	// QuerySteps returns the activity steps of a job, as Steps does.
	QuerySteps(ctx context.Context, q StepsQuery) ([]StepInfo, error)
}

var _ BoundedReader = (*Engine)(nil)

// HistoryQuery asks for a page of a job's history: History's arguments and
// a bound on the payloads returned.
type HistoryQuery struct {
	Job JobID
	// AfterSeq and Limit are History's.
	AfterSeq uint64
	Limit    int
	// MaxPayloadBytes, when positive, leaves out of the page every event's
	// Payload and LastResult longer than this many bytes, and sets its
	// ElidedPayloadBytes or ElidedLastResultBytes to the length left out.
	// 0 returns every payload whole, as History does.
	MaxPayloadBytes int
}

// StepsQuery asks for the steps of a job: Steps' target, and optionally
// one step and a bound on the questions returned.
type StepsQuery struct {
	Target
	// Step, when not empty, returns only the step of that name (none when
	// the job has no such step).
	Step string
	// MaxQuestionBytes, when positive, leaves out every step's Question
	// whose stored payload is longer than this many bytes, and sets its
	// ElidedQuestionBytes to that length. 0 returns every question whole.
	MaxQuestionBytes int
}

// QueryHistory implements BoundedReader.
func (e *Engine) QueryHistory(ctx context.Context, q HistoryQuery) (*HistoryPage, error) {
	if q.Limit < 0 || q.Limit > MaxPage {
		return nil, fmt.Errorf("%w: history limit %d is not in [0, %d]", ErrInvalidCommand, q.Limit, MaxPage)
	}
	if q.MaxPayloadBytes < 0 {
		return nil, fmt.Errorf("%w: max payload bytes %d is negative", ErrInvalidCommand, q.MaxPayloadBytes)
	}
	if q.MaxPayloadBytes == 0 {
		return e.History(ctx, q.Job, q.AfterSeq, q.Limit)
	}
	if q.Limit == 0 {
		q.Limit = 100
	}
	page := &HistoryPage{}
	err := e.view(ctx, func(r *storage.Reader) error {
		if _, err := ReadJob(r, q.Job); err != nil {
			return err
		}
		more := false
		err := scanEvents(r, q.Job, q.AfterSeq, q.MaxPayloadBytes, func(ev Event) (bool, error) {
			if len(page.Events) == q.Limit {
				more = true
				return false, nil
			}
			page.Events = append(page.Events, ev)
			return true, nil
		})
		if more && len(page.Events) > 0 {
			page.Next = page.Events[len(page.Events)-1].Seq
		}
		return err
	})
	return page, err
}

// QuerySteps implements BoundedReader.
func (e *Engine) QuerySteps(ctx context.Context, q StepsQuery) ([]StepInfo, error) {
	if q.MaxQuestionBytes < 0 {
		return nil, fmt.Errorf("%w: max question bytes %d is negative", ErrInvalidCommand, q.MaxQuestionBytes)
	}
	var out []StepInfo
	err := e.view(ctx, func(r *storage.Reader) error {
		var err error
		out, err = readSteps(r, q)
		return err
	})
	return out, err
}

// readSteps reads the steps q asks for. The projection of a step needs no
// payload, so the history is read without any (they are not copied) and
// only its step events are kept.
func readSteps(r *storage.Reader, q StepsQuery) ([]StepInfo, error) {
	j, err := readTarget(r, q.Target)
	if err != nil {
		return nil, err
	}
	var hist []Event
	err = scanEvents(r, j.ID, 0, 0, func(ev Event) (bool, error) {
		if IsStepEvent(ev.Type) && ev.Step != "" && (q.Step == "" || ev.Step == q.Step) {
			hist = append(hist, ev)
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	maxQuestion := q.MaxQuestionBytes
	if maxQuestion == 0 {
		maxQuestion = -1 // whole
	}
	recs := map[string]*StepRecord{}
	elided := map[string]int{}
	decode := func(k, v []byte) error {
		s := new(StepRecord)
		sizes, err := decodeElided(k, v, storage.KindStep, stepVersion, s, stepLargeFields, maxQuestion)
		if err != nil {
			return err
		}
		recs[s.Step] = s
		if sizes[0] > 0 {
			elided[s.Step] = sizes[0]
		}
		return nil
	}
	if q.Step != "" {
		key := storage.StepKey(uint64(j.ID), q.Step)
		v, err := r.Get(key)
		switch {
		case errors.Is(err, storage.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			if err := decode(key, v); err != nil {
				return nil, err
			}
		}
	} else {
		err = r.ScanValues(storage.StepPrefix(uint64(j.ID)), nil, func(k, v []byte) (bool, error) {
			return true, decode(k, v)
		})
		if err != nil {
			return nil, err
		}
	}
	out := StepInfos(j, hist, recs)
	if q.Step != "" {
		kept := out[:0]
		for _, si := range out {
			if si.Step == q.Step {
				kept = append(kept, si)
			}
		}
		out = kept
	}
	for i := range out {
		out[i].ElidedQuestionBytes = elided[out[i].Step]
	}
	return out, nil
}

// The fields of a stored record that hold payloads, by their msgpack keys:
// an event's Payload and LastResult, a step record's Question.
var (
	eventLargeFields = []string{"p", "lr"}
	stepLargeFields  = []string{"q"}
)

// scanEvents calls fn with each event of job id after afterSeq, in seq
// order, until fn returns false. An event's Payload or LastResult longer
// than maxPayload bytes is left out, neither decoded nor copied, and its
// length set in ElidedPayloadBytes or ElidedLastResultBytes; maxPayload 0
// leaves out every payload, and a negative one none.
func scanEvents(r *storage.Reader, id JobID, afterSeq uint64, maxPayload int, fn func(Event) (bool, error)) error {
	if afterSeq == math.MaxUint64 {
		return nil // no seq follows; afterSeq+1 would wrap to the start
	}
	start := storage.EventKey(uint64(id), afterSeq+1)
	return r.ScanValues(storage.EventPrefix(uint64(id)), start, func(k, v []byte) (bool, error) {
		var ev Event
		sizes, err := decodeElided(k, v, storage.KindEvent, eventVersion, &ev, eventLargeFields, maxPayload)
		if err != nil {
			return false, err
		}
		ev.ElidedPayloadBytes, ev.ElidedLastResultBytes = sizes[0], sizes[1]
		return fn(ev)
	})
}

// decodeElided decodes the stored record b (its kind byte, its version
// byte, then one msgpack map) into v, as storage.DecodeAt does, after
// replacing by nil each top-level field named in fields whose value is a
// string or binary longer than maxBytes (none when maxBytes is negative).
// It returns the lengths replaced, by position in fields. b may be a
// buffer of the database's: nothing decoded refers to it, and a field
// left out is not copied.
func decodeElided(key, b []byte, kind storage.Kind, version byte, v any, fields []string, maxBytes int) ([]int, error) {
	sizes := make([]int, len(fields))
	out := b
	if maxBytes >= 0 {
		var ok bool
		if out, ok = elideFields(b, fields, maxBytes, sizes); !ok {
			out = b
			clear(sizes) // not a record elideFields can read: DecodeAt says why
		}
	}
	_, err := storage.DecodeAt(key, out, kind, version, v)
	if err != nil && len(out) != len(b) {
		// Say what is wrong with the stored bytes, not with their copy.
		clear(sizes)
		_, err = storage.DecodeAt(key, b, kind, version, v)
	}
	return sizes, err
}

// elideFields returns a copy of record b with the large fields replaced
// by nil, and their lengths in sizes; b itself when there are none. It
// reports false when b is not a header and one msgpack map whose keys are
// strings, leaving the decoder to say what is wrong.
func elideFields(b []byte, fields []string, maxBytes int, sizes []int) ([]byte, bool) {
	if len(b) < 2 {
		return nil, false
	}
	body := b[2:]
	h, err := msgpackscan.ReadHeader(body)
	if err != nil || h.Kind != msgpackscan.Map {
		return nil, false
	}
	type cut struct{ from, to int } // a value's bytes in body
	var cuts []cut
	pos := h.Size
	for range h.Len {
		kh, err := msgpackscan.ReadHeader(body[pos:])
		if err != nil || kh.Kind != msgpackscan.Str {
			return nil, false
		}
		name := body[pos+kh.Size : pos+kh.Size+kh.Len]
		pos += kh.Size + kh.Len
		size, err := msgpackscan.ValueLen(body[pos:])
		if err != nil {
			return nil, false
		}
		for i, f := range fields {
			if string(name) != f {
				continue
			}
			vh, _ := msgpackscan.ReadHeader(body[pos:]) // ValueLen read it
			if (vh.Kind == msgpackscan.Bin || vh.Kind == msgpackscan.Str) && vh.Len > maxBytes {
				cuts = append(cuts, cut{pos, pos + size})
				sizes[i] = vh.Len
			}
		}
		pos += size
	}
	if pos != len(body) {
		return nil, false // bytes after the map
	}
	if len(cuts) == 0 {
		return b, true
	}
	removed := 0
	for _, c := range cuts {
		removed += c.to - c.from - 1
	}
	out := make([]byte, 0, len(b)-removed)
	out = append(out, b[:2]...)
	last := 0
	for _, c := range cuts {
		out = append(out, body[last:c.from]...)
		out = append(out, 0xc0) // nil: the decoder leaves the field empty
		last = c.to
	}
	return append(out, body[last:]...), true
}
