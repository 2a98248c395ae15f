package mockgen_test

import (
	"context"
	"errors"
	htmltemplate "html/template"
	"reflect"
	"strings"
	"testing"
	texttemplate "text/template"

	"github.com/heddlewf/heddle/internal/mockgen"
)

type shapes interface {
	None()
	Many(ctx context.Context, ids []string, m map[string]*int, c <-chan error, f func(int) bool) (int, error)
	Rest(prefix string, more ...any) error
	Bytes(b []byte) [2]struct{}
}

// The methods, in reflect's order (by name), each spelled as written and
// recording its call; the imports grouped standard library first.
func TestFileSpellsEachMethod(t *testing.T) {
	src, err := mockgen.File("fakes", "Generated for a test.", []mockgen.Mock{{Name: "Shapes", Of: reflect.TypeFor[shapes]()}})
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for _, want := range []string{
		"// Generated for a test.\n\npackage fakes\n\nimport (\n\t\"context\"\n\n\t\"github.com/stretchr/testify/mock\"\n)",
		"type Shapes struct {\n\tmock.Mock\n}",
		"func (_m *Shapes) Bytes(a0 []byte) [2]struct{} {",
		"func (_m *Shapes) Many(a0 context.Context, a1 []string, a2 map[string]*int, a3 <-chan error, a4 func(int) bool) (int, error) {",
		"\tret := _m.Called(a0, a1, a2, a3, a4)\n",
		"func (_m *Shapes) None() {\n\t_m.Called()\n}",
		"func (_m *Shapes) Rest(a0 string, a1 ...any) error {",
		"\tret := _m.Called(_ca...)\n",
		"func NewShapes(t interface {",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in:\n%s", want, s)
		}
	}
	if strings.Index(s, ") Bytes(") > strings.Index(s, ") Many(") {
		t.Error("methods not in name order")
	}
}

type withStruct interface{ F(struct{ X int }) }
type clash interface {
	F(*texttemplate.Template, *htmltemplate.Template)
}

func TestFileRefusesWhatItCannotWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		of   reflect.Type
		want error
	}{
		{"not an interface", reflect.TypeFor[int](), mockgen.ErrNotInterface},
		{"nil", nil, mockgen.ErrNotInterface},
		{"struct with fields", reflect.TypeFor[withStruct](), mockgen.ErrUnsupportedType},
		{"two template packages", reflect.TypeFor[clash](), mockgen.ErrImportClash},
	} {
		if _, err := mockgen.File("fakes", "x", []mockgen.Mock{{Name: "M", Of: tc.of}}); !errors.Is(err, tc.want) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.want)
		}
	}
}
