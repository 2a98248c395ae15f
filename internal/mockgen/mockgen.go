// Package mockgen writes testify mocks of Go interfaces, in the shape
// mockery gives them, from the interfaces' reflect.Type.
package mockgen

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"path"
	"reflect"
	"sort"
	"strings"
)

// Mock is one type to write: a struct named Name that implements the
// interface Of (a reflect.Type of Kind Interface).
type Mock struct {
	Name string
	Of   reflect.Type
}

// Sentinel errors of File, matched with errors.Is.
var (
	// ErrNotInterface: a Mock's Of is not an interface type.
	ErrNotInterface = errors.New("mockgen: not an interface type")
	// ErrUnsupportedType: a method uses a type the generator cannot
	// spell (an unnamed struct with fields, or a generic instance).
	ErrUnsupportedType = errors.New("mockgen: unsupported type")
	// ErrImportClash: two packages with the same last path element.
	ErrImportClash = errors.New("mockgen: two imported packages share a name")
)

// File returns the gofmt'ed source of package pkg holding mocks, each
// embedding testify's mock.Mock, with one method per method of its
// interface (in the interface's method order, which reflect sorts by
// name) and a constructor NewName(t) that asserts the expectations when
// the test ends. header is written first, as comment lines. The output
// depends only on its arguments, so it can be compared with a file on
// disk to find a stale one.
func File(pkg, header string, mocks []Mock) ([]byte, error) {
	g := &gen{imports: map[string]string{"github.com/stretchr/testify/mock": "mock"}}
	var body bytes.Buffer
	for _, m := range mocks {
		if m.Of == nil || m.Of.Kind() != reflect.Interface {
			return nil, fmt.Errorf("%w: %s is %v", ErrNotInterface, m.Name, m.Of)
		}
		if err := g.mock(&body, m); err != nil {
			return nil, err
		}
	}
	if g.err != nil {
		return nil, g.err
	}
	var out bytes.Buffer
	for _, line := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		fmt.Fprintf(&out, "// %s\n", line)
	}
	fmt.Fprintf(&out, "\npackage %s\n\nimport (\n", pkg)
	paths := make([]string, 0, len(g.imports))
	for p := range g.imports {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	// The standard library first (no dot in the first element), then the
	// rest, as goimports groups them.
	std := true
	for _, p := range paths {
		if first, _, _ := strings.Cut(p, "/"); std && strings.Contains(first, ".") {
			std = false
			out.WriteString("\n")
		}
		fmt.Fprintf(&out, "\t%q\n", p)
	}
	out.WriteString(")\n")
	out.Write(body.Bytes())
	src, err := format.Source(out.Bytes())
	if err != nil {
		return nil, fmt.Errorf("mockgen: the generated source does not parse: %w", err)
	}
	return src, nil
}

type gen struct {
	imports map[string]string // package path → the name used in the file
	err     error             // the first type that could not be spelled
}

// typ spells t as the generated file refers to it, importing its package.
func (g *gen) typ(t reflect.Type) string {
	if t.Name() != "" {
		if strings.Contains(t.Name(), "[") {
			g.fail(fmt.Errorf("%w: generic type %v", ErrUnsupportedType, t))
		}
		if t.PkgPath() == "" {
			if t.Kind() == reflect.Uint8 {
				return "byte" // reflect cannot tell byte from uint8; byte reads better
			}
			return t.Name() // a predeclared type: int, string, error, …
		}
		return g.qualify(t.PkgPath()) + "." + t.Name()
	}
	switch t.Kind() {
	case reflect.Pointer:
		return "*" + g.typ(t.Elem())
	case reflect.Slice:
		return "[]" + g.typ(t.Elem())
	case reflect.Array:
		return fmt.Sprintf("[%d]%s", t.Len(), g.typ(t.Elem()))
	case reflect.Map:
		return "map[" + g.typ(t.Key()) + "]" + g.typ(t.Elem())
	case reflect.Chan:
		switch t.ChanDir() {
		case reflect.RecvDir:
			return "<-chan " + g.typ(t.Elem())
		case reflect.SendDir:
			return "chan<- " + g.typ(t.Elem())
		}
		return "chan " + g.typ(t.Elem())
	case reflect.Func:
		return "func" + g.signature(t, nil)
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return "any"
		}
	case reflect.Struct:
		if t.NumField() == 0 {
			return "struct{}"
		}
	}
	g.fail(fmt.Errorf("%w: %v", ErrUnsupportedType, t))
	return "any"
}

func (g *gen) fail(err error) {
	if g.err == nil {
		g.err = err
	}
}

func (g *gen) qualify(pkgPath string) string {
	if name, ok := g.imports[pkgPath]; ok {
		return name
	}
	name := path.Base(pkgPath)
	for p, n := range g.imports {
		if n == name {
			g.fail(fmt.Errorf("%w: %s and %s", ErrImportClash, p, pkgPath))
		}
	}
	g.imports[pkgPath] = name
	return name
}

// signature spells the parameters and results of the func type t, naming
// the parameters with names when it is not nil.
func (g *gen) signature(t reflect.Type, names []string) string {
	return g.params(t, names) + g.results(t)
}

