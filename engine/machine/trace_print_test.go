package machine_test

// The printing of trace outputs (see trace_test.go). Everything is printed
// in a fixed order: writes by key, fields by declaration, map entries by
// key; nothing depends on map iteration or the clock.

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// traceWrite is one key a command wrote: its value before and after (nil
// when absent).
type traceWrite struct {
	key, before, after []byte
	deleted            bool
}

func collectWrites(t *testing.T, tx *storage.Tx) []traceWrite {
	var ws []traceWrite
	tx.Each(func(k, v []byte, deleted bool) {
		w := traceWrite{key: bytes.Clone(k), after: bytes.Clone(v), deleted: deleted}
		b, err := tx.Before(k)
		switch {
		case err == nil:
			w.before = bytes.Clone(b)
		case err != storage.ErrNotFound:
			t.Fatalf("reading %s before the command: %v", storage.DescribeKey(k), err)
		}
		ws = append(ws, w)
	})
	sort.Slice(ws, func(i, j int) bool { return bytes.Compare(ws[i].key, ws[j].key) < 0 })
	return ws
}

func isHistoryKey(k []byte) bool {
	return len(k) > 0 && k[0] == storage.PrefixEvent || bytes.HasPrefix(k, storage.ReviewEventsPrefix)
}

// isRecordKey reports the keys whose values are records shown as states.
func isRecordKey(k []byte) bool {
	if len(k) == 0 {
		return false
	}
	switch k[0] {
	case storage.PrefixJob, storage.PrefixStep, storage.PrefixSchedule, storage.PrefixResource, storage.PrefixBatch:
		return true
	}
	return bytes.HasPrefix(k, storage.ReviewRecordPrefix)
}

func decodeRecord(k, v []byte) (any, error) {
	switch {
	case k[0] == storage.PrefixJob:
		return machine.DecodeJob(v)
	case k[0] == storage.PrefixStep:
		return machine.DecodeStepRecord(v)
	case k[0] == storage.PrefixSchedule:
		return machine.DecodeSchedule(v)
	case k[0] == storage.PrefixResource:
		return machine.DecodeResource(v)
	case k[0] == storage.PrefixBatch:
		return machine.DecodeBatch(v)
	case k[0] == storage.PrefixEffect:
		return machine.DecodeEffect(v)
	case bytes.HasPrefix(k, storage.ReviewRecordPrefix):
		return machine.DecodeReview(v)
	}
	return nil, fmt.Errorf("%s is not a record", storage.DescribeKey(k))
}

// printWrites prints the events, the states and the index entries of ws.
func (e *traceEnv) printWrites(out *strings.Builder, ws []traceWrite) {
	t := e.t
	jobEvents := map[engine.JobID][]engine.Event{}
	var eventLines, indexLines []string
	var records []traceWrite
	for _, w := range ws {
		k := w.key
		switch {
		case k[0] == storage.PrefixEvent:
			job, _, err := storage.ParseEventKey(k)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := machine.DecodeEvent(w.after)
			if err != nil {
				t.Fatal(err)
			}
			jobEvents[engine.JobID(job)] = append(jobEvents[engine.JobID(job)], *ev)
			eventLines = append(eventLines, formatEvent(engine.JobID(job), ev))
		case bytes.HasPrefix(k, storage.ReviewEventsPrefix):
			ev, err := machine.DecodeReviewEvent(w.after)
			if err != nil {
				t.Fatal(err)
			}
			eventLines = append(eventLines, formatReviewEvent(engine.ReviewID(binary.BigEndian.Uint64(k[2:10])), ev))
		case isRecordKey(k):
			records = append(records, w)
		case bytes.Equal(k, storage.KeyLastNow):
			// Every command that writes moves it: it says nothing.
		default:
			line := "+ " + describeIndexKey(k) + valueNote(k, w.after)
			if k[0] == storage.PrefixEffect && !w.deleted {
				eff, err := machine.DecodeEffect(w.after)
				if err != nil {
					t.Fatal(err)
				}
				if f := formatFields(reflect.ValueOf(eff).Elem(), []string{"Step", "AtMS"}); f != "" {
					line += " " + f
				}
			}
			if w.deleted {
				line = "- " + describeIndexKey(k)
				if w.before == nil {
					// Written and deleted by this command: Badger gets a
					// deletion marker for a key it never held.
					line += " (was not stored)"
				}
			}
			indexLines = append(indexLines, line)
		}
	}
	if len(eventLines) > 0 {
		out.WriteString("events:\n")
		for _, l := range eventLines {
			out.WriteString("  " + l + "\n")
		}
	}
	if states := e.stateLines(records, jobEvents, ws); len(states) > 0 {
		out.WriteString("states:\n")
		for _, l := range states {
			out.WriteString("  " + l + "\n")
		}
	}
	if len(indexLines) > 0 {
		out.WriteString("index:\n")
		for _, l := range indexLines {
			out.WriteString("  " + l + "\n")
		}
	}
}

