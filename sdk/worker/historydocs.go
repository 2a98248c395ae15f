package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heddlewf/heddle/engine"
)

// A heddle history reaches a replayer in three JSON forms besides
// ExportHistoryJSON's array: the document `heddle workflow history -o
// json` prints, the HTTP API's history page (GET /v1/jobs/{job}/history,
// an engine.HistoryPage), and Temporal's export. The objects are told
// apart by their fields.

// historyKind is the form of a JSON object holding a history.
type historyKind int

const (
	kindTemporal historyKind = iota
	kindCLIDocument
	kindHTTPPage
)

// objectKind tells the three object forms apart: Temporal's events have an
// eventType, heddle's a seq; the CLI's document names its run (workflow_id,
// job_id), the HTTP page does not.
func objectKind(data []byte) historyKind {
	var probe struct {
		WorkflowID *string                      `json:"workflow_id"`
		JobID      *json.RawMessage             `json:"job_id"`
		Events     []map[string]json.RawMessage `json:"events"`
	}
	if json.Unmarshal(data, &probe) != nil || len(probe.Events) == 0 {
		return kindTemporal // its decoder says what is wrong
	}
	first := probe.Events[0]
	if _, ok := first["seq"]; !ok {
		return kindTemporal
	}
	if probe.WorkflowID != nil || probe.JobID != nil {
		return kindCLIDocument
	}
	return kindHTTPPage
}

// cliEvent is an event of the CLI's history document. Its wait is left
// out: replay does not read it.
type cliEvent struct {
	Seq           uint64          `json:"seq"`
	Type          string          `json:"type"`
	At            string          `json:"at"`
	Attempt       uint64          `json:"attempt"`
	Step          string          `json:"step"`
	Name          string          `json:"name"`
	Payload       json.RawMessage `json:"payload"`
	PayloadBase64 []byte          `json:"payload_base64"`
	Reason        string          `json:"reason"`
	DelayMS       int64           `json:"delay_ms"`
	Commit        bool            `json:"commit"`
}

// decodeCLIDocument reads `heddle workflow history -o json`. The document
// leaves out what a timeline does not show (the step attempt, resource and
// critic decision of step events, the last completion result of a cron
// run), so a history read from it is what replay needs of most runs but
// not of a cron run that reads its last completion result: export those
// with ExportHistoryJSON.
func decodeCLIDocument(data []byte) ([]engine.Event, error) {
	var doc struct {
		Events []cliEvent `json:"events"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("history document: %w", err)
	}
	events := make([]engine.Event, len(doc.Events))
	for i, ce := range doc.Events {
		ev := engine.Event{Seq: ce.Seq, Type: engine.EventType(ce.Type), Attempt: ce.Attempt, Step: ce.Step, Name: ce.Name,
			Reason: ce.Reason, DelayMS: ce.DelayMS, Commit: ce.Commit}
		if ce.At != "" {
			at, err := time.Parse(time.RFC3339Nano, ce.At)
			if err != nil {
				return nil, fmt.Errorf("history document: event %d: at %q is not RFC 3339", i, ce.At)
			}
			ev.AtMS = at.UnixMilli()
		}
		switch {
		case ce.Payload != nil && ce.PayloadBase64 != nil:
			return nil, fmt.Errorf(`history document: event %d: both "payload" and "payload_base64" are set`, i)
		case ce.Payload != nil:
			var c bytes.Buffer
			if err := json.Compact(&c, ce.Payload); err != nil {
				return nil, fmt.Errorf("history document: event %d: payload: %w", i, err)
			}
			ev.Payload = c.Bytes()
		case ce.PayloadBase64 != nil:
			ev.Payload = ce.PayloadBase64
		}
		events[i] = ev
	}
	return events, checkSeqs("history document", events)
}

// decodeHTTPPage reads the HTTP API's history page: engine.Event in its
// own JSON form, which loses nothing. A page that is not the first holds
// no job_created and is refused by the replay.
func decodeHTTPPage(data []byte) ([]engine.Event, error) {
	var page engine.HistoryPage
	if err := json.Unmarshal(data, &page); err != nil {
		return nil, fmt.Errorf("history page: %w", err)
	}
	return page.Events, checkSeqs("history page", page.Events)
}

// checkSeqs holds a history to seqs 1, 2, 3, … without gaps, as replay
// needs.
func checkSeqs(what string, events []engine.Event) error {
	if len(events) == 0 {
		return errors.New(what + ": no events")
	}
	for i, ev := range events {
		if want := uint64(i) + 1; ev.Seq != want {
			return fmt.Errorf("%s: event %d has seq %d where %d was due (seqs run 1, 2, 3, … without gaps)", what, i, ev.Seq, want)
		}
		if ev.Type == "" {
			return fmt.Errorf("%s: event %d (seq %d) has no type", what, i, ev.Seq)
		}
	}
	return nil
}
