package machine_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/heddlewf/heddle/engine"
	"github.com/heddlewf/heddle/engine/machine"
	"github.com/heddlewf/heddle/storage"
)

// FuzzDecodeOutboxEntry: a stored outbox entry, delivered record, remote
// child link, remote review link or remote unit record decodes into a value that encodes again to the same bytes, or
// fails as corrupt; never a panic. The first byte of the input picks the
// record.
func FuzzDecodeOutboxEntry(f *testing.F) {
	ref := engine.DeliveryRef{Source: 1, Target: 3, Seq: 7}
	cmd, err := machine.EncodeCommand(&engine.CreateJob{Header: engine.Header{NowMS: 1}, WorkflowID: "son", Type: "t", ParentID: 1, ParentStep: "s"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(append([]byte{0}, machine.EncodeOutboxEntry(&engine.OutboxEntry{DeliveryRef: ref, Kind: engine.KindCreateJob, Command: cmd, Parent: 1, Step: "s", CreatedMS: 5})...))
	f.Add(append([]byte{1}, machine.EncodeDelivered(&engine.DeliveredRecord{DeliveryRef: ref, Answer: engine.DeliverResult{Kind: engine.KindCreateJob, Result: []byte{4, 1, 0x90}}, AtMS: 9})...))
	f.Add(append([]byte{2}, machine.EncodeRemoteChild(&engine.RemoteChild{Parent: 1, Step: "s", WorkflowID: "son", Delivery: ref, Child: 99, ClosePolicy: engine.ParentCloseAbandon})...))
	f.Add(append([]byte{3}, machine.EncodeRemoteReview(&engine.RemoteReview{Parent: 1, Step: "s", Job: "letter", Phase: "p", Delivery: ref, Review: 99, Closed: true})...))
	f.Add(append([]byte{3}, machine.EncodeRemoteReview(&engine.RemoteReview{Parent: 1, Step: "s", Job: "letter", Phase: "p", Delivery: ref, Error: "taken", Outcome: "task_exists"})...))
	f.Add(append([]byte{4}, machine.EncodeRemoteUnit(&engine.RemoteUnit{Job: 1, Step: "s", StepAttempt: 2, Capabilities: []string{"gpu"},
		Selector: map[string]string{"zone": "a"}, Avoid: []string{"gpu-2"}, WaiterSeq: 4, AskedMS: 5})...))
	for i, k := range []storage.Kind{storage.KindOutboxEntry, storage.KindDelivered, storage.KindRemoteChild, storage.KindRemoteReview, storage.KindRemoteUnit} {
		for _, b := range fuzzGarbage(k) {
			f.Add(append([]byte{byte(i)}, b...))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		pick, data := data[0]%5, data[1:]
		roundTrip := func(what string, decode func([]byte) (any, error), encode func(any) []byte) {
			v, err := decode(data)
			if err != nil {
				fuzzDecodeErr(t, what, err)
				return
			}
			enc := encode(v)
			v2, err := decode(enc)
			if err != nil {
				t.Fatalf("decoding the re-encoding of %+v: %v", v, err)
			}
			fuzzSameValue(t, what, v, v2)
			if enc2 := encode(v2); !bytes.Equal(enc, enc2) {
				t.Fatalf("%s: encoding is not stable: % x, then % x", what, enc, enc2)
			}
		}
		switch pick {
		case 0:
			roundTrip("DecodeOutboxEntry", func(b []byte) (any, error) { return machine.DecodeOutboxEntry(b) },
				func(v any) []byte { return machine.EncodeOutboxEntry(v.(*engine.OutboxEntry)) })
		case 1:
			roundTrip("DecodeDelivered", func(b []byte) (any, error) { return machine.DecodeDelivered(b) },
				func(v any) []byte { return machine.EncodeDelivered(v.(*engine.DeliveredRecord)) })
		case 2:
			roundTrip("DecodeRemoteChild", func(b []byte) (any, error) { return machine.DecodeRemoteChild(b) },
				func(v any) []byte { return machine.EncodeRemoteChild(v.(*engine.RemoteChild)) })
		case 4:
			roundTrip("DecodeRemoteUnit", func(b []byte) (any, error) { return machine.DecodeRemoteUnit(b) },
				func(v any) []byte { return machine.EncodeRemoteUnit(v.(*engine.RemoteUnit)) })
		default:
			roundTrip("DecodeRemoteReview", func(b []byte) (any, error) { return machine.DecodeRemoteReview(b) },
				func(v any) []byte { return machine.EncodeRemoteReview(v.(*engine.RemoteReview)) })
		}
	})
}

// TestVerifyShardOutbox: VerifyShard finds an outbox entry for a shard the
// cluster does not have, one whose source job is gone, a delivered record
// stored under another entry's key, and a pending link without its entry.
func TestVerifyShardOutbox(t *testing.T) {
	l := engine.ShardLayout{Index: 0, Count: 2}
	cmd, err := machine.EncodeCommand(&engine.ChildClosed{Header: engine.Header{NowMS: 1}, Parent: engine.JobIDOf(1, 1), Step: "s", Child: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		key  []byte
		val  []byte
		want string
	}{
		{"entry beyond the count", storage.OutboxEntryKey(2, 1),
			machine.EncodeOutboxEntry(&engine.OutboxEntry{DeliveryRef: engine.DeliveryRef{Source: 0, Target: 2, Seq: 1}, Kind: engine.KindChildClosed, Command: cmd}),
			"not another shard of 2"},
		{"entry without its source job", storage.OutboxEntryKey(1, 1),
			machine.EncodeOutboxEntry(&engine.OutboxEntry{DeliveryRef: engine.DeliveryRef{Source: 0, Target: 1, Seq: 1}, Kind: engine.KindChildClosed, Command: cmd}),
			"beyond the last sequence"},
		{"delivered under another key", storage.DeliveredKey(1, 2),
			machine.EncodeDelivered(&engine.DeliveredRecord{DeliveryRef: engine.DeliveryRef{Source: 1, Target: 0, Seq: 1}, Answer: engine.DeliverResult{Kind: engine.KindCreateJob, Result: []byte{1}}}),
			"is stored under source 1 seq 2"},
		{"link without its job", storage.RemoteChildKey(3, "s"),
			machine.EncodeRemoteChild(&engine.RemoteChild{Parent: 3, Step: "s", Delivery: engine.DeliveryRef{Source: 0, Target: 1, Seq: 1}}),
			"the job does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := storage.Open(storage.Options{InMemory: true})
			if err != nil {
				t.Fatal(err)
			}
			defer closeOK(t, db)
			b := db.NewBatch()
			tx := b.Begin()
			tx.Set(tc.key, tc.val)
			if err := b.Add(tx); err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(); err != nil {
				t.Fatal(err)
			}
			viewOK(t, db, func(r *storage.Reader) error {
				errs := machine.VerifyShard(r, 0, l)
				if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
					t.Fatalf("VerifyShard = %v, want one error with %q", errs, tc.want)
				}
				return nil
			})
		})
	}
}

// TestVerifyAcrossShards: a child on shard 1 whose parent's shard holds no
// link to it, and a link on shard 0 naming a child shard 1 does not hold,
// are both found; the same stores with the link right are clean.
func TestVerifyAcrossShards(t *testing.T) {
	parent, child := engine.JobIDOf(0, 1), engine.JobIDOf(1, 1)
	open := func() *storage.DB {
		db, err := storage.Open(storage.Options{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeOK(t, db) })
		return db
	}
	put := func(db *storage.DB, key, val []byte) {
		b := db.NewBatch()
		tx := b.Begin()
		tx.Set(key, val)
		if err := b.Add(tx); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	check := func(dbs []*storage.DB) []error {
		return machine.VerifyAcrossShards(len(dbs), func(k int, fn func(r *storage.Reader) error) error { return dbs[k].View(fn) }, 0)
	}
	s0, s1 := open(), open()
	put(s1, storage.JobKey(uint64(child)), machine.EncodeJob(&engine.Job{ID: child, WorkflowID: "son", Status: engine.StatusQueued, ParentID: parent, ParentStep: "s1"}))
	if errs := check([]*storage.DB{s0, s1}); len(errs) != 1 || !strings.Contains(errs[0].Error(), "has no link to it") {
		t.Fatalf("a child without its parent's link: %v", errs)
	}
	put(s0, storage.RemoteChildKey(uint64(parent), "s2"), machine.EncodeRemoteChild(&engine.RemoteChild{Parent: parent, Step: "s2", WorkflowID: "kid",
		Delivery: engine.DeliveryRef{Source: 0, Target: 1, Seq: 2}, Child: child + 1}))
	if errs := check([]*storage.DB{s0, s1}); len(errs) != 2 || !strings.Contains(errs[0].Error()+errs[1].Error(), "does not hold") {
		t.Fatalf("a link naming a child that does not exist: %v", errs)
	}
	s0, s1 = open(), open()
	put(s1, storage.JobKey(uint64(child)), machine.EncodeJob(&engine.Job{ID: child, WorkflowID: "son", Status: engine.StatusQueued, ParentID: parent, ParentStep: "s1"}))
	put(s0, storage.RemoteChildKey(uint64(parent), "s1"), machine.EncodeRemoteChild(&engine.RemoteChild{Parent: parent, Step: "s1", WorkflowID: "son",
		Delivery: engine.DeliveryRef{Source: 0, Target: 1, Seq: 1}, Child: child}))
	if errs := check([]*storage.DB{s0, s1}); len(errs) != 0 {
		t.Fatalf("sound stores: %v", errs)
	}
}

// TestVerifyAcrossShardsFindsUnits: a unit the pool's shard counts for a
// step of another shard that neither holds nor asks for it (leaked), and a
// unit a step holds that the pool does not count (leased twice, in
// effect), are both found; the two sides agreeing are clean.
func TestVerifyAcrossShardsFindsUnits(t *testing.T) {
	job := engine.JobIDOf(1, 1)
	unit := &engine.RemoteUnit{Job: job, Step: "s", StepAttempt: 1, Capabilities: []string{"gpu"}, Resource: "gpu-1", AskedMS: 1}
	holding := &engine.StepRecord{Job: job, Step: "s", Activity: "a", State: engine.StepLeased, Attempt: 1, Resource: "gpu-1",
		Capabilities: []string{"gpu"}, UnitTry: 1}
	cases := []struct {
		name string
		unit *engine.RemoteUnit
		step *engine.StepRecord
		want string
	}{
		{"leaked", unit, nil, "neither holds nor asks"},
		{"uncounted", nil, holding, "does not count"},
		{"agreeing", unit, holding, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dbs := []*storage.DB{memDB(t), memDB(t)}
			if c.unit != nil {
				putRaw(t, dbs[0], storage.RemoteUnitKey(uint64(job), "s"), machine.EncodeRemoteUnit(c.unit))
			}
			if c.step != nil {
				putRaw(t, dbs[1], storage.StepKey(uint64(job), "s"), machine.EncodeStepRecord(c.step))
			}
			errs := machine.VerifyAcrossShards(2, func(k int, fn func(r *storage.Reader) error) error { return dbs[k].View(fn) }, 0)
			switch {
			case c.want == "" && len(errs) != 0:
				t.Fatalf("sound stores: %v", errs)
			case c.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want)):
				t.Fatalf("want one problem saying %q, got %v", c.want, errs)
			}
		})
	}
}

func memDB(t *testing.T) *storage.DB {
	db, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeOK(t, db) })
	return db
}

func putRaw(t *testing.T, db *storage.DB, key, val []byte) {
	b := db.NewBatch()
	tx := b.Begin()
	tx.Set(key, val)
	if err := b.Add(tx); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}
