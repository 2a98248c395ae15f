package ui

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
)

// TestRunPageViewIsBounded opens the run page of a run holding 200
// signals of 512 KiB (and an input, an activity's result and a question
// as large): one view allocates less than a fixed bound, whatever the run
// holds, and still shows the newest events, each large payload as its
// size and a link to its bytes, with links to the older events. Before
// the page read the run's whole history (up to 20,000 events) and steps,
// payloads and all, through the API, once a view: 1.7 GB for this run,
// and 13 MB of HTML. It logs what a view costs:
//
//	go test ./ui -run TestRunPageViewIsBounded -v
func TestRunPageViewIsBounded(t *testing.T) {
	// Far above what a view costs now (about 2 MiB), far below what one
	// payload of this run copied a few times costs.
	const bound = 16 << 20
	v := newEnv(t, envOptions{onDisk: true})
	ctx := context.Background()
	const signals, size = 200, 512 << 10
	big := bytes.Repeat([]byte{'x'}, size)
	cr, err := v.e.Create(ctx, engine.CreateJob{WorkflowID: "big", Type: "T", Queue: "q", Input: big})
	if err != nil {
		t.Fatal(err)
	}
	id := cr.Job
	jobs, err := v.e.Claim(ctx, engine.Claim{Queue: "q", Owner: "w", Max: 1, LeaseMS: 600_000})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %+v, %v", jobs, err)
	}
	ref := jobs[0].Lease()
	if _, err := v.e.Append(ctx, engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: engine.EventActivityCompleted, Step: "1", Name: "Fetch", Payload: big}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.e.LeaseStep(ctx, engine.LeaseStep{LeaseRef: ref, Step: "2", Name: "Ask", LeaseMS: 600_000}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.e.EndStepAttempt(ctx, engine.EndStepAttempt{LeaseRef: ref, Step: "2", Name: "Ask", StepAttempt: 1, Outcome: engine.OutcomeNeedsUser, Payload: big}); err != nil {
		t.Fatal(err)
	}
	for i := range signals {
		if _, err := v.e.Signal(ctx, engine.Signal{Target: engine.Target{Job: id}, Name: fmt.Sprintf("s%d", i), Payload: big}); err != nil {
			t.Fatal(err)
		}
	}
	j, err := v.e.Describe(ctx, engine.Target{Job: id})
	if err != nil {
		t.Fatal(err)
	}

	vw := viewer{t: t, base: v.srv.URL, hc: v.client}
	path := fmt.Sprintf("/ui/runs/%d", id)
	// Badger compacts in the background after the writes, which counts
	// too: the cheapest of three views is the view's own cost.
	least, html := uint64(1<<64-1), ""
	for range 3 {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		code, body, _ := vw.get(path)
		runtime.ReadMemStats(&m1)
		if code != http.StatusOK {
			t.Fatalf("HTTP %d\n%.2000s", code, body)
		}
		least, html = min(least, m1.TotalAlloc-m0.TotalAlloc), body
	}
	t.Logf("one view of a run of %d events holding %d payloads of %d KiB: %d KiB of HTML, allocated %d KiB",
		j.LastSeq, signals+3, size>>10, len(html)>>10, least>>10)
	if least > bound {
		t.Errorf("one view allocated %d MiB, more than %d MiB", least>>20, bound>>20)
	}
	if len(html) > 1<<20 {
		t.Errorf("the page is %d KiB", len(html)>>10)
	}

	// The newest window of events, each large payload a placeholder with
	// its size and a link; the input and the question too.
	notShown := fmt.Sprintf("Not shown: %d bytes, more than the", size)
	first := j.LastSeq - historyWindow + 1
	wantIn(t, "the run page", html, `id="input"`, notShown+" 64 KiB a page reads of one",
		fmt.Sprintf(`href="/ui/runs/%d/events/1/payload"`, id), fmt.Sprintf(`href="/ui/runs/%d/steps/2/question"`, id),
		fmt.Sprintf("%d events, %d to %d shown", j.LastSeq, first, j.LastSeq),
		fmt.Sprintf(`<a href="/ui/runs/%d?after=%d">« Older events</a>`, id, first-1-historyWindow))
	for seq := first; seq <= j.LastSeq; seq++ {
		wantIn(t, "the run page", html, fmt.Sprintf(`data-seq="%d"`, seq), fmt.Sprintf(`href="/ui/runs/%d/events/%d/payload"`, id, seq))
	}
	if n := strings.Count(html, notShown+" 16 KiB a page reads of one"); n != historyWindow {
		t.Errorf("%d events shown as not read, want %d", n, historyWindow)
	}
	if strings.Contains(html, fmt.Sprintf(`data-seq="%d"`, first-1)) || strings.Contains(html, "Newer events") {
		t.Errorf("the newest window shows more than its %d events", historyWindow)
	}

	// The oldest window, and the way back.
	code, oldest, _ := vw.get(path + "?after=0")
	if code != http.StatusOK {
		t.Fatalf("the oldest events: HTTP %d", code)
	}
	wantIn(t, "the oldest events", oldest, `data-seq="1"`, fmt.Sprintf(`data-seq="%d"`, historyWindow), "signal_received",
		fmt.Sprintf(`<a href="/ui/runs/%d?after=%d">Newer events »</a>`, id, historyWindow))
	if strings.Contains(oldest, "Older events") || strings.Contains(oldest, fmt.Sprintf(`data-seq="%d"`, historyWindow+1)) {
		t.Errorf("the oldest window shows more than events 1 to %d", historyWindow)
	}

	// The links serve the bytes whole.
	for _, p := range []string{path + "/events/1/payload", fmt.Sprintf("%s/events/%d/payload", path, j.LastSeq), path + "/steps/2/question"} {
		if code, body, _ := vw.get(p); code != http.StatusOK || len(body) < size {
			t.Errorf("%s: HTTP %d, %d bytes", p, code, len(body))
		}
	}
}
