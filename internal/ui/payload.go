package ui

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/internal/payloadview"
)

// The bounds of a payload on a page. A payload is whatever a client
// stored, up to the engine's payload limit: a page shows the start of it,
// rendered without ever building the decoded value (package payloadview),
// and links its bytes. So one payload costs a view at most about a
// megabyte of memory, whatever it holds, and nothing of it outlives the
// page's rendering.
var (
	// pageLimits: a payload in a panel or the timeline, indented.
	pageLimits = payloadview.Limits{}
	// eventLimits: a payload in the timeline, one of many.
	eventLimits = payloadview.Limits{MaxTextBytes: maxEventPayloadBytes}
	// inlineLimits: a payload in a table cell, on one line.
	inlineLimits = payloadview.Limits{MaxTextBytes: 200, MaxValues: 50}
)

// maxMessageRunes bounds a message read from a payload (a failure's, a
// failed try's) where a page shows it beside other things.
const maxMessageRunes = 300

// payloadView is a payload as a page shows it: its rendering, and where
// its bytes can be fetched whole when the rendering is cut or hidden.
type payloadView struct {
	*payloadview.View
	// Raw is the address of the payload's bytes.
	Raw string
}

// viewPayload renders a payload for a panel; raw is where its bytes are
// served. Nil for an empty payload.
func viewPayload(b []byte, raw string) *payloadView {
	return renderPayload(b, payloadview.Indented, pageLimits, raw)
}

// viewEventPayload renders an event's payload within lim, or, when the API
// left it out (it is longer than read, the bytes the page asked for), says
// so with its size.
func viewEventPayload(ev *engine.Event, read int, lim payloadview.Limits, raw string) *payloadView {
	if ev.ElidedPayloadBytes > 0 {
		return elidedPayload(ev.ElidedPayloadBytes, read, raw)
	}
	return renderPayload(ev.Payload, payloadview.Indented, lim, raw)
}

// elidedPayload is the view of a payload of size bytes that a page did
// not read, being longer than the read bytes it reads of one.
func elidedPayload(size, read int, raw string) *payloadView {
	return &payloadView{View: &payloadview.View{Size: size, Hidden: fmt.Sprintf("more than the %d KiB a page reads of one", read>>10)}, Raw: raw}
}

// viewInline renders a payload for a table cell.
func viewInline(b []byte, raw string) *payloadView {
	return renderPayload(b, payloadview.Compact, inlineLimits, raw)
}

func renderPayload(b []byte, style payloadview.Style, lim payloadview.Limits, raw string) *payloadView {
	v := payloadview.Render(b, style, lim)
	if v == nil {
		return nil
	}
	return &payloadView{View: v, Raw: raw}
}

// cutMessage shortens a message read from a payload to what a page shows
// beside other things.
func cutMessage(s string) string {
	if utf8.RuneCountInString(s) <= maxMessageRunes {
		return s
	}
	n := 0
	for i := range s {
		if n == maxMessageRunes {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// The addresses of payload bytes.
func eventPayloadPath(job engine.JobID, seq uint64) string {
	return fmt.Sprintf("%s/runs/%d/events/%d/payload", Path, job, seq)
}

func stepQuestionPath(job engine.JobID, step string) string {
	return fmt.Sprintf("%s/runs/%d/steps/%s/question", Path, job, url.PathEscape(step))
}

func reviewOutputPath(id engine.ReviewID) string {
	return fmt.Sprintf("%s/review/%d/output", Path, id)
}

// payloadRoutes registers the routes that serve payloads' bytes, for a
// payload a page shows cut or not at all.
func (h *Handler) payloadRoutes() {
	h.bytes("GET "+Path+"/runs/{job}/events/{seq}/payload", eventPayload)
	h.bytes("GET "+Path+"/runs/{job}/steps/{step}/question", stepQuestion)
	h.bytes("GET "+Path+"/review/{task}/output", reviewOutput)
}

// bytes registers a route that answers bytes read through the API with the
// person's token, as a download: the API's checks decide, as for a page,
// whether the person may read them.
func (h *Handler) bytes(pattern string, fn func(*request) (string, []byte, error)) {
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		rq := &request{w: w, r: r, ctx: r.Context(), now: h.cfg.Now(), token: readToken(r)}
		name, b, err := func() (string, []byte, error) {
			var err error
			if rq.api, err = h.newBackend(r, rq.token); err != nil {
				return "", nil, err
			}
			if rq.can, err = h.permissions(rq); err != nil {
				return "", nil, err
			}
			return fn(rq)
		}()
		if err != nil {
			if errors.Is(err, httpapi.ErrUnauthorized) {
				h.fail(rq, err) // to the sign-in page
				return
			}
			msg := err.Error()
			var pe *pageError
			if errors.As(err, &pe) {
				msg = pe.msg
			}
			http.Error(w, msg, statusOf(err))
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s"`, name))
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(b) // a browser that went away is no failure of ours
	})
}

// eventPayload answers the payload of one event of a run's history.
func eventPayload(rq *request) (string, []byte, error) {
	job, err := jobParam(rq.r)
	if err != nil {
		return "", nil, err
	}
	seq, err := strconv.ParseUint(rq.r.PathValue("seq"), 10, 64)
	if err != nil || seq == 0 {
		return "", nil, &pageError{status: http.StatusNotFound, msg: "Events are numbered from 1."}
	}
	page, err := rq.api.History(rq.ctx, job, seq-1, 1)
	if err != nil {
		return "", nil, err
	}
	if len(page.Events) == 0 || page.Events[0].Seq != seq {
		return "", nil, &pageError{status: http.StatusNotFound, msg: fmt.Sprintf("Run %d has no event %d.", job, seq)}
	}
	return fmt.Sprintf("run-%d-event-%d.bin", job, seq), page.Events[0].Payload, nil
}

// stepQuestion answers what a step waiting for a person asks, as the API
// tells it: the payload when it is JSON, else the payload as a JSON string.
func stepQuestion(rq *request) (string, []byte, error) {
	job, err := jobParam(rq.r)
	if err != nil {
		return "", nil, err
	}
	step := rq.r.PathValue("step")
	infos, err := rq.api.QuerySteps(rq.ctx, engine.StepsQuery{Target: engine.Target{Job: job}, Step: step})
	if err != nil {
		return "", nil, err
	}
	for _, si := range infos {
		if si.Step == step && len(si.Question) > 0 {
			return fmt.Sprintf("run-%d-step-%s-question.json", job, fileSafe(step)), si.Question, nil
		}
	}
	return "", nil, &pageError{status: http.StatusNotFound, msg: fmt.Sprintf("Step %q of run %d asks nothing.", step, job)}
}

// reviewOutput answers a task's output.
func reviewOutput(rq *request) (string, []byte, error) {
	n, err := strconv.ParseUint(rq.r.PathValue("task"), 10, 64)
	if err != nil || n == 0 {
		return "", nil, &pageError{status: http.StatusNotFound, msg: "Tasks are named by a positive number."}
	}
	t, err := rq.api.DescribeReview(rq.ctx, engine.ReviewTarget{ID: engine.ReviewID(n)})
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("task-%d-output.bin", n), t.Output, nil
}

// fileSafe keeps the letters, digits, dots, dashes and underscores of a
// name for a file name, and replaces the rest.
func fileSafe(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !fileSafeByte(c) {
			b[i] = '_'
		}
	}
	return string(b)
}

// fileSafeByte reports whether c may stay in a file name as it is.
func fileSafeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
}
