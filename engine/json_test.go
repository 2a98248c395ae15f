package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// Statuses cross JSON by name, every one of them, and back; a number this
// version does not know stays a number; msgpack keeps the number.
func TestStatusJSON(t *testing.T) {
	tests := []struct {
		s    Status
		json string
	}{
		{StatusNone, `"None"`}, {StatusQueued, `"Queued"`}, {StatusRunning, `"Running"`},
		{StatusWaiting, `"Waiting"`}, {StatusParked, `"Parked"`}, {StatusRetrying, `"Retrying"`},
		{StatusCompleted, `"Completed"`}, {StatusFailed, `"Failed"`}, {StatusCancelled, `"Cancelled"`},
		{StatusDraft, `"Draft"`}, {StatusSuspended, `"Suspended"`}, {StatusTimedOut, `"TimedOut"`},
		{StatusTerminated, `"Terminated"`}, {Status(42), `42`},
	}
	if len(tests) != numStatuses+1 {
		t.Fatalf("%d rows for %d statuses: a new status needs a row", len(tests), numStatuses)
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.s)
		if err != nil || string(b) != tt.json {
			t.Errorf("Marshal(%d) = %s, %v; want %s", uint8(tt.s), b, err, tt.json)
		}
		var back Status
		if err := json.Unmarshal([]byte(tt.json), &back); err != nil || back != tt.s {
			t.Errorf("Unmarshal(%s) = %d, %v; want %d", tt.json, back, err, tt.s)
		}
		mp, err := msgpack.Marshal(tt.s)
		if err != nil || !bytes.Equal(mp, []byte{0xcc, byte(tt.s)}) { // msgpack's uint 8
			t.Errorf("msgpack of %v = %x, %v; want the number %d", tt.s, mp, err, uint8(tt.s))
		}
	}
}

func TestStatusJSONInput(t *testing.T) {
	tests := []struct {
		in   string
		want Status
		err  string // "" for none
	}{
		{`2`, StatusRunning, ""},
		{`null`, StatusQueued, ""}, // null leaves the value as it was
		{`"running"`, 0, `unknown status "running"`},
		{`"Sleeping"`, 0, `unknown status "Sleeping"`},
		{`true`, 0, `a status is a name such as "Running", not true`},
		{`256`, 0, `not 256`},
		{`-1`, 0, `not -1`},
	}
	for _, tt := range tests {
		s := StatusQueued
		err := json.Unmarshal([]byte(tt.in), &s)
		switch {
		case tt.err == "" && (err != nil || s != tt.want):
			t.Errorf("%s: %v, %v; want %v", tt.in, s, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: %v, want an error containing %q", tt.in, err, tt.err)
		}
	}
}

// Reuse policies cross JSON by the CLI's names, and are read back by name
// or number; msgpack keeps the number.
func TestIDReusePolicyJSON(t *testing.T) {
	tests := []struct {
		p    IDReusePolicy
		json string
	}{
		{IDReuseAllowAfterTerminal, `"allow-after-terminal"`},
		{IDReuseRejectDuplicate, `"reject-duplicate"`},
		{IDReuseReturnExisting, `"return-existing"`},
		{IDReusePolicy(9), `9`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.p)
		if err != nil || string(b) != tt.json {
			t.Errorf("Marshal(%d) = %s, %v; want %s", uint8(tt.p), b, err, tt.json)
		}
		var back IDReusePolicy
		if err := json.Unmarshal([]byte(tt.json), &back); err != nil || back != tt.p {
			t.Errorf("Unmarshal(%s) = %d, %v; want %d", tt.json, back, err, tt.p)
		}
		if mp, err := msgpack.Marshal(tt.p); err != nil || !bytes.Equal(mp, []byte{0xcc, byte(tt.p)}) {
			t.Errorf("msgpack of %v = %x, %v; want the number", tt.p, mp, err)
		}
	}
	var p IDReusePolicy
	if err := json.Unmarshal([]byte(`1`), &p); err != nil || p != IDReuseRejectDuplicate {
		t.Errorf("a number: %v, %v", p, err)
	}
	err := json.Unmarshal([]byte(`"sometimes"`), &p)
	if !errors.Is(err, ErrInvalidCommand) || !strings.Contains(err.Error(), `"sometimes"`) {
		t.Errorf("an unknown name: %v, want ErrInvalidCommand naming it", err)
	}
	if _, err := ParseIDReusePolicy("reject-duplicate"); err != nil {
		t.Errorf("ParseIDReusePolicy: %v", err)
	}
}

// Empty pages and claims are [] in JSON, not null, so that a script can
// iterate over them without a check.
func TestEmptyListsAreArrays(t *testing.T) {
	for _, tt := range []struct {
		v    any
		want string
	}{
		{ListPage{}, `{"jobs":[],"next":0}`},
		{&ListPage{Next: 3}, `{"jobs":[],"next":3}`},
		{HistoryPage{}, `{"events":[],"next":0}`},
		{ClaimResult{}, `{"jobs":[]}`},
	} {
		b, err := json.Marshal(tt.v)
		if err != nil || string(b) != tt.want {
			t.Errorf("%T: %s, %v; want %s", tt.v, b, err, tt.want)
		}
	}
}

// Step states and overlap policies cross JSON by name, every one of them,
// and are read back by name or number; null leaves the value, and anything
// else is an error naming it.
func TestStepStateAndOverlapJSON(t *testing.T) {
	for i, name := range stepStateNames {
		roundTripEnum(t, StepState(i), `"`+name+`"`)
	}
	roundTripEnum(t, StepState(200), `200`)
	for i, name := range overlapNames {
		roundTripEnum(t, OverlapPolicy(i), `"`+name+`"`)
	}
	roundTripEnum(t, OverlapPolicy(99), `99`)

	inputs := []struct {
		in   string
		into any
		err  string // "" for none
	}{
		{`null`, new(StepState), ""},
		{`"Running"`, new(StepState), `unknown step state "Running"`},
		{`[1]`, new(StepState), `a step state is a name such as "RUNNING", not [1]`},
		{`null`, new(OverlapPolicy), ""},
		{`"skip"`, new(OverlapPolicy), `"skip"`},
		{`1.5`, new(OverlapPolicy), `an overlap policy is a name such as "Skip", not 1.5`},
		{`"maybe"`, new(IDReusePolicy), `"maybe"`},
		{`{}`, new(IDReusePolicy), `a reuse policy is a name such as "reject-duplicate", not {}`},
	}
	for _, tt := range inputs {
		err := json.Unmarshal([]byte(tt.in), tt.into)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s into %T: %v", tt.in, tt.into, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s into %T: %v, want an error containing %q", tt.in, tt.into, err, tt.err)
		}
	}
}

// roundTripEnum checks that v marshals to want and want unmarshals to v.
func roundTripEnum[T interface {
	~uint8
	json.Marshaler
}](t *testing.T, v T, want string) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil || string(b) != want {
		t.Errorf("Marshal(%T %d) = %s, %v; want %s", v, uint8(v), b, err, want)
	}
	var back T
	if err := json.Unmarshal([]byte(want), &back); err != nil || back != v {
		t.Errorf("Unmarshal(%s) into %T = %d, %v; want %d", want, v, uint8(back), err, uint8(v))
	}
}