// stateLines describes every record written: a job's status path, a
// step's state path (from its history, for every step an event touched),
// a review task's state path, and the fields that changed.
func (e *traceEnv) stateLines(records []traceWrite, jobEvents map[engine.JobID][]engine.Event, ws []traceWrite) []string {
	t := e.t
	var lines []string
	decode := func(w traceWrite) (before, after any) {
		var err error
		if w.before != nil {
			if before, err = decodeRecord(w.key, w.before); err != nil {
				t.Fatal(err)
			}
		}
		if !w.deleted {
			if after, err = decodeRecord(w.key, w.after); err != nil {
				t.Fatal(err)
			}
		}
		return before, after
	}
	reviewEvents := map[engine.ReviewID][]*engine.ReviewEvent{}
	for _, w := range ws {
		if bytes.HasPrefix(w.key, storage.ReviewEventsPrefix) {
			ev, err := machine.DecodeReviewEvent(w.after)
			if err != nil {
				t.Fatal(err)
			}
			id := engine.ReviewID(binary.BigEndian.Uint64(w.key[2:10]))
			reviewEvents[id] = append(reviewEvents[id], ev)
		}
	}
	// Steps: those an appended event touched, and those whose record was
	// written, in (job, step) order.
	type stepRef struct {
		job  engine.JobID
		step string
	}
	stepRecords := map[stepRef]traceWrite{}
	var steps []stepRef
	addStep := func(s stepRef) {
		if !slices.Contains(steps, s) {
			steps = append(steps, s)
		}
	}
	for job, evs := range jobEvents {
		for _, ev := range evs {
			if engine.IsStepEvent(ev.Type) && ev.Step != "" {
				addStep(stepRef{job, ev.Step})
			}
		}
	}
	for _, w := range records {
		switch {
		case w.key[0] == storage.PrefixJob:
			id, _ := storage.ParseJobKey(w.key)
			before, after := decode(w)
			lines = append(lines, e.jobLines(engine.JobID(id), before, after, jobEvents[engine.JobID(id)])...)
		case w.key[0] == storage.PrefixStep:
			s := stepRef{engine.JobID(binary.BigEndian.Uint64(w.key[1:9])), string(w.key[9:])}
			stepRecords[s] = w
			addStep(s)
		case bytes.HasPrefix(w.key, storage.ReviewRecordPrefix):
			id := engine.ReviewID(binary.BigEndian.Uint64(w.key[2:10]))
			before, after := decode(w)
			lines = append(lines, e.reviewLines(id, before, after, reviewEvents[id])...)
		case w.key[0] == storage.PrefixSchedule:
			before, after := decode(w)
			lines = append(lines, recordLines("schedule "+describeString(string(w.key[1:]))+lifeOf(before, after), before, after,
				"ID", "CreatedMS", "UpdatedMS")...)
		case w.key[0] == storage.PrefixBatch:
			before, after := decode(w)
			lines = append(lines, recordLines("batch "+describeString(string(w.key[1:]))+lifeOf(before, after), before, after,
				"ID", "CreatedMS", "UpdatedMS")...)
		case w.key[0] == storage.PrefixResource:
			before, after := decode(w)
			lines = append(lines, recordLines("resource "+describeString(string(w.key[1:]))+lifeOf(before, after), before, after,
				"ID", "CreatedMS", "UpdatedMS")...)
		}
	}
	sort.Slice(steps, func(i, j int) bool {
		if steps[i].job != steps[j].job {
			return steps[i].job < steps[j].job
		}
		return steps[i].step < steps[j].step
	})
	for _, s := range steps {
		var history []engine.Event
		viewOK(t, e.db, func(r *storage.Reader) error {
			var err error
			history, _, err = machine.ReadHistory(r, s.job, 0, 0)
			return err
		})
		appended := map[uint64]bool{}
		for _, ev := range jobEvents[s.job] {
			appended[ev.Seq] = true
		}
		var before, all []engine.Event
		for _, ev := range history {
			if ev.Step != s.step {
				continue
			}
			all = append(all, ev)
			if !appended[ev.Seq] {
				before = append(before, ev)
			}
		}
		from, to := engine.DeriveStepState(before), engine.DeriveStepState(all)
		path := []string{from.State.String()}
		prev := from.State
		for _, st := range to.Path[len(from.Path):] {
			path = append(path, st.String())
			e.cov.stepEdges[stateEdge{int(prev), int(st)}] = true
			prev = st
		}
		name := fmt.Sprintf("job %d step %s", s.job, describeString(s.step))
		if w, ok := stepRecords[s]; ok {
			b, a := decode(w)
			if len(path) == 1 && a != nil {
				path[0] = a.(*engine.StepRecord).State.String()
			}
			lines = append(lines, recordLines(name+": "+strings.Join(path, " → "), b, a, "Job", "Step", "State", "UpdatedMS")...)
			continue
		}
		lines = append(lines, name+": "+strings.Join(path, " → "))
	}
	return lines
}

