package machine

import (
	"errors"
	"math"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/msgpackscan"
	"github.com/heddlewf/heddle/storage"
)

// ReadHistoryBounded reads one page of a job's history as ReadHistory
// does, with every Payload and LastResult longer than q.MaxPayloadBytes
// left out and its length told (see engine.HistoryQuery), and the page
// ending before the payloads it holds pass engine.MaxPageBytes. q's bounds
// are the caller's to check; a Limit of 0 reads 100 events.
func ReadHistoryBounded(r *storage.Reader, q engine.HistoryQuery) (_ *engine.HistoryPage, err error) {
	defer markStorage(&err)
	if q.Limit == 0 {
		q.Limit = 100
	}
	page := &engine.HistoryPage{}
	if _, err := ReadJob(r, q.Job); err != nil {
		return nil, err
	}
	more := false
	bytes := 0
	err = scanEvents(r, q.Job, q.AfterSeq, q.MaxPayloadBytes, func(ev engine.Event) (bool, error) {
		bytes += len(ev.Payload) + len(ev.LastResult)
		if len(page.Events) == q.Limit || bytes > engine.MaxPageBytes && len(page.Events) > 0 {
			more = true
			return false, nil
		}
		page.Events = append(page.Events, ev)
		return true, nil
	})
	if more && len(page.Events) > 0 {
		page.Next = page.Events[len(page.Events)-1].Seq
	}
	return page, err
}

// ReadSteps reads the activity steps q asks for, in step order. The projection of a step needs no
// payload, so the history is read without any (they are not copied) and
// only its step events are kept.
func ReadSteps(r *storage.Reader, q engine.StepsQuery) (_ []engine.StepInfo, err error) {
	defer markStorage(&err)
	j, err := ReadTarget(r, q.Target)
	if err != nil {
		return nil, err
	}
	var hist []engine.Event
	err = scanEvents(r, j.ID, 0, 0, func(ev engine.Event) (bool, error) {
		if engine.IsStepEvent(ev.Type) && ev.Step != "" && (q.Step == "" || ev.Step == q.Step) {
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
	recs := map[string]*engine.StepRecord{}
	elided := map[string]int{}
	decode := func(k, v []byte) error {
		s := new(engine.StepRecord)
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
	out := engine.StepInfos(j, hist, recs)
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
func scanEvents(r *storage.Reader, id engine.JobID, afterSeq uint64, maxPayload int, fn func(engine.Event) (bool, error)) error {
	if afterSeq == math.MaxUint64 {
		return nil // no seq follows; afterSeq+1 would wrap to the start
	}
	start := storage.EventKey(uint64(id), afterSeq+1)
	return r.ScanValues(storage.EventPrefix(uint64(id)), start, func(k, v []byte) (bool, error) {
		var ev engine.Event
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
