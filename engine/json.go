package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// The HTTP API's JSON and the CLI's --json write statuses and other enums
// by name and lists as arrays, never null. These methods give the engine's
// types that form. They are JSON's alone: msgpack (the log, the store and
// the SDK's wire) ignores json.Marshaler, so it keeps the numbers, and
// encoding.TextMarshaler, which msgpack would use, is deliberately not
// implemented.

// enumJSON writes an enum by name when ok, else as its number, so a value
// this version does not name is not lost.
func enumJSON[T ~uint8](v T, name string, ok bool) ([]byte, error) {
	if ok {
		return json.Marshal(name)
	}
	return []byte(strconv.FormatUint(uint64(v), 10)), nil
}

// readEnumJSON reads an enum written by enumJSON: a name, which parse
// turns into the value (its error is the answer for a name it does not
// know), or a number. JSON null leaves dst as it is, as encoding/json
// leaves any other field. like is a sentence's subject and example for the
// error on anything else: "a status is a name such as \"Running\"".
func readEnumJSON[T ~uint8](b []byte, dst *T, parse func(string) (T, error), like string) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var name string
		if err := json.Unmarshal(b, &name); err != nil {
			return err
		}
		v, err := parse(name)
		if err != nil {
			return err
		}
		*dst = v
		return nil
	}
	n, err := strconv.ParseUint(string(b), 10, 8)
	if err != nil {
		return fmt.Errorf("engine: %s, not %s", like, b)
	}
	*dst = T(n)
	return nil
}

// nameIn returns the index of name in names as a T.
func nameIn[T ~uint8](names []string, name string) (T, bool) {
	for i, n := range names {
		if n == name {
			return T(i), true
		}
	}
	return 0, false
}

// MarshalJSON writes s by name ("Running"); a number this version does not
// know is written as the number, so nothing is lost.
func (s Status) MarshalJSON() ([]byte, error) {
	if int(s) < len(statusNames) {
		return enumJSON(s, statusNames[s], true)
	}
	return enumJSON(s, "", false)
}

// UnmarshalJSON reads a status by name, as MarshalJSON writes it ("None"
// included), or by number.
func (s *Status) UnmarshalJSON(b []byte) error {
	return readEnumJSON(b, s, func(name string) (Status, error) {
		if v, ok := nameIn[Status](statusNames[:], name); ok {
			return v, nil
		}
		return 0, fmt.Errorf("engine: unknown status %q (want one of %v)", name, statusNames)
	}, `a status is a name such as "Running"`)
}

// MarshalJSON writes o by name ("start_desc"; "" for ListOrderDefault).
func (o ListOrder) MarshalJSON() ([]byte, error) {
	if o < numListOrders {
		return json.Marshal(listOrderNames[o])
	}
	return json.Marshal(uint8(o))
}

// UnmarshalJSON reads an order by name.
func (o *ListOrder) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return fmt.Errorf("engine: a list order is a name such as \"start_desc\": %w", err)
	}
	v, err := ParseListOrder(name)
	if err != nil {
		return err
	}
	*o = v
	return nil
}

var reusePolicyNames = map[IDReusePolicy]string{
	IDReuseAllowAfterTerminal: "allow-after-terminal",
	IDReuseRejectDuplicate:    "reject-duplicate",
	IDReuseReturnExisting:     "return-existing",
}

// String names p as the CLI's --id-reuse flag does ("reject-duplicate").
func (p IDReusePolicy) String() string {
	if n, ok := reusePolicyNames[p]; ok {
		return n
	}
	return fmt.Sprintf("IDReusePolicy(%d)", uint8(p))
}

