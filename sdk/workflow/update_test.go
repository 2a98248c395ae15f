package workflow

import (
	"reflect"
	"strings"
	"testing"
)

// A validator takes the handler's parameters with or without its leading
// Context, as Temporal's does; anything else is refused with a message
// that says what differs.
func TestCheckValidator(t *testing.T) {
	handler := reflect.TypeOf(func(Context, int, string) (int, error) { return 0, nil })
	for _, tc := range []struct {
		name      string
		validator any
		withCtx   bool
		wantErr   string
	}{
		{"with the Context", func(Context, int, string) error { return nil }, true, ""},
		{"without the Context", func(int, string) error { return nil }, false, ""},
		{"a parameter of another type", func(int, int) error { return nil }, false, "parameter 2"},
		{"too few parameters", func(int) error { return nil }, false, "takes 1 parameters"},
		{"no error returned", func(int, string) {}, false, "must return exactly an error"},
		{"a result besides the error", func(int, string) (int, error) { return 0, nil }, false, "must return exactly an error"},
		{"not a function", 7, false, "it is a int"},
	} {
		withCtx, err := checkValidator(reflect.ValueOf(tc.validator), handler)
		switch {
		case tc.wantErr == "" && (err != nil || withCtx != tc.withCtx):
			t.Errorf("%s: %v, withCtx %v; want accepted, withCtx %v", tc.name, err, withCtx, tc.withCtx)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.wantErr)
		}
	}
	// A handler with no arguments: its validator takes the Context or
	// nothing.
	bare := reflect.TypeOf(func(Context) error { return nil })
	for _, v := range []any{func(Context) error { return nil }, func() error { return nil }} {
		if _, err := checkValidator(reflect.ValueOf(v), bare); err != nil {
			t.Errorf("%T for a handler without arguments: %v", v, err)
		}
	}
}
