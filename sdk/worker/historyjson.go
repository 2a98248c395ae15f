package worker

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/internal/payloadview"
)

// jsonEvent is one event in the history JSON format (ExportHistoryJSON).
type jsonEvent struct {
	Seq           uint64           `json:"seq"`
	Type          engine.EventType `json:"type"`
	AtMS          int64            `json:"atMS,omitempty"`
	Attempt       uint64           `json:"attempt,omitempty"`
	Step          string           `json:"step,omitempty"`
	Name          string           `json:"name,omitempty"`
	Payload       json.RawMessage  `json:"payload,omitempty"`
	PayloadBase64 *string          `json:"payloadBase64,omitempty"`
	Reason        string           `json:"reason,omitempty"`
	DelayMS       int64            `json:"delayMS,omitempty"`
	LeaseExpiryMS int64            `json:"leaseExpiryMS,omitempty"`
	TokenIssued   bool             `json:"tokenIssued,omitempty"`
	Commit        bool             `json:"commit,omitempty"`
	Wait          *jsonWait        `json:"wait,omitempty"`
	StepAttempt   uint32           `json:"stepAttempt,omitempty"`
	Resource      string           `json:"resource,omitempty"`
	Decision      string           `json:"decision,omitempty"`
}

type jsonWait struct {
	TimerID   string      `json:"timerId,omitempty"`
	TimerAtMS int64       `json:"timerAtMS,omitempty"`
	Signals   []string    `json:"signals,omitempty"`
	Steps     []string    `json:"steps,omitempty"`
	Park      bool        `json:"park,omitempty"`
	Timers    []jsonTimer `json:"timers,omitempty"`
	AnySignal bool        `json:"anySignal,omitempty"`
}

type jsonTimer struct {
	ID     string `json:"id"`
	FireMS int64  `json:"fireMS"`
}

// MaxHistoryJSONBytes bounds a history document the readers of this
// package accept (ReadHistoryJSON, HistoryFromJSON, the replayer's JSON
// methods): decoding one takes a few times its size in memory, so a reader
// handed a stream that does not end must stop. A longer history is
// replayed from the engine instead (ReplayWorkflowHistory).
const MaxHistoryJSONBytes = 256 << 20

// maxHistoryJSONBytes is MaxHistoryJSONBytes, lowered by tests.
var maxHistoryJSONBytes int64 = MaxHistoryJSONBytes

// readHistoryInput reads a history document from r, refusing one over
// MaxHistoryJSONBytes.
func readHistoryInput(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxHistoryJSONBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read history JSON: %w", err)
	}
	if int64(len(data)) > maxHistoryJSONBytes {
		return nil, fmt.Errorf("history JSON: the input is over MaxHistoryJSONBytes (%d bytes)", maxHistoryJSONBytes)
	}
	return data, nil
}

// embeddable reports whether a payload can be written as embedded JSON and
// read back byte for byte, and is nested at most
// payloadview.DefaultMaxDepth levels: the document is indented, and each
// level costs two bytes on every line within it (a payload of 20 KB nested
// 9,990 levels deep would indent to 200 MB).
func embeddable(p []byte) bool {
	if len(p) == 0 || !utf8.Valid(p) || !json.Valid(p) || bytes.Equal(p, []byte("null")) ||
		payloadview.JSONDepth(p) > payloadview.DefaultMaxDepth {
		return false
	}
	var c bytes.Buffer
	if err := json.Compact(&c, p); err != nil || !bytes.Equal(c.Bytes(), p) {
		return false
	}
	// Compact output never holds these, but the encoder would escape them.
	return !bytes.Contains(p, []byte("\u2028")) && !bytes.Contains(p, []byte("\u2029"))
}

// ExportHistoryJSON writes events to w in the history JSON format, which
// ReadHistoryJSON reads back exactly. It is an indented JSON array of events
// in seq order, one object per event with the fields of engine.Event under
// readable names; zero fields are left out:
//
//	seq, type, atMS, attempt, step, name, reason, delayMS, leaseExpiryMS,
//	commit, wait {timerId, timerAtMS, signals, steps, park, timers [{id,
//	fireMS}], anySignal}
//
// and the payload in one of two fields:
//
//   - "payload": the payload itself, embedded as JSON, when it is valid,
//     compact JSON in valid UTF-8 (other than null), nested at most 32
//     levels deep — what the SDK's converter writes, so inputs and results
//     stay readable;
//   - "payloadBase64": the payload in standard base64 otherwise (an empty
//     but present payload is "").
//
// A missing payload is a nil one. Reading compacts an embedded payload
// again, so an exported history reads back byte for byte as it was, and a
// hand-edited one may be indented freely. (Strings other than payloads
// must be valid UTF-8, as JSON strings are.)
func ExportHistoryJSON(w io.Writer, events []engine.Event) error {
	out := make([]jsonEvent, len(events))
	for i := range events {
		ev := &events[i]
		je := jsonEvent{Seq: ev.Seq, Type: ev.Type, AtMS: ev.AtMS, Attempt: ev.Attempt, Step: ev.Step,
			Name: ev.Name, Reason: ev.Reason, DelayMS: ev.DelayMS, LeaseExpiryMS: ev.LeaseExpiryMS, TokenIssued: ev.TokenIssued, Commit: ev.Commit,
			StepAttempt: ev.StepAttempt, Resource: ev.Resource, Decision: string(ev.Decision)}
		switch {
		case ev.Payload == nil:
		case embeddable(ev.Payload):
			je.Payload = json.RawMessage(ev.Payload)
		default:
			s := base64.StdEncoding.EncodeToString(ev.Payload)
			je.PayloadBase64 = &s
		}
		if ws := ev.Wait; ws != nil {
			jw := &jsonWait{TimerID: ws.TimerID, TimerAtMS: ws.TimerAtMS, Signals: ws.Signals,
				Steps: ws.Steps, Park: ws.Park, AnySignal: ws.AnySignal}
			for _, t := range ws.Timers {
				jw.Timers = append(jw.Timers, jsonTimer{ID: t.ID, FireMS: t.FireMS})
			}
			je.Wait = jw
		}
		out[i] = je
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("worker: export history: %w", err)
	}
	return nil
}

