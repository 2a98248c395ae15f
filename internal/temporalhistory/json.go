package temporalhistory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// int64Field reads a protojson int64, which is a JSON string ("5") or, in
// older exports, a number.
type int64Field int64

func (n *int64Field) UnmarshalJSON(b []byte) error {
	s := string(bytes.TrimSpace(b))
	if s == "null" {
		return nil
	}
	s = strings.Trim(s, `"`)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not an integer", truncate(s))
	}
	*n = int64Field(v)
	return nil
}

// rawEvent is one history event before its attributes are read: the
// attributes stay raw under their protojson field name.
type rawEvent struct {
	ID    int64
	Type  string // normalised: "ActivityTaskScheduled"
	AtMS  int64
	Attrs json.RawMessage
}

// eventTypeName turns either spelling of an event type into the
// CamelCase one: "EVENT_TYPE_TIMER_FIRED" and "TimerFired" are both
// "TimerFired". It returns "" for anything else.
func eventTypeName(s string) string {
	if rest, ok := strings.CutPrefix(s, "EVENT_TYPE_"); ok {
		var b strings.Builder
		for _, part := range strings.Split(rest, "_") {
			if part == "" {
				return ""
			}
			b.WriteString(part[:1])
			b.WriteString(strings.ToLower(part[1:]))
		}
		return b.String()
	}
	if s == "" || !unicode.IsUpper(rune(s[0])) {
		return ""
	}
	for _, r := range s {
		if r > unicode.MaxASCII || !unicode.IsLetter(r) {
			return ""
		}
	}
	return s
}

// attrsField is the protojson field holding an event type's attributes:
// "TimerFired" keeps them in "timerFiredEventAttributes".
func attrsField(typ string) string {
	return strings.ToLower(typ[:1]) + typ[1:] + "EventAttributes"
}

// readEvents parses a history export: an object whose "events" array holds
// the events in id order from 1. Unknown fields are ignored, as Temporal's
// own reader ignores them (exports of newer servers carry more).
func readEvents(data []byte) ([]rawEvent, error) {
	var doc struct {
		Events []map[string]json.RawMessage `json:"events"`
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf(`%w: want a JSON object with an "events" array`, ErrMalformed)
	}
	if err := json.Unmarshal(trimmed, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if len(doc.Events) == 0 {
		return nil, fmt.Errorf(`%w: the "events" array is missing or empty`, ErrMalformed)
	}
	out := make([]rawEvent, 0, len(doc.Events))
	for i, fields := range doc.Events {
		var id int64Field
		if err := json.Unmarshal(fields["eventId"], &id); err != nil || fields["eventId"] == nil {
			return nil, fmt.Errorf("%w: event %d has no valid eventId", ErrMalformed, i)
		}
		if want := int64(i) + 1; int64(id) != want {
			return nil, fmt.Errorf("%w: event %d has eventId %d where %d was due (ids run 1, 2, 3, …)", ErrMalformed, i, id, want)
		}
		var typ string
		if err := json.Unmarshal(fields["eventType"], &typ); err != nil {
			return nil, fmt.Errorf("%w: event %d has no eventType string", ErrMalformed, id)
		}
		ev := rawEvent{ID: int64(id), Type: eventTypeName(typ)}
		if ev.Type == "" {
			return nil, fmt.Errorf("%w: event %d: eventType %q is not an event type", ErrMalformed, id, truncate(typ))
		}
		if raw := fields["eventTime"]; raw != nil {
			var at string
			if json.Unmarshal(raw, &at) == nil && at != "" {
				t, err := time.Parse(time.RFC3339Nano, at)
				if err != nil {
					return nil, &EventError{EventID: ev.ID, EventType: ev.Type, Err: ErrMalformed, Detail: "eventTime is not RFC 3339"}
				}
				ev.AtMS = t.UnixMilli()
			}
		}
		ev.Attrs = fields[attrsField(ev.Type)]
		out = append(out, ev)
	}
	return out, nil
}