// jobLines prints a job's status path through the status events appended
// to it, and its record's changed fields.
func (e *traceEnv) jobLines(id engine.JobID, before, after any, appended []engine.Event) []string {
	cur := engine.StatusNone
	from := "(none)"
	if before != nil {
		cur = before.(*engine.Job).Status
		from = cur.String()
	}
	path := []string{from}
	for i := range appended {
		if !engine.IsStatusEvent(appended[i].Type) {
			continue
		}
		if next, ok := engine.Next(cur, &appended[i]); ok {
			e.cov.jobCells[jobCell{cur, appended[i].Type}] = true
			cur = next
			path = append(path, cur.String())
		}
	}
	if after != nil && after.(*engine.Job).Status != cur {
		// The record and the events disagree: Verify will say so; show both.
		path = append(path, "record says "+after.(*engine.Job).Status.String())
	}
	return recordLines(fmt.Sprintf("job %d: %s", id, strings.Join(path, " → ")), before, after,
		"ID", "Status", "LastSeq", "CreatedMS", "UpdatedMS", "StartDigest")
}

// reviewLines prints a review task's state path through the events appended
// to it, and its record's changed fields.
func (e *traceEnv) reviewLines(id engine.ReviewID, before, after any, appended []*engine.ReviewEvent) []string {
	path := []string{"(none)"}
	if before != nil {
		path[0] = before.(*engine.Review).State.String()
	}
	for _, ev := range appended {
		e.cov.reviewEdges[stateEdge{int(ev.From), int(ev.To)}] = true
		if ev.To != ev.From || len(path) == 1 && before == nil {
			path = append(path, ev.To.String())
		}
	}
	return recordLines(fmt.Sprintf("task %d: %s", id, strings.Join(path, " → ")), before, after,
		"ID", "State", "LastSeq")
}

// lifeOf says whether a record was created, changed or deleted.
func lifeOf(before, after any) string {
	switch {
	case before == nil:
		return ": created"
	case after == nil:
		return ": deleted"
	}
	return ": changed"
}