// ReadHistoryJSON reads a history in the format ExportHistoryJSON writes.
// Malformed input is an error that says what is wrong and, for an event,
// which one: not a JSON array, an empty array, data after the array,
// unknown fields, a missing seq or type, seqs that do not run 1, 2, 3, …,
// both payload fields on one event, a null payload or bad base64, or more
// than MaxHistoryJSONBytes.
func ReadHistoryJSON(r io.Reader) ([]engine.Event, error) {
	data, err := readHistoryInput(r)
	if err != nil {
		return nil, err
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("history JSON: the input is empty, want a JSON array of events")
	}
	if trimmed[0] != '[' {
		return nil, errors.New("history JSON: the input is not a JSON array of events")
	}
	var raw []json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("history JSON: %w", err)
	}
	if dec.More() || dec.InputOffset() != int64(len(trimmed)) {
		return nil, fmt.Errorf("history JSON: unexpected data after the array at offset %d", dec.InputOffset())
	}
	if len(raw) == 0 {
		return nil, errors.New("history JSON: the array holds no events")
	}
	events := make([]engine.Event, len(raw))
	for i, item := range raw {
		ev, err := decodeJSONEvent(item)
		if err != nil {
			return nil, fmt.Errorf("history JSON: event %d: %w", i, err)
		}
		if want := uint64(i) + 1; ev.Seq != want {
			return nil, fmt.Errorf("history JSON: event %d: seq %d where %d was due (seqs run 1, 2, 3, … without gaps)", i, ev.Seq, want)
		}
		events[i] = ev
	}
	return events, nil
}

func decodeJSONEvent(item json.RawMessage) (engine.Event, error) {
	var je jsonEvent
	dec := json.NewDecoder(bytes.NewReader(item))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&je); err != nil {
		return engine.Event{}, err
	}
	if je.Seq == 0 {
		return engine.Event{}, errors.New(`"seq" is missing or 0`)
	}
	if je.Type == "" {
		return engine.Event{}, fmt.Errorf(`seq %d: "type" is missing`, je.Seq)
	}
	ev := engine.Event{Seq: je.Seq, Type: je.Type, AtMS: je.AtMS, Attempt: je.Attempt, Step: je.Step, Name: je.Name,
		Reason: je.Reason, DelayMS: je.DelayMS, LeaseExpiryMS: je.LeaseExpiryMS, TokenIssued: je.TokenIssued, Commit: je.Commit,
		StepAttempt: je.StepAttempt, Resource: je.Resource, Decision: engine.CriticDecision(je.Decision)}
	switch {
	case je.Payload != nil && je.PayloadBase64 != nil:
		return engine.Event{}, fmt.Errorf(`seq %d: both "payload" and "payloadBase64" are set`, je.Seq)
	case je.Payload != nil:
		if bytes.Equal(je.Payload, []byte("null")) {
			return engine.Event{}, fmt.Errorf(`seq %d: "payload" is null (leave it out for no payload)`, je.Seq)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, je.Payload); err != nil {
			return engine.Event{}, fmt.Errorf("seq %d: payload: %w", je.Seq, err)
		}
		ev.Payload = c.Bytes()
	case je.PayloadBase64 != nil:
		p, err := base64.StdEncoding.DecodeString(*je.PayloadBase64)
		if err != nil {
			return engine.Event{}, fmt.Errorf(`seq %d: "payloadBase64" is not standard base64: %w`, je.Seq, err)
		}
		ev.Payload = p
	}
	if jw := je.Wait; jw != nil {
		ws := &engine.WaitSpec{TimerID: jw.TimerID, TimerAtMS: jw.TimerAtMS, Signals: jw.Signals,
			Steps: jw.Steps, Park: jw.Park, AnySignal: jw.AnySignal}
		for _, t := range jw.Timers {
			ws.Timers = append(ws.Timers, engine.Timer{ID: t.ID, FireMS: t.FireMS})
		}
		ev.Wait = ws
	}
	return ev, nil
}
