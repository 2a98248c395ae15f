package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"time"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/httpapi"
	"github.com/heddlewf/heddle/sdk/client"
)

// signalAck is a signal the engine acknowledged.
type signalAck struct {
	wf  string
	job engine.JobID
}

// RunEmbedded runs the embedded scenario: one `heddle dev` process on one
// Badger directory, SIGKILLed o.Kills times under load (starts, signals and
// a worker's commits). After each restart every start acknowledged so far
// is listed, and every signal and step commit acknowledged since the last
// check is in its history; at the end the whole store is verified and
// every acknowledged command is looked up once more, offline.
func RunEmbedded(ctx context.Context, o Options) (Summary, Details, error) {
	sum, det := Summary{Seed: o.Seed, Linearizable: true, NodesConverged: true}, Details{Scenario: "embedded"}
	o.say("seed %d", o.Seed)
	cleanup, err := o.prepare("embedded")
	if err != nil {
		return sum, det, err
	}
	ok := false
	defer func() { cleanup(ok) }()
	logs, dbDir := filepath.Join(o.Dir, "logs"), filepath.Join(o.Dir, "db")
	ps := newProcs()
	defer ps.killAll()
	began := time.Now()
	addr, err := freePort()
	if err != nil {
		return sum, det, err
	}
	svc, err := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{addr}, RequestTimeout: 5 * time.Second, PollWait: 2 * time.Second})
	if err != nil {
		return sum, det, err
	}
	quick, _ := httpapi.NewClient(httpapi.ClientConfig{Addrs: []string{addr}, RetryTimeout: 200 * time.Millisecond, RequestTimeout: time.Second})
	var server *proc
	startServer := func() error {
		p, err := ps.start("dev", o.Bin, []string{"dev", "--dir", dbDir, "--http-addr", addr}, filepath.Join(logs, "dev.log"))
		if err != nil {
			return err
		}
		server = p
		for i := 0; i < 300; i++ {
			if p.exited() {
				return fmt.Errorf("chaos: heddle dev exited while starting (see dev.log)")
			}
			if _, err := quick.List(ctx, engine.ListQuery{Limit: 1}); err == nil {
				return nil
			}
			sleepCtx(ctx, 50*time.Millisecond)
		}
		return fmt.Errorf("chaos: heddle dev did not answer within 15s of starting")
	}
	if err := startServer(); err != nil {
		return sum, det, err
	}
	if err := AddSlots(ctx, svc); err != nil {
		return sum, det, err
	}
	ws := &workers{bin: o.Bin, logs: logs, addrs: []string{addr}, ps: ps, slots: make([]*proc, 1)}
	if err := ws.start(0); err != nil {
		return sum, det, err
	}

	drv := &driver{c: client.New(svc), svc: svc, seed: o.Seed}
	var sigMu sync.Mutex
	var sigs []signalAck
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		r := rand.New(rand.NewPCG(o.Seed, uint64(200+i)))
		go func() {
			defer wg.Done()
			for loadCtx.Err() == nil {
				// A steady trickle, not a flood: every check after a
				// restart reads back what was acknowledged since the last.
				sleepCtx(loadCtx, between(r, 20*time.Millisecond, 80*time.Millisecond))
				before := len(drv.acked())
				drv.startOne(loadCtx, r)
				acks := drv.acked()
				if len(acks) == before {
					continue
				}
				a := acks[len(acks)-1]
				if r.IntN(2) == 0 {
					if err := drv.c.SignalWorkflow(loadCtx, a.WorkflowID, "", SignalName, "go"); err == nil {
						sigMu.Lock()
						sigs = append(sigs, signalAck{a.WorkflowID, a.Job})
						sigMu.Unlock()
					}
				}
			}
		}()
	}

	kills := o.Kills
	if kills == 0 {
		kills = 100
	}
	r := rand.New(rand.NewPCG(o.Seed, 3))
	checkedSigs, checkedOps := 0, map[string]int{}
	for k := 0; k < kills && ctx.Err() == nil; k++ {
		sleepCtx(ctx, between(r, 100*time.Millisecond, 700*time.Millisecond))
		ps.kill(server)
		sum.Kills++
		// What was acknowledged before the kill must be there after it.
		acks := drv.acked()
		sigMu.Lock()
		newSigs := append([]signalAck(nil), sigs[checkedSigs:]...)
		checkedSigs = len(sigs)
		sigMu.Unlock()
		commits := newCommits(logs, checkedOps)
		if err := startServer(); err != nil {
			return sum, det, err
		}
		det.Restarts++
		// The reads go through svc, whose longer timeout suits a server
		// that has just replayed its logs on a loaded machine: quick's one
		// second once turned a slow read into a reported loss.
		missing := checkAcked(ctx, svc, acks, newSigs, commits)
		det.AckedCommands += len(acks) + len(newSigs) + len(commits)
		sum.Lost += len(missing)
		det.Problems = append(det.Problems, missing...)
	}
	stopLoad()
	wg.Wait()
	ws.stopAll()
	ps.stop(server, 20*time.Second)

	acks := drv.acked()
	sum.WorkflowsStarted = len(acks)
	rep, err := ReadStore(dbDir)
	if err != nil {
		return sum, det, err
	}
	sum.InvariantViolations = len(rep.Violations)
	for _, v := range rep.Violations {
		det.Problems = append(det.Problems, v.Error())
	}
	sum.DuplicateCommits, _ = DuplicateCommits(rep.ByID)
	for _, a := range acks {
		jh := rep.ByID[a.Job]
		if jh == nil || jh.Job.WorkflowID != a.WorkflowID {
			sum.Lost++
			det.Problems = append(det.Problems, fmt.Sprintf("acknowledged start of %s (job %d) is not in the store", a.WorkflowID, a.Job))
		} else if jh.Job.Status.Terminal() {
			sum.WorkflowsCompleted++
			if jh.Job.Status == engine.StatusFailed {
				sum.WorkflowsFailed++
				det.Problems = append(det.Problems, fmt.Sprintf("%s (job %d) ended Failed", a.WorkflowID, a.Job))
			}
		}
	}
	execs, _ := ReadExecutions(logs)
	rx := CheckReexecutions(execs, CommitTimes(rep.ByID), []Fault{{Kind: "kills", Start: began.UnixNano(), End: time.Now().UnixNano()}})
	det.Executions, det.Reexecuted = rx.Executions, rx.Reexecuted
	sum.ReexecutionsAfterCommit = len(rx.AfterCommit)
	det.Problems = append(det.Problems, rx.AfterCommit...)
	checkResources(&sum, &det, logs, nil, time.Now().UnixNano(), 0)
	sum.DurationS = time.Since(began).Seconds()
	ok = sum.OK()
	return sum, det, nil
}

