package ui

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/internal/payloadview"
	"github.com/heddlewf/heddle/raftfsm"
)

// Hostile payloads, each under the engine's 1 MiB payload limit. Before
// payloads were rendered by package payloadview, the UI decoded msgpack
// into Go values and encoded them again as indented JSON, recursively:
// deepMsgpack overflowed the stack (a fatal error: the node died, and again
// at every view), 50,000 nested arrays took 536 MB to show, and JSON nested
// 10,000 levels deep (20 KB) took 1.5 GB.
func deepMsgpack(depth int) []byte { return append(bytes.Repeat([]byte{0x91}, depth), 0xc0) }
func deepJSON(depth int) []byte {
	return append(bytes.Repeat([]byte("["), depth), bytes.Repeat([]byte("]"), depth)...)
}

var hostilePayloads = []struct {
	name    string
	payload []byte
}{
	{"800,000 nested msgpack arrays", deepMsgpack(800_000)},
	{"50,000 nested msgpack arrays", deepMsgpack(50_000)},
	{"JSON nested 10,000 levels", deepJSON(10_000)},
	{"a msgpack array declaring four billion elements", append([]byte{0x91, 0xdd, 0xff, 0xff, 0xff, 0xff}, bytes.Repeat([]byte{0xc0}, 100_000)...)},
	{"900 KB of JSON numbers", []byte("[" + strings.Repeat("1,", 450_000) + "1]")},
}

// hostileRun is where storeHostile put a payload.
type hostileRun struct {
	open, done engine.JobID
	review     engine.ReviewID
	// seqs are the events of open that carry the payload: its input, a
	// signal and an event its worker appended.
	seqs []uint64
}

// storeHostile stores p, through the API at c, everywhere a client or a
// worker can put a payload that the UI shows: a run's input, a signal to
// it, an event its worker appends and the question of a step waiting for
// a person; a second run's result; the output of a task awaiting review.
func storeHostile(t *testing.T, c *httpapi.Client, p []byte, name string) hostileRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %s: %v", name, what, err)
		}
	}
	var h hostileRun
	cr, err := c.Create(ctx, engine.CreateJob{WorkflowID: name, Type: "Hostile", Queue: "q-" + name, Input: p})
	must("start", err)
	h.open = cr.Job
	_, err = c.Signal(ctx, engine.Signal{Target: engine.Target{Job: h.open}, Name: "poke", Payload: p})
	must("signal", err)
	jobs, err := c.Claim(ctx, engine.Claim{Queue: "q-" + name, Owner: "w", Max: 1, LeaseMS: 600_000})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("%s: claim: %+v, %v", name, jobs, err)
	}
	ref := jobs[0].Lease()
	_, err = c.Append(ctx, engine.AppendEvents{LeaseRef: ref, Events: []engine.NewEvent{{Type: engine.EventActivityCompleted, Step: "1", Name: "Fetch", Payload: p}}})
	must("append", err)
	_, err = c.LeaseStep(ctx, engine.LeaseStep{LeaseRef: ref, Step: "2", Name: "Ask", LeaseMS: 600_000})
	must("lease a step", err)
	_, err = c.EndStepAttempt(ctx, engine.EndStepAttempt{LeaseRef: ref, Step: "2", Name: "Ask", StepAttempt: 1, Outcome: engine.OutcomeNeedsUser, Payload: p})
	must("ask a person", err)
	page, err := c.History(ctx, h.open, 0, engine.MaxPage)
	must("history", err)
	for _, ev := range page.Events {
		if bytes.Equal(ev.Payload, p) && ev.Type != engine.EventStepNeedsUser {
			h.seqs = append(h.seqs, ev.Seq)
		}
	}

	cr, err = c.Create(ctx, engine.CreateJob{WorkflowID: name + "-done", Type: "Hostile", Queue: "q-" + name + "-done"})
	must("start the second run", err)
	h.done = cr.Job
	jobs, err = c.Claim(ctx, engine.Claim{Queue: "q-" + name + "-done", Owner: "w", Max: 1, LeaseMS: 600_000})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("%s: claim the second run: %+v, %v", name, jobs, err)
	}
	_, err = c.Complete(ctx, engine.Complete{LeaseRef: jobs[0].Lease(), Result: p})
	must("complete", err)

	tr, err := c.CreateReview(ctx, engine.CreateReview{Job: name + "-job", Phase: "draft", Queue: "t-" + name, Type: "write"})
	must("create a task", err)
	h.review = tr.Review
	w, err := c.ClaimReviews(ctx, engine.ClaimReviews{Queue: "t-" + name, Owner: "agent", Max: 1, LeaseMS: 600_000})
	if err != nil || len(w) != 1 {
		t.Fatalf("%s: claim the task: %+v, %v", name, w, err)
	}
	_, err = c.ReviewReport(ctx, engine.ReviewReport{ReviewLeaseRef: w[0].Lease(), Op: engine.ReviewReportOutput, Output: p})
	must("report the task's output", err)
	_, err = c.ReviewCommand(ctx, engine.ReviewCommand{ReviewTarget: engine.ReviewTarget{ID: h.review}, Op: engine.ReviewOpStep, By: "ann"})
	must("start the review", err)
	r, err := c.ClaimReviews(ctx, engine.ClaimReviews{Role: engine.ReviewRoleReview, Queue: "t-" + name, Owner: "critic", Max: 1, LeaseMS: 600_000})
	if err != nil || len(r) != 1 {
		t.Fatalf("%s: claim the review: %+v, %v", name, r, err)
	}
	_, err = c.ReviewReport(ctx, engine.ReviewReport{ReviewLeaseRef: r[0].Lease(), Op: engine.ReviewReportVerdict,
		Assessment: &engine.Assessment{Verdict: engine.VerdictApprove, Summary: "fine"}})
	must("review", err)
	return h
}

