package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/heddlewf/heddle/engine"
)

// LinOp is one operation on one job's lease, as a client saw it: its kind
// (claim, reclaim, heartbeat, append, commit, wait, close, release), the
// attempt it names, its call and return times (Unix ns) and its outcome.
type LinOp struct {
	Client int
	Job    engine.JobID
	Kind   string
	Att    uint64
	Step   string
	Call   int64
	Return int64
	Out    string
	Woken  bool
}

type linInput struct {
	Kind string
	Att  uint64
	Step string
}

type linOutput struct {
	Out   string
	Woken bool
}

// linState is the fencing state of one job: its current attempt, whether
// that attempt holds the lease, and its committed steps (sorted, joined by
// "\x00", so that states compare with ==).
type linState struct {
	Att     uint64
	Running bool
	Steps   string
}

func (s linState) has(step string) bool {
	for _, x := range strings.Split(s.Steps, "\x00") {
		if x == step && s.Steps != "" {
			return true
		}
	}
	return false
}

func (s linState) with(step string) linState {
	var list []string
	if s.Steps != "" {
		list = strings.Split(s.Steps, "\x00")
	}
	list = append(list, step)
	sort.Strings(list)
	s.Steps = strings.Join(list, "\x00")
	return s
}

// leaseStep is the specification: what each operation requires of the
// state and what it leaves. Every claim is in the history (observed, or
// read back from the job's job_leased events), so a claim takes the next
// attempt of a job whose lease is free; a fenced write succeeds only for
// the current attempt while it runs and is refused as stale otherwise; a
// step commits once. An unknown outcome may or may not have been applied.
func leaseStep(state, input, output any) []any {
	s, in, out := state.(linState), input.(linInput), output.(linOutput)
	live := s.Running && s.Att == in.Att
	if out.Out == OutRefused {
		return []any{s}
	}
	var applied linState
	legal := false
	switch in.Kind {
	case "claim":
		applied, legal = linState{Att: in.Att, Running: true, Steps: s.Steps}, !s.Running && in.Att == s.Att+1
	case "reclaim":
		applied, legal = linState{Att: s.Att, Steps: s.Steps}, live
	case "heartbeat", "append":
		applied, legal = s, live
	case "commit":
		if out.Out == OutCommitted {
			if s.has(in.Step) {
				return []any{s}
			}
			return nil
		}
		applied, legal = s.with(in.Step), live && !s.has(in.Step)
	case "wait":
		applied, legal = s, live
		if !out.Woken {
			applied.Running = false
		}
	case "close", "release":
		applied, legal = linState{Att: s.Att, Steps: s.Steps}, live
	default:
		return nil
	}
	switch out.Out {
	case OutOK:
		if legal {
			return []any{applied}
		}
		return nil
	case OutStale:
		if !live {
			return []any{s}
		}
		return nil
	case OutUnknown:
		if legal {
			return []any{s, applied}
		}
		return []any{s}
	}
	return nil
}

// LeaseModel is the porcupine model of per-job fencing.
var LeaseModel = (&porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[engine.JobID][]porcupine.Operation{}
		var ids []engine.JobID
		for _, op := range h {
			j := op.Metadata.(engine.JobID)
			if by[j] == nil {
				ids = append(ids, j)
			}
			by[j] = append(by[j], op)
		}
		sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
		out := make([][]porcupine.Operation, len(ids))
		for i, j := range ids {
			out[i] = by[j]
		}
		return out
	},
	Init:  func() []any { return []any{linState{}} },
	Step:  leaseStep,
	Equal: func(a, b any) bool { return a.(linState) == b.(linState) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		d := fmt.Sprintf("%s(attempt %d", in.Kind, in.Att)
		if in.Step != "" {
			d += ", step " + in.Step
		}
		d += ") -> " + out.Out
		if out.Woken {
			d += " (woken)"
		}
		return d
	},
	DescribeState: func(state any) string {
		s := state.(linState)
		return fmt.Sprintf("attempt %d running=%v committed=[%s]", s.Att, s.Running, strings.ReplaceAll(s.Steps, "\x00", " "))
	},
}).ToModel()

// CheckLinearizable checks ops with porcupine. On a violation it writes
// the visualisation to htmlPath (when not empty) and reports the jobs.
func CheckLinearizable(ops []LinOp, htmlPath string, timeout time.Duration) (bool, string, error) {
	hist := make([]porcupine.Operation, len(ops))
	for i, o := range ops {
		hist[i] = porcupine.Operation{ClientId: o.Client, Input: linInput{Kind: o.Kind, Att: o.Att, Step: o.Step},
			Call: o.Call, Output: linOutput{Out: o.Out, Woken: o.Woken}, Return: o.Return, Metadata: o.Job}
	}
	res, info := porcupine.CheckOperationsVerbose(LeaseModel, hist, timeout)
	switch res {
	case porcupine.Ok:
		return true, "", nil
	case porcupine.Unknown:
		return false, fmt.Sprintf("porcupine gave no answer within %v", timeout), nil
	}
	msg := "the claims and fenced writes are not linearizable"
	if htmlPath != "" {
		if err := porcupine.VisualizePath(LeaseModel, info, htmlPath); err != nil {
			return false, msg, fmt.Errorf("chaos: writing %s: %w", htmlPath, err)
		}
		msg += "; see " + htmlPath
	}
	return false, msg, nil
}
