package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each repairable damage: the plan says what it drops, Repair does it, the
// directory opens, every key reads back as written or (a value whose log
// bytes were dropped) fails to read, and the keys lost are what the plan
// counted.
func TestRepair(t *testing.T) {
	rows := []struct {
		name    string
		crashed bool
		damage  func(t *testing.T, dir string)
		// drops: the plan drops intact transactions; unreadable: values
		// may fail to read afterwards (their value-log bytes were dropped);
		// cut: what was cut away is gone before the plan can count it.
		drops, unreadable, cut bool
		do                     string // in the action's text
	}{
		{"4 bytes flipped inside the write-ahead log", true, func(t *testing.T, dir string) {
			mem := only(t, dir, ".mem")
			flip(t, mem, dataEnd(t, mem)/3, 4)
		}, true, false, false, "truncate to"},
		{"the write-ahead log truncated", true, func(t *testing.T, dir string) {
			mem := only(t, dir, ".mem")
			truncate(t, mem, dataEnd(t, mem)/2)
		}, false, false, true, "truncate to"},
		{"the write-ahead log's header names a key", true, func(t *testing.T, dir string) {
			flip(t, only(t, dir, ".mem"), 3, 1)
		}, false, false, false, "clear the encryption key id"},
		{"MANIFEST deleted", false, func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, manifestName)); err != nil {
				t.Fatal(err)
			}
		}, false, false, false, "write a new MANIFEST listing the 1 table"},
		{"MANIFEST flipped", false, func(t *testing.T, dir string) {
			flip(t, filepath.Join(dir, manifestName), 12, 2)
		}, false, false, false, "MANIFEST.damaged"},
		{"bytes flipped in the value log", false, func(t *testing.T, dir string) {
			vlog := only(t, dir, ".vlog")
			flip(t, vlog, fileSize(vlog)/2, 4)
		}, false, true, false, "fail to read"},
	}
	fx := newFixtures(t)
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			dir := fx.copyOf(t, row.crashed)
			row.damage(t, dir)
			plan, err := PlanRepair(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Actions) != 1 || !plan.Repairable() {
				t.Fatalf("plan %+v: want one repairable action", plan.Actions)
			}
			a := plan.Actions[0]
			t.Logf("%s: %s", filepath.Base(a.Damage.File), a.Do)
			if !strings.Contains(a.Do, row.do) {
				t.Errorf("the action says %q, want it to mention %q", a.Do, row.do)
			}
			if row.drops != (a.DropTxns > 0) {
				t.Errorf("the action drops %d committed transactions", a.DropTxns)
			}
			if err := Repair(plan); err != nil {
				t.Fatal(err)
			}
			db, err := Open(Options{Dir: dir, ReserveBytes: -1})
			if err != nil {
				t.Fatalf("Open after the repair: %v", err)
			}
			defer func() {
				if err := db.Close(); err != nil {
					t.Error(err)
				}
			}()
			lost := 0
			for i := range fixtureKeys {
				v, err := db.Get([]byte(fixtureKey(i)))
				switch {
				case err == nil && string(v) != fixtureValue(i):
					t.Fatalf("key %d reads %d altered bytes after the repair", i, len(v))
				case errors.Is(err, ErrNotFound):
					lost++
				case errors.Is(err, ErrRead) && row.unreadable:
					lost++
				case err != nil:
					t.Fatalf("key %d: %v", i, err)
				case lost > 0 && !row.unreadable:
					t.Fatalf("key %d survived while an earlier one was dropped: a log keeps a prefix", i)
				}
			}
			// The damaged transaction itself is dropped too, counted
			// among the plan's records when the damage hit its end marker.
			if !row.unreadable && !row.cut && lost != a.DropTxns && lost != a.DropTxns+1 {
				t.Errorf("%d keys lost, the plan counted %d transactions", lost, a.DropTxns)
			}
			if (row.drops || row.cut || row.unreadable) != (lost > 0) {
				t.Errorf("%d keys lost after a repair that drops %d transactions", lost, a.DropTxns)
			}
			t.Logf("%d of %d keys lost", lost, fixtureKeys)
		})
	}
}

func TestRepairRefusesTables(t *testing.T) {
	dir := buildFixture(t, false)
	sst := only(t, dir, ".sst")
	flip(t, sst, fileSize(sst)/3, 4)
	before, err := os.ReadFile(sst)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := PlanRepair(dir)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Repairable() || len(plan.Actions) != 1 || !strings.Contains(plan.Actions[0].Unrepairable, "backup") {
		t.Fatalf("plan %+v: want one unrepairable action naming a backup", plan.Actions)
	}
	if err := Repair(plan); !errors.Is(err, ErrRepairRefused) {
		t.Fatalf("Repair: %v, want ErrRepairRefused", err)
	}
	after, err := os.ReadFile(sst)
	if err != nil || string(after) != string(before) {
		t.Fatalf("a refused repair changed the table (%v)", err)
	}
}

// A plan is carried out only on the directory it was made for.
func TestRepairRefusesAChangedDirectory(t *testing.T) {
	dir := buildFixture(t, true)
	mem := only(t, dir, ".mem")
	flip(t, mem, dataEnd(t, mem)/3, 4)
	plan, err := PlanRepair(dir)
	if err != nil {
		t.Fatal(err)
	}
	flip(t, mem, dataEnd(t, mem)/4, 4) // more damage, earlier
	if err := Repair(plan); !errors.Is(err, ErrRepairRefused) {
		t.Fatalf("Repair of a changed directory: %v, want ErrRepairRefused", err)
	}
	if ds, err := Check(dir); err != nil || len(ds) != 1 {
		t.Fatalf("Check: %v %v, want the damage still there", ds, err)
	}
}