// recordLines is head, then the record's fields: all those set for a new
// record (on one line), "deleted" for a removed one, and one line per
// changed field otherwise.
func recordLines(head string, before, after any, skip ...string) []string {
	lines := []string{head}
	switch {
	case after == nil:
		if !strings.HasSuffix(head, ": deleted") {
			lines[0] += " (deleted)"
		}
	case before == nil:
		if f := formatFields(reflect.ValueOf(after).Elem(), skip); f != "" {
			lines = append(lines, "  "+f)
		}
	default:
		b, a := reflect.ValueOf(before).Elem(), reflect.ValueOf(after).Elem()
		for i := 0; i < a.NumField(); i++ {
			name := a.Type().Field(i).Name
			if slices.Contains(skip, name) || !a.Type().Field(i).IsExported() {
				continue
			}
			bs, as := formatValue(b.Field(i)), formatValue(a.Field(i))
			if bs != as {
				lines = append(lines, fmt.Sprintf("  %s: %s → %s", name, orDash(bs), orDash(as)))
			}
		}
	}
	return lines
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func formatEvent(job engine.JobID, ev *engine.Event) string {
	s := fmt.Sprintf("job %d #%d %s", job, ev.Seq, ev.Type)
	if f := formatFields(reflect.ValueOf(ev).Elem(), []string{"Seq", "Type", "AtMS"}); f != "" {
		s += " " + f
	}
	return s
}

func formatReviewEvent(id engine.ReviewID, ev *engine.ReviewEvent) string {
	s := fmt.Sprintf("task %d #%d %s %s → %s", id, ev.Seq, ev.Type, ev.From, ev.To)
	if f := formatFields(reflect.ValueOf(ev).Elem(), []string{"Seq", "Type", "AtMS", "From", "To"}); f != "" {
		s += " " + f
	}
	return s
}

// describeIndexKey is storage.DescribeKey with a status index entry's
// status named.
func describeIndexKey(k []byte) string {
	if len(k) == 10 && k[0] == storage.PrefixStatus {
		return fmt.Sprintf("s status=%s job=%d", engine.Status(k[1]), binary.BigEndian.Uint64(k[2:]))
	}
	return storage.DescribeKey(k)
}

// valueNote shows the values that are numbers: a workflow id's current
// run, a phase's task, the meta counters and low-water marks.
func valueNote(k, v []byte) string {
	if len(v) != 8 {
		return ""
	}
	if k[0] == storage.PrefixWorkflow || k[0] == storage.PrefixMeta || bytes.HasPrefix(k, storage.ReviewPhasesPrefix) {
		return " = " + strconv.FormatUint(binary.BigEndian.Uint64(v), 10)
	}
	return ""
}

// formatValue prints v for a trace: structs as {Field=value ...} with their
// zero fields left out, slices as [a b], maps by sorted key, byte slices
// as text in backquotes (or hex when they are not text), strings bare when
// they are plain words, and any type with a String method by it.
func formatValue(x any) string {
	v, ok := x.(reflect.Value)
	if !ok {
		v = reflect.ValueOf(x)
	}
	return formatReflect(v)
}

func formatReflect(v reflect.Value) string {
	if !v.IsValid() {
		return ""
	}
	if v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return ""
		}
		return formatReflect(v.Elem())
	}
	if v.Kind() != reflect.Struct && v.CanInterface() {
		if s, ok := v.Interface().(fmt.Stringer); ok {
			return s.String()
		}
	}
	switch v.Kind() {
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.String:
		if v.Len() == 0 {
			return ""
		}
		return describeString(v.String())
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return ""
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return formatBytes(v.Bytes())
		}
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = formatReflect(v.Index(i))
		}
		return "[" + strings.Join(parts, " ") + "]"
	case reflect.Map:
		if v.Len() == 0 {
			return ""
		}
		keys := v.MapKeys()
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = formatReflect(k) + ":" + formatReflect(v.MapIndex(k))
		}
		sort.Strings(parts)
		return "{" + strings.Join(parts, " ") + "}"
	case reflect.Struct:
		if v.CanInterface() {
			if s, ok := v.Interface().(fmt.Stringer); ok {
				return s.String()
			}
		}
		return "{" + formatFields(v, nil) + "}"
	}
	return fmt.Sprint(v)
}

// formatFields prints the fields of struct v that are not zero (and not
// in skip) as Field=value; embedded structs are flattened.
func formatFields(v reflect.Value, skip []string) string {
	var parts []string
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if !f.IsExported() || slices.Contains(skip, f.Name) {
			continue
		}
		fv := v.Field(i)
		if f.Anonymous && fv.Kind() == reflect.Struct {
			if s := formatFields(fv, skip); s != "" {
				parts = append(parts, s)
			}
			continue
		}
		if fv.IsZero() {
			continue
		}
		parts = append(parts, f.Name+"="+formatReflect(fv))
	}
	return strings.Join(parts, " ")
}

// formatBytes prints text in backquotes, and other bytes as hex (the first
// 8 bytes, for digests).
func formatBytes(b []byte) string {
	if utf8.Valid(b) && !bytes.ContainsAny(b, "`\n\r\t") && !bytes.ContainsFunc(b, func(r rune) bool { return r < 0x20 }) {
		return "`" + string(b) + "`"
	}
	if len(b) > 8 {
		return hex.EncodeToString(b[:8]) + "…"
	}
	return hex.EncodeToString(b)
}

// describeString is how a trace prints a string: bare when it is a plain
// word, quoted otherwise.
func describeString(s string) string {
	for _, r := range s {
		plain := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-:/@", r)
		if !plain {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}
