package machine_test

// Trace directives of the outbox (docs/sharding.md, "Cross-shard work").
// A sharded trace keeps one store per shard and applies each command to
// the store of the shard the last shard directive chose:
//
//	shard index=N count=M          apply what follows to shard N's store, of M shards
//	deliver source=N target=M seq=S [acked-below=A] [refusal=TEXT outcome=NAME]
//	                               Deliver the pending entry S of shard N for M (read from N's store),
//	                               or record its refusal
//	ack source=N target=M seq=S [error=TEXT outcome=NAME]
//	                               AckDelivery with the answer the last deliver of the entry got,
//	                               or a refusal
//	child-closed parent=ID step=S child=ID [failed]   (refused: only inside a Deliver)
//	close-child child=ID parent=ID                    (refused: only inside a Deliver)
//	review-closed parent=ID step=S task=ID [failed]   (refused: only inside a Deliver)
//	outbox                         the pending entries of the current shard, its remote child and review links, remote unit
//	                               records and sending marks
//	verify-across                  machine.VerifyAcrossShards over every shard's store
//	backlog                        machine.OutboxBacklog of the current shard

import (
	"fmt"
	"strings"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

var outboxDirectives = map[string]commandDirective{
	"deliver": func(e *traceEnv, a *traceArgs) engine.Command {
		ref := deliveryRef(a)
		db := e.shards[ref.Source]
		if db == nil {
			a.td.Fatalf(a.t, "deliver: shard %d has no store in this trace", ref.Source)
		}
		// An entry acknowledged already is delivered again with the command
		// an earlier deliver of this trace read (a deposed leader's late
		// repeat).
		cmd, ok := e.sent[ref]
		if !ok {
			viewOK(e.t, db, func(r *storage.Reader) error {
				b, err := r.Get(storage.OutboxEntryKey(ref.Target, ref.Seq))
				if err != nil {
					return fmt.Errorf("%s: %w", ref, err)
				}
				entry, err := machine.DecodeOutboxEntry(b)
				if err == nil {
					cmd = entry.Command
					e.sent[ref] = cmd
				}
				return err
			})
		}
		d := &engine.Deliver{DeliveryRef: ref, Command: cmd, AckedBelow: uint64(a.int("acked-below", 0))}
		if a.has("refusal") {
			d.Refusal = &engine.DeliverResult{Error: a.str("refusal", ""), Outcome: a.str("outcome", "")}
		}
		return d
	},
	"ack": func(e *traceEnv, a *traceArgs) engine.Command {
		ref := deliveryRef(a)
		ans, ok := e.delivered[ref]
		if a.has("error") {
			ans = engine.DeliverResult{Kind: engine.CommandKind(a.int("kind", int64(engine.KindCreateJob))), Error: a.str("error", ""), Outcome: a.str("outcome", "")}
		} else if !ok {
			a.td.Fatalf(a.t, "ack: %s was not delivered in this trace; give error= for a refusal", ref)
		}
		return &engine.AckDelivery{DeliveryRef: ref, Answer: ans}
	},
	"child-closed": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.ChildClosed{Parent: engine.JobID(a.int("parent", 0)), Step: a.str("step", ""),
			Child: engine.JobID(a.int("child", 0)), Failed: a.flag("failed")}
	},
	// release-unit job=ID step=S step-attempt=N   (refused: only inside a Deliver)
	"release-unit": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.ReleaseUnit{Job: engine.JobID(a.int("job", 0)), Step: a.str("step", ""), StepAttempt: uint32(a.int("step-attempt", 0))}
	},
	"review-closed": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.ReviewClosed{Parent: engine.JobID(a.int("parent", 0)), Step: a.str("step", ""),
			Review: engine.ReviewID(a.int("task", 0)), Failed: a.flag("failed")}
	},
	"close-child": func(e *traceEnv, a *traceArgs) engine.Command {
		return &engine.CloseChild{Child: engine.JobID(a.int("child", 0)), Parent: engine.JobID(a.int("parent", 0))}
	},
}

func init() {
	lookDirectives["outbox"] = lookOutbox
	lookDirectives["verify-across"] = lookVerifyAcross
	lookDirectives["backlog"] = lookBacklog
}

// lookBacklog prints machine.OutboxBacklog of the current shard.
func lookBacklog(e *traceEnv, a *traceArgs) string {
	var out strings.Builder
	viewOK(e.t, e.db, func(r *storage.Reader) error {
		bs, err := machine.OutboxBacklog(r, e.layout.Index)
		for _, b := range bs {
			out.WriteString(formatValue(b) + "\n")
		}
		return err
	})
	if out.Len() == 0 {
		return "(empty)\n"
	}
	return out.String()
}

