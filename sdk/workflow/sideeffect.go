package workflow

import (
	"fmt"

	"github.com/heddlewf/heddle/sdk/converter"
)

// SideEffect runs fn once, on the live run that first reaches this point,
// records its value (converter.Encode) in the history as a marker, and
// returns it encoded; replays return the recorded value without calling
// fn. fn must not block or issue commands. A value that cannot be encoded
// panics, since the run cannot go on without a recorded value.
func SideEffect(ctx Context, fn func(ctx Context) any) converter.EncodedValue {
	if o := outboundOf(ctx); o != nil {
		return o.SideEffect(ctx, fn)
	}
	return sideEffect(ctx, fn)
}

func sideEffect(ctx Context, fn func(ctx Context) any) converter.EncodedValue {
	st := stateOf(ctx)
	data, err := st.x.Marker("side_effect", func() ([]byte, error) { return converter.Encode(fn(ctx)) })
	if err != nil {
		panic(fmt.Sprintf("workflow: SideEffect: %v", err))
	}
	return converter.NewEncodedValue(data)
}

// Version is a version of workflow code at a change point (GetVersion).
type Version int

// DefaultVersion is the version of code from before GetVersion was added
// at a change point.
const DefaultVersion Version = -1

// GetVersion lets workflow code change while runs of the old code are
// still in flight. At a change point named changeID, a live run records
// maxSupported and returns it; a replay returns what was recorded, or
// DefaultVersion when the history reached this point before the call
// existed. The same changeID answers the same for the rest of the run. A
// version outside [minSupported, maxSupported] means this code can no
// longer run that history: GetVersion panics, which stops the execution.
func GetVersion(ctx Context, changeID string, minSupported, maxSupported Version) Version {
	if o := outboundOf(ctx); o != nil {
		return o.GetVersion(ctx, changeID, minSupported, maxSupported)
	}
	return getVersion(ctx, changeID, minSupported, maxSupported)
}

func getVersion(ctx Context, changeID string, minSupported, maxSupported Version) Version {
	st := stateOf(ctx)
	v, seen := st.versions[changeID]
	if !seen {
		data, ok, err := st.x.KeyedMarker("version:"+changeID, "version", func() ([]byte, error) {
			// A test may choose the version a new run records (OnGetVersion).
			if te := testEnvOf(ctx); te != nil {
				if v, ok := te.GetVersion(changeID, int(minSupported), int(maxSupported)); ok {
					return converter.Encode(v)
				}
			}
			return converter.Encode(maxSupported)
		})
		if err != nil {
			panic(fmt.Sprintf("workflow: GetVersion %q: %v", changeID, err))
		}
		v = DefaultVersion
		if ok {
			if err := converter.Decode(data, &v); err != nil {
				panic(fmt.Sprintf("workflow: GetVersion %q: recorded version: %v", changeID, err))
			}
		}
		st.versions[changeID] = v
	}
	if v < minSupported || v > maxSupported {
		panic(fmt.Sprintf("workflow: GetVersion %q: version %d is outside the supported range [%d, %d]",
			changeID, v, minSupported, maxSupported))
	}
	return v
}