// ParseIDReusePolicy returns the policy String names.
func ParseIDReusePolicy(name string) (IDReusePolicy, error) {
	for p, n := range reusePolicyNames {
		if n == name {
			return p, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown workflow-id reuse policy %q (want allow-after-terminal, reject-duplicate or return-existing)", ErrInvalidCommand, name)
}

// MarshalJSON writes p by name; an unknown number is written as the number.
func (p IDReusePolicy) MarshalJSON() ([]byte, error) {
	n, ok := reusePolicyNames[p]
	return enumJSON(p, n, ok)
}

// UnmarshalJSON reads a policy by name or by number.
func (p *IDReusePolicy) UnmarshalJSON(b []byte) error {
	return readEnumJSON(b, p, ParseIDReusePolicy, `a reuse policy is a name such as "reject-duplicate"`)
}

// MarshalJSON writes Jobs as [] when there are none.
func (p ListPage) MarshalJSON() ([]byte, error) {
	type plain ListPage // the same fields, without this method
	q := plain(p)
	if q.Jobs == nil {
		q.Jobs = []*Job{}
	}
	return json.Marshal(q)
}

// MarshalJSON writes Events as [] when there are none.
func (p HistoryPage) MarshalJSON() ([]byte, error) {
	type plain HistoryPage
	q := plain(p)
	if q.Events == nil {
		q.Events = []Event{}
	}
	return json.Marshal(q)
}

// MarshalJSON writes Jobs as [] when nothing was claimed.
func (r ClaimResult) MarshalJSON() ([]byte, error) {
	type plain ClaimResult
	q := plain(r)
	if q.Jobs == nil {
		q.Jobs = []ClaimedJob{}
	}
	return json.Marshal(q)
}

// MarshalJSON writes s by name ("RUNNING"); a number this version does not
// know is written as the number.
func (s StepState) MarshalJSON() ([]byte, error) {
	if int(s) < len(stepStateNames) {
		return enumJSON(s, stepStateNames[s], true)
	}
	return enumJSON(s, "", false)
}

// UnmarshalJSON reads a step state by name, as MarshalJSON writes it, or
// by number.
func (s *StepState) UnmarshalJSON(b []byte) error {
	return readEnumJSON(b, s, func(name string) (StepState, error) {
		if v, ok := nameIn[StepState](stepStateNames[:], name); ok {
			return v, nil
		}
		return 0, fmt.Errorf("engine: unknown step state %q (want one of %v)", name, stepStateNames[1:])
	}, `a step state is a name such as "RUNNING"`)
}

// StepsPage is the HTTP API's answer listing a job's steps.
type StepsPage struct {
	Steps []StepInfo `json:"steps" msgpack:"s"`
}

// MarshalJSON writes Steps as [] when there are none.
func (p StepsPage) MarshalJSON() ([]byte, error) {
	type plain StepsPage
	q := plain(p)
	if q.Steps == nil {
		q.Steps = []StepInfo{}
	}
	return json.Marshal(q)
}

// ResourcesPage is the HTTP API's answer listing the resource pool.
type ResourcesPage struct {
	Resources []*Resource `json:"resources" msgpack:"r"`
}

// MarshalJSON writes Resources as [] when there are none.
func (p ResourcesPage) MarshalJSON() ([]byte, error) {
	type plain ResourcesPage
	q := plain(p)
	if q.Resources == nil {
		q.Resources = []*Resource{}
	}
	return json.Marshal(q)
}

// MarshalJSON writes p as its fields' JSON, except a BackoffCoefficient
// that is not a finite number, which JSON cannot hold: it is written as
// null. Commands never carry one (Validate refuses it), but a record
// written before that check may, and a read of it must not fail.
func (p RetryPolicy) MarshalJSON() ([]byte, error) {
	type plain RetryPolicy // the same fields without this method
	if math.IsNaN(p.BackoffCoefficient) || math.IsInf(p.BackoffCoefficient, 0) {
		return json.Marshal(struct {
			plain
			BackoffCoefficient *float64 `json:"backoff_coefficient"`
		}{plain: plain(p)})
	}
	return json.Marshal(plain(p))
}