// viewer fetches the pages of one node's UI with a plain client.
type viewer struct {
	t    *testing.T
	base string
	hc   *http.Client
}

func (vw viewer) get(path string) (int, string, http.Header) {
	vw.t.Helper()
	resp, err := vw.hc.Get(vw.base + path)
	if err != nil {
		vw.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		vw.t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header
}

// checkHostileViews opens every page that shows the payloads stored at h
// and checks that each payload is shown bounded — whole, the start of it,
// or a placeholder with its size — with a link that serves its bytes whole
// when it is not shown whole.
func checkHostileViews(t *testing.T, vw viewer, p []byte, h hostileRun) {
	t.Helper()
	size := fmt.Sprintf("%d bytes", len(p))
	pv := payloadview.Render(p, payloadview.Indented, payloadview.Limits{})
	code, run, _ := vw.get(fmt.Sprintf("/ui/runs/%d", h.open))
	if code != http.StatusOK {
		t.Fatalf("the run page: HTTP %d\n%.2000s", code, run)
	}
	if len(run) > 2<<20 {
		t.Errorf("the run page is %d bytes", len(run))
	}
	wantIn(t, "the run page", run, `id="input"`, size, fmt.Sprintf("/ui/runs/%d/steps/2/question", h.open))
	switch {
	case len(p) > maxPanelPayloadBytes:
		// The page does not read it: the API leaves it out.
		wantIn(t, "the run page", run, "Not shown: "+size+", more than the 64 KiB a page reads of one")
	case pv.Hidden != "":
		wantIn(t, "the run page", run, "Not shown: "+size)
	case pv.Cut:
		wantIn(t, "the run page", run, "Only the start is shown, of "+size)
	default:
		t.Fatalf("the test payload of %s is shown whole", size)
	}
	for _, seq := range h.seqs {
		wantIn(t, "the run page", run, fmt.Sprintf(`href="/ui/runs/%d/events/%d/payload"`, h.open, seq))
	}
	code, done, _ := vw.get(fmt.Sprintf("/ui/runs/%d", h.done))
	if code != http.StatusOK {
		t.Fatalf("the page of the completed run: HTTP %d\n%.2000s", code, done)
	}
	wantIn(t, "the page of the completed run", done, `id="outcome"`, size)
	code, review, _ := vw.get("/ui/review")
	if code != http.StatusOK {
		t.Fatalf("the review page: HTTP %d\n%.2000s", code, review)
	}
	wantIn(t, "the review page", review, fmt.Sprintf(`href="/ui/review/%d/output"`, h.review))

	// The links serve the bytes as they were stored, as a download.
	for _, path := range []string{fmt.Sprintf("/ui/runs/%d/events/%d/payload", h.open, h.seqs[0]), fmt.Sprintf("/ui/review/%d/output", h.review)} {
		code, body, hdr := vw.get(path)
		if code != http.StatusOK || body != string(p) || hdr.Get("Content-Type") != "application/octet-stream" || !strings.HasPrefix(hdr.Get("Content-Disposition"), "attachment;") {
			t.Errorf("%s: HTTP %d, %d bytes of %d, %v", path, code, len(body), len(p), hdr)
		}
	}
	if code, body, _ := vw.get(fmt.Sprintf("/ui/runs/%d/steps/2/question", h.open)); code != http.StatusOK || len(body) < len(p) {
		t.Errorf("the question: HTTP %d, %d bytes", code, len(body))
	}
}

// heapAfterGC is the live heap once garbage is collected.
func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// viewAlloc is what the server and the client together allocate for the
// views of checkHostileViews.
func viewAlloc(t *testing.T, vw viewer, p []byte, h hostileRun) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	checkHostileViews(t, vw, p, h)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// hostileChildEnv marks the process TestHostilePayloadsInTheUI starts to
// measure in.
const hostileChildEnv = "HEDDLE_UI_HOSTILE_ALLOC_CHILD"

// TestHostilePayloadsInTheUI stores each hostile payload everywhere the UI
// shows one and opens the pages. Reading a history through the API in
// the process (JSON, base64, decoded again) costs some times the bytes
// read, whatever they hold; so each hostile payload's views are measured
// against those of as many plain bytes (0xff: not text, so that the API
// quotes the question as it quotes msgpack), and may cost at most
// renderAllowance more, plus readAllowance copies of the payload: how much
// the store allocates to read the same bytes depends on where they are
// when read (Badger's memtable, or a table written by a flush whose moment
// the test does not choose), and between two runs the same views measured
// 124 and 153 MiB for the same 800 KB.
//
// On the code before payloadview the first case crashed the test binary
// with "fatal error: stack overflow", and the second and third failed the
// allocation check (536 MB and 1.5 GB for one rendering).
func TestHostilePayloadsInTheUI(t *testing.T) {
	// TotalAlloc counts the whole process: goroutines the package's earlier
	// tests left winding down (a cluster's heartbeats, a browser's
	// connections) add to whichever view is measured. So the measurement
	// runs in a process of its own, this test binary run again for this
	// test alone.
	if os.Getenv(hostileChildEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHostilePayloadsInTheUI$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), hostileChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("the measuring process said:\n%s", out)
		if err != nil {
			t.Fatalf("the measuring process failed: %v", err)
		}
		return
	}
	// Eight renderings of the payload (input, signal, event, question,
	// result, output, and the review's), each bounded by payloadview to
	// about a megabyte.
	const renderAllowance = 16 << 20
	const readAllowance = 64
	// The times each view is measured.
	const allocTries = 3
	v := newEnv(t, envOptions{})
	c, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{v.srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	vw := viewer{t: t, base: v.srv.URL, hc: v.client}
	for i, hp := range hostilePayloads {
		plain := bytes.Repeat([]byte{0xff}, max(len(hp.payload), 2*payloadview.DefaultMaxTextBytes))
		hPlain := storeHostile(t, c, plain, fmt.Sprintf("plain-%d", i))
		h := storeHostile(t, c, hp.payload, fmt.Sprintf("hostile-%d", i))
		// Whatever else the process does while the views are measured (the
		// engine's own goroutines, the garbage collector's pacing) only adds
		// to TotalAlloc, so the least of a few measurements of each is the
		// views' own cost.
		base, alloc := uint64(math.MaxUint64), uint64(math.MaxUint64)
		for range allocTries {
			base = min(base, viewAlloc(t, vw, plain, hPlain))
			alloc = min(alloc, viewAlloc(t, vw, hp.payload, h))
		}
		t.Logf("%s (%d bytes): the pages of the runs, the review page and three downloads allocated %d MiB; for as many plain bytes %d MiB",
			hp.name, len(hp.payload), alloc>>20, base>>20)
		if alloc > base+renderAllowance+readAllowance*uint64(len(hp.payload)) {
			t.Errorf("%s: the views allocated %d MiB, those of as many plain bytes %d MiB", hp.name, alloc>>20, base>>20)
		}
	}
}

// TestHostilePayloadViewsDoNotAccumulate opens the run page of the worst
// payload (its input, a signal, an event and a step's question) again and
// again, as its script does every 2 s: the live heap after each view stays
// where it was after the first. It logs what one view costs:
//
//	go test ./ui -run TestHostilePayloadViewsDoNotAccumulate -v
func TestHostilePayloadViewsDoNotAccumulate(t *testing.T) {
	v := newEnv(t, envOptions{})
	c, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{v.srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	hp := hostilePayloads[0]
	h := storeHostile(t, c, hp.payload, "again")
	vw := viewer{t: t, base: v.srv.URL, hc: v.client}
	path := fmt.Sprintf("/ui/runs/%d", h.open)
	before := heapAfterGC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	code, body, _ := vw.get(path)
	runtime.ReadMemStats(&m1)
	if code != http.StatusOK {
		t.Fatalf("HTTP %d", code)
	}
	first := heapAfterGC()
	t.Logf("one view of the run page of %s (%d bytes, stored 4 times): %d KiB of HTML; allocated %d MiB; heap in use %d MiB at its end; live heap %d KiB before, %d KiB after",
		hp.name, len(hp.payload), len(body)>>10, (m1.TotalAlloc-m0.TotalAlloc)>>20, m1.HeapInuse>>20, before>>10, first>>10)
	for range 20 {
		if code, _, _ := vw.get(path); code != http.StatusOK {
			t.Fatalf("HTTP %d", code)
		}
	}
	last := heapAfterGC()
	t.Logf("live heap after the first view %d KiB, after 20 more %d KiB", first>>10, last>>10)
	if last > first+8<<20 {
		t.Errorf("20 more views grew the live heap from %d KiB to %d KiB", first>>10, last>>10)
	}
}

// The bounds hold for a person as for the API: a reader's token opens the
// pages and the downloads, a token the API refuses opens neither.
func TestPayloadDownloadNeedsAReader(t *testing.T) {
	tokens := &httpapi.Tokens{}
	for _, g := range []struct {
		name, token string
		role        httpapi.Role
	}{{"rita", "read", httpapi.RoleReader}, {"carl", "cli", httpapi.RoleClient}} {
		if err := tokens.Add(g.name, g.role, g.token); err != nil {
			t.Fatal(err)
		}
	}
	v := newEnv(t, envOptions{tokens: tokens})
	c, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{v.srv.URL}, Token: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	p := deepMsgpack(1000)
	cr, err := c.Create(context.Background(), engine.CreateJob{WorkflowID: "dl", Type: "T", Queue: "q", Input: p})
	if err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/ui/runs/%d/events/1/payload", cr.Job)
	code, _, loc := v.get(path)
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/signin") {
		t.Errorf("a download without signing in: HTTP %d to %q", code, loc)
	}
	v.signIn("read")
	code, body, _ := v.get(path)
	if code != http.StatusOK || body != string(p) {
		t.Errorf("a reader's download: HTTP %d, %d bytes", code, len(body))
	}
	for _, bad := range []string{fmt.Sprintf("/ui/runs/%d/events/9/payload", cr.Job), "/ui/runs/999/events/1/payload", fmt.Sprintf("/ui/runs/%d/events/0/payload", cr.Job), "/ui/review/77/output"} {
		if code, _, _ := v.get(bad); code != http.StatusNotFound {
			t.Errorf("%s: HTTP %d, want 404", bad, code)
		}
	}
}

// uiCluster is three raftfsm nodes, each serving the API and the UI on
// loopback, as heddle cluster runs them.
func uiCluster(t *testing.T) (map[string]*raftfsm.Node, map[string]string) {
	t.Helper()
	root := t.TempDir()
	urls := map[string]string{}
	nodes := map[string]*raftfsm.Node{}
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("n%d", i)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		nd, err := raftfsm.Open(raftfsm.Config{ID: id, Dir: filepath.Join(root, id), RaftAddr: "127.0.0.1:0", HTTPAddr: ln.Addr().String(),
			Bootstrap: i == 1, HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond,
			LeaderLeaseTimeout: 150 * time.Millisecond, FailoverGrace: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		nodes[id] = nd
		api, err := httpapi.NewServer(httpapi.ServerConfig{Service: nd.Engine(), Cluster: nd})
		if err != nil {
			t.Fatal(err)
		}
		h, err := New(Config{API: api})
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: mount(h, api), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }() // ends with Close below
		t.Cleanup(func() {
			api.Close()
			if err := srv.Close(); err != nil {
				t.Error(err)
			}
			if err := nd.Close(); err != nil {
				t.Error(err)
			}
		})
		urls[id] = "http://" + ln.Addr().String()
		if i == 1 {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, err := nd.WaitLeader(ctx)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := nodes["n1"].Join(context.Background(), id, nd.RaftAddr(), ln.Addr().String()); err != nil {
			t.Fatalf("join %s: %v", id, err)
		}
	}
	return nodes, urls
}

// TestHostilePayloadsOnACluster stores the hostile payloads through a
// follower of a three-node cluster and opens the pages on every node.
func TestHostilePayloadsOnACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	_, urls := uiCluster(t)
	c, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{urls["n2"]}, RetryTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var runs []hostileRun
	for i, hp := range hostilePayloads {
		runs = append(runs, storeHostile(t, c, hp.payload, fmt.Sprintf("hostile-%d", i)))
	}
	// Reads on a follower are the leader's (forwarded, or confirmed with
	// it), so every node shows what was stored at once.
	for _, id := range []string{"n1", "n2", "n3"} {
		vw := viewer{t: t, base: urls[id], hc: &http.Client{}}
		for i, hp := range hostilePayloads {
			t.Run(fmt.Sprintf("%s/%d", id, i), func(t *testing.T) {
				vw.t = t
				checkHostileViews(t, vw, hp.payload, runs[i])
			})
		}
	}
}