// stepCommit is a CommitStep a worker saw acknowledged.
type stepCommit struct {
	job  engine.JobID
	step string
}

// newCommits returns the acknowledged commits in the workers' op logs
// past the lines already read (seen counts lines per file).
func newCommits(logs string, seen map[string]int) []stepCommit {
	files, _ := filepath.Glob(filepath.Join(logs, "ops-*.jsonl"))
	var out []stepCommit
	for _, f := range files {
		recs, err := readJSONLines[OpRecord](f)
		if err != nil {
			continue
		}
		calls := map[uint64]OpRecord{}
		for _, r := range recs {
			if !r.Ret {
				calls[r.ID] = r
			}
		}
		for _, r := range recs[min(seen[f], len(recs)):] {
			if c, ok := calls[r.ID]; ok && r.Ret && c.Op == "commit" && r.Out == OutOK {
				out = append(out, stepCommit{engine.JobID(c.Job), c.Step})
			}
		}
		seen[f] = len(recs)
	}
	return out
}

// checkAcked looks up, through the restarted server, every acknowledged
// start and the given signals and commits, and describes what is missing.
func checkAcked(ctx context.Context, svc engine.Service, acks []Ack, sigs []signalAck, commits []stepCommit) []string {
	var missing []string
	listed := map[engine.JobID]string{}
	var after engine.JobID
	for {
		page, err := svc.List(ctx, engine.ListQuery{Queue: Queue, After: after, Limit: 1000, Order: engine.ListStartAsc})
		if err != nil {
			return append(missing, fmt.Sprintf("listing jobs after a restart: %v", err))
		}
		for _, j := range page.Jobs {
			listed[j.ID] = j.WorkflowID
			after = j.ID
		}
		if len(page.Jobs) == 0 {
			break
		}
	}
	for _, a := range acks {
		if listed[a.Job] != a.WorkflowID {
			missing = append(missing, fmt.Sprintf("after a restart, acknowledged start %s (job %d) is missing", a.WorkflowID, a.Job))
		}
	}
	has := func(job engine.JobID, match func(engine.Event) bool) (bool, error) {
		var page *engine.HistoryPage
		var err error
		// A read that fails is tried again: what is checked is whether the
		// store holds the event, and a timeout says nothing about that.
		for try := 0; try < 3; try++ {
			if page, err = svc.History(ctx, job, 0, 0); err == nil || errors.Is(err, engine.ErrUnknownJob) || ctx.Err() != nil {
				break
			}
			sleepCtx(ctx, time.Duration(try+1)*500*time.Millisecond)
		}
		if err != nil {
			return false, err
		}
		for _, ev := range page.Events {
			if match(ev) {
				return true, nil
			}
		}
		return false, nil
	}
	for _, s := range sigs {
		found, err := has(s.job, func(ev engine.Event) bool { return ev.Type == engine.EventSignalReceived })
		if err != nil && !errors.Is(err, engine.ErrUnknownJob) {
			missing = append(missing, fmt.Sprintf("reading the history of job %d: %v", s.job, err))
		} else if !found {
			missing = append(missing, fmt.Sprintf("after a restart, the acknowledged signal to %s (job %d) is missing", s.wf, s.job))
		}
	}
	for _, c := range commits {
		found, err := has(c.job, func(ev engine.Event) bool { return ev.Commit && ev.Step == c.step })
		if err != nil {
			missing = append(missing, fmt.Sprintf("reading the history of job %d: %v", c.job, err))
		} else if !found {
			missing = append(missing, fmt.Sprintf("after a restart, the acknowledged commit of step %q of job %d is missing", c.step, c.job))
		}
	}
	return missing
}