// lookVerifyAcross runs machine.VerifyAcrossShards over the trace's shards.
func lookVerifyAcross(e *traceEnv, a *traceArgs) string {
	errs := machine.VerifyAcrossShards(e.layout.Count, func(k int, fn func(r *storage.Reader) error) error {
		db := e.shards[k]
		if db == nil {
			return nil
		}
		return db.View(fn)
	}, 0)
	if len(errs) == 0 {
		return "ok\n"
	}
	var out strings.Builder
	for _, err := range errs {
		out.WriteString(err.Error() + "\n")
	}
	return out.String()
}

func deliveryRef(a *traceArgs) engine.DeliveryRef {
	return engine.DeliveryRef{Source: int(a.int("source", 0)), Target: int(a.int("target", 0)), Seq: uint64(a.int("seq", 0))}
}

// switchShard makes the store of the shard the directive names current.
func (e *traceEnv) switchShard(a *traceArgs) string {
	l := engine.ShardLayout{Index: int(a.int("index", 0)), Count: int(a.int("count", 0))}
	m, err := machine.NewShardMachine(engine.Limits{}, l)
	if err != nil {
		a.td.Fatalf(a.t, "shard: %v", err)
	}
	if e.shards == nil {
		e.shards = map[int]*storage.DB{}
		e.delivered = map[engine.DeliveryRef]engine.DeliverResult{}
		e.sent = map[engine.DeliveryRef][]byte{}
	}
	db := e.shards[l.Index]
	if db == nil {
		if db, err = storage.Open(storage.Options{InMemory: true}); err != nil {
			e.t.Fatal(err)
		}
		e.t.Cleanup(func() { closeOK(e.t, db) })
		e.shards[l.Index] = db
	}
	e.db, e.m, e.layout = db, m, l
	return fmt.Sprintf("shard %d of %d\n", l.Index, l.Count)
}

// rememberDelivery keeps the answer of a Deliver, for the ack that follows,
// and counts the command it carried as traced (ChildClosed and CloseChild
// are applied only so).
func (e *traceEnv) rememberDelivery(cmd engine.Command, res engine.Result) {
	if d, ok := cmd.(*engine.Deliver); ok && e.delivered != nil {
		ans := *res.(*engine.DeliverResult)
		if !ans.Duplicate {
			e.seen[ans.Kind] = true
		}
		ans.Duplicate = false
		e.delivered[d.DeliveryRef] = ans
	}
}

// lookOutbox prints the current shard's pending entries (with the command
// each carries), remote child and review links and sending marks.
func lookOutbox(e *traceEnv, a *traceArgs) string {
	var out strings.Builder
	viewOK(e.t, e.db, func(r *storage.Reader) error {
		entries, err := machine.PendingEntries(r, 0)
		if err != nil {
			return err
		}
		for _, en := range entries {
			cmd, err := machine.DecodeCommand(en.Command)
			if err != nil {
				return err
			}
			cmd.Head().NowMS = 0
			fmt.Fprintf(&out, "entry %s: %s %s\n", en.DeliveryRef, cmd.Kind(), formatValue(cmd))
		}
		err = r.Scan(storage.RemoteChildPrefix, nil, true, func(k, b []byte) (bool, error) {
			c, err := machine.DecodeRemoteChild(b)
			if err != nil {
				return false, err
			}
			fmt.Fprintf(&out, "link job %d step %s: %s\n", c.Parent, c.Step, formatValue(c))
			return true, nil
		})
		if err != nil {
			return err
		}
		units, err := machine.ReadRemoteUnits(r)
		if err != nil {
			return err
		}
		for _, u := range units {
			fmt.Fprintf(&out, "unit job %d step %s: %s\n", u.Job, u.Step, formatValue(u))
		}
		err = r.Scan(storage.RemoteReviewPrefix, nil, true, func(k, b []byte) (bool, error) {
			l, err := machine.DecodeRemoteReview(b)
			if err != nil {
				return false, err
			}
			fmt.Fprintf(&out, "review link job %d step %s: %s\n", l.Parent, l.Step, formatValue(l))
			return true, nil
		})
		if err != nil {
			return err
		}
		return r.Scan(storage.SendingPrefix, nil, true, func(k, b []byte) (bool, error) {
			job, step, err := storage.ParseSendingKey(k)
			if err != nil {
				return false, err
			}
			at, err := storage.ParseSendingValue(b)
			if err != nil {
				return false, err
			}
			fmt.Fprintf(&out, "sending job %d step %s: to shard %d #%d\n", job, step, at.Shard, at.Seq)
			return true, nil
		})
	})
	if out.Len() == 0 {
		return "(empty)\n"
	}
	return out.String()
}
