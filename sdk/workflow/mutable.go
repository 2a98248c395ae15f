package workflow

import (
	"fmt"
	"reflect"

	"github.com/heddlewf/heddle/sdk/converter"
)

type mutableState struct {
	calls   int
	current []byte
	has     bool
}

// MutableSideEffect returns the value of fn, recording it in the history
// only when it differs (by equals) from the value last recorded under id:
// a workflow can poll a changing setting without a history event per call.
// fn runs on every call of a live run and never during replay, which
// returns the values recorded at the same calls.
func MutableSideEffect(ctx Context, id string, fn func(ctx Context) any, equals func(a, b any) bool) converter.EncodedValue {
	if o := outboundOf(ctx); o != nil {
		return o.MutableSideEffect(ctx, id, fn, equals)
	}
	return mutableSideEffect(ctx, id, fn, equals)
}

func mutableSideEffect(ctx Context, id string, fn func(ctx Context) any, equals func(a, b any) bool) converter.EncodedValue {
	st := stateOf(ctx)
	if st.mutable == nil {
		st.mutable = map[string]*mutableState{}
	}
	ms := st.mutable[id]
	if ms == nil {
		ms = &mutableState{}
		st.mutable[id] = ms
	}
	ms.calls++
	key := fmt.Sprintf("mutable:%s:%d", id, ms.calls)
	record := func(data []byte) {
		v, _, err := st.x.KeyedMarker(key, "mutable_side_effect", func() ([]byte, error) { return data, nil })
		if err != nil {
			panic(fmt.Sprintf("workflow: MutableSideEffect %q: %v", id, err))
		}
		ms.current, ms.has = v, true
	}
	switch {
	case st.x.HasKeyedMarker(key):
		record(nil) // returns the recorded value
	case st.x.IsReplaying():
		// Nothing was recorded at this call: the value had not changed.
	default:
		v := fn(ctx)
		if ms.has && equals != nil {
			old := reflect.New(reflect.TypeOf(v))
			if converter.Decode(ms.current, old.Interface()) == nil && equals(old.Elem().Interface(), v) {
				return converter.NewEncodedValue(ms.current)
			}
		}
		data, err := converter.Encode(v)
		if err != nil {
			panic(fmt.Sprintf("workflow: MutableSideEffect %q: %v", id, err))
		}
		record(data)
	}
	return converter.NewEncodedValue(ms.current)
}