func (g *gen) params(t reflect.Type, names []string) string {
	var b strings.Builder
	b.WriteString("(")
	for i := range t.NumIn() {
		if i > 0 {
			b.WriteString(", ")
		}
		if names != nil {
			b.WriteString(names[i] + " ")
		}
		if t.IsVariadic() && i == t.NumIn()-1 {
			b.WriteString("..." + g.typ(t.In(i).Elem()))
		} else {
			b.WriteString(g.typ(t.In(i)))
		}
	}
	b.WriteString(")")
	return b.String()
}

func (g *gen) results(t reflect.Type) string {
	switch t.NumOut() {
	case 0:
		return ""
	case 1:
		return " " + g.typ(t.Out(0))
	}
	outs := make([]string, t.NumOut())
	for i := range outs {
		outs[i] = g.typ(t.Out(i))
	}
	return " (" + strings.Join(outs, ", ") + ")"
}

var errorType = reflect.TypeFor[error]()

func (g *gen) mock(b *bytes.Buffer, m Mock) error {
	// The comment names the interface without importing its package: the
	// file refers to it only if its methods do.
	fmt.Fprintf(b, "\n// %s is a testify mock of %s.%s.\ntype %s struct {\n\tmock.Mock\n}\n",
		m.Name, path.Base(m.Of.PkgPath()), m.Of.Name(), m.Name)
	for i := range m.Of.NumMethod() {
		g.method(b, m.Name, m.Of.Method(i))
	}
	fmt.Fprintf(b, `
// New%[1]s returns a %[1]s whose expectations are asserted when the test
// ends.
func New%[1]s(t interface {
	mock.TestingT
	Cleanup(func())
}) *%[1]s {
	m := &%[1]s{}
	m.Mock.Test(t)
	t.Cleanup(func() { m.AssertExpectations(t) })
	return m
}
`, m.Name)
	return g.err
}

// method writes one method: it records the call with every argument (a
// variadic parameter's elements one by one, as mockery does, so that On
// lists them as separate arguments) and returns what Return gave, where a
// function of the method's parameters is called for its result and a nil
// stands for the zero value (a typed nil for interfaces and pointers).
func (g *gen) method(b *bytes.Buffer, recv string, meth reflect.Method) {
	t := meth.Type
	names := make([]string, t.NumIn())
	for i := range names {
		names[i] = fmt.Sprintf("a%d", i)
	}
	fmt.Fprintf(b, "\n// %s records the call and returns what the expectation gives.\n", meth.Name)
	fmt.Fprintf(b, "func (_m *%s) %s%s {\n", recv, meth.Name, g.signature(t, names))
	args := strings.Join(names, ", ")
	call := args
	if t.IsVariadic() {
		last := names[len(names)-1]
		fixed := strings.Join(names[:len(names)-1], ", ")
		fmt.Fprintf(b, "\t_ca := make([]any, 0, %d+len(%s))\n", len(names)-1, last)
		if fixed != "" {
			fmt.Fprintf(b, "\t_ca = append(_ca, %s)\n", fixed)
		}
		fmt.Fprintf(b, "\tfor _, _v := range %s {\n\t\t_ca = append(_ca, _v)\n\t}\n", last)
		args = "_ca..."
		call = strings.Join(append(names[:len(names)-1:len(names)-1], last+"..."), ", ")
	}
	if t.NumOut() == 0 {
		fmt.Fprintf(b, "\t_m.Called(%s)\n}\n", args)
		return
	}
	fmt.Fprintf(b, "\tret := _m.Called(%s)\n", args)
	fmt.Fprintf(b, "\tif len(ret) == 0 {\n\t\tpanic(%q)\n\t}\n", "no return value specified for "+meth.Name)
	params := "func" + g.params(t, nil) // the function type of one result, without the results
	outs := make([]string, t.NumOut())
	for i := range outs {
		outs[i] = fmt.Sprintf("r%d", i)
		fmt.Fprintf(b, "\tvar r%d %s\n", i, g.typ(t.Out(i)))
	}
	if t.NumOut() > 1 {
		// One function giving every result, as mockery accepts.
		fmt.Fprintf(b, "\tif rf, ok := ret.Get(0).(%s); ok {\n\t\treturn rf(%s)\n\t}\n", "func"+g.signature(t, nil), call)
	}
	for i := range outs {
		ot := g.typ(t.Out(i))
		fmt.Fprintf(b, "\tif rf, ok := ret.Get(%d).(%s %s); ok {\n\t\tr%d = rf(%s)\n\t}", i, params, ot, i, call)
		if t.Out(i) == errorType {
			fmt.Fprintf(b, " else {\n\t\tr%d = ret.Error(%d)\n\t}\n", i, i)
		} else {
			fmt.Fprintf(b, " else if ret.Get(%d) != nil {\n\t\tr%d = ret.Get(%d).(%s)\n\t}\n", i, i, i, ot)
		}
	}
	fmt.Fprintf(b, "\treturn %s\n}\n", strings.Join(outs, ", "))
}
