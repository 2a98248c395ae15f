package sdkhook

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const modulePath = "github.com/heddlewf/heddle/"

// hookSetters names the package whose init function sets each hook.
var hookSetters = map[string]string{
	"NewEntry":             "sdk/workflow",
	"Query":                "sdk/workflow",
	"ValidateUpdate":       "sdk/workflow",
	"SignalsRead":          "sdk/workflow",
	"WithTestEnv":          "sdk/workflow",
	"EncodeFailure":        "sdk/temporal",
	"DecodeFailure":        "sdk/temporal",
	"NewTimeoutError":      "sdk/temporal",
	"NewPanicError":        "sdk/temporal",
	"NewTerminatedError":   "sdk/temporal",
	"FailureToStored":      "sdk/temporal",
	"FailureFromStored":    "sdk/temporal",
	"ActivityOutboundRoot": "sdk/activity",
	"InterceptWorkflow":    "sdk/interceptor",
	"InterceptActivity":    "sdk/interceptor",
}

// unimportedReaders are the packages that read a hook without importing its
// setter, each of which checks that the hook is set and reports an error
// when it is not: sdk/workflow cannot import sdk/interceptor, which imports
// it, and only a worker with interceptors (whose package does import
// sdk/interceptor) needs InterceptWorkflow.
var unimportedReaders = map[string][]string{
	"InterceptWorkflow": {"sdk/workflow"},
}

// A hook is set before anything reads it: every package that reads a hook
// imports (directly or not) the package whose init sets it, so Go
// initializes the setter first, and a missing hook cannot be a nil func
// called at run time. The test also checks that the table above names
// every hook of this package, and that each setter sets its hooks.
func TestHooksAreSetBeforeTheyAreRead(t *testing.T) {
	if got := hookVars(t); !slices.Equal(got, sortedKeys(hookSetters)) {
		t.Fatalf("the hooks of package sdkhook are %q; hookSetters names %q", got, sortedKeys(hookSetters))
	}
	out, err := exec.Command("go", "list", "-json=ImportPath,Dir,GoFiles,Imports,Deps", modulePath+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	self := modulePath + "internal/sdkhook"
	set := map[string]bool{} // hook → its setter assigns it
	readers := 0
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath, Dir string
			GoFiles         []string
			Imports, Deps   []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(p.Imports, self) {
			continue
		}
		rel := strings.TrimPrefix(p.ImportPath, modulePath)
		for _, u := range hookUses(t, p.Dir, p.GoFiles) {
			setter := hookSetters[u.hook]
			if u.assigned {
				if rel != setter {
					t.Errorf("%s: package %s sets hook %s, which %s sets", u.pos, rel, u.hook, setter)
				}
				set[u.hook] = true
				continue
			}
			readers++
			if rel == setter || slices.Contains(p.Deps, modulePath+setter) || slices.Contains(unimportedReaders[u.hook], rel) {
				continue
			}
			t.Errorf("%s: package %s reads hook %s but does not import %s, which sets it", u.pos, rel, u.hook, setter)
		}
	}
	for hook, setter := range hookSetters {
		if !set[hook] {
			t.Errorf("package %s does not set hook %s", setter, hook)
		}
	}
	if readers == 0 {
		t.Fatal("no package reads a hook: the scan found nothing")
	}
}

// hookVars returns the hooks of this package: its package-level variables
// of a func type or of type any, sorted.
func hookVars(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				_, isFunc := vs.Type.(*ast.FuncType)
				id, isIdent := vs.Type.(*ast.Ident)
				if isFunc || isIdent && id.Name == "any" {
					for _, n := range vs.Names {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	slices.Sort(names)
	return names
}

type hookUse struct {
	hook     string
	pos      token.Position
	assigned bool // the left side of an assignment: the hook is set
}

// hookUses returns the uses of hooks (sdkhook.X) in the files of a package.
func hookUses(t *testing.T, dir string, files []string) []hookUse {
	t.Helper()
	fset := token.NewFileSet()
	var uses []hookUse
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		lhs := map[ast.Expr]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if as, ok := n.(*ast.AssignStmt); ok {
				for _, e := range as.Lhs {
					lhs[e] = true
				}
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "sdkhook" {
				if _, hook := hookSetters[sel.Sel.Name]; hook {
					uses = append(uses, hookUse{hook: sel.Sel.Name, pos: fset.Position(sel.Pos()), assigned: lhs[sel]})
				}
			}
			return true
		})
	}
	return uses
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
