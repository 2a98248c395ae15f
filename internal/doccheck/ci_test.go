package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestCIRunsTheREADMETests: .ci/run runs the README's test command as the
// README writes it, and then, in full, every test that -short skips or
// cuts short (its SLOW_TESTS), so that the quick start stays fast without
// CI losing a test. A test asks testing.Short() itself, or through a
// helper of its package's tests (chaos's runShort).
func TestCIRunsTheREADMETests(t *testing.T) {
	root := repoRoot(t)
	script, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(script), "\n")
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.TrimSpace(l) == quickStart[1] }) {
		t.Errorf(".ci/run has no line %q: it must run the README's test command as the README writes it", quickStart[1])
	}
	slow, problems := ciSlowTests(lines)
	for _, p := range problems {
		t.Error(p)
	}
	short := shortTests(t, root)
	if len(short) == 0 {
		t.Fatal("no test asks testing.Short(): the search is broken")
	}
	var pkgs []string
	for pkg := range short {
		pkgs = append(pkgs, pkg)
	}
	sort.Strings(pkgs)
	for _, pkg := range pkgs {
		re := slow[pkg]
		for _, name := range short[pkg] {
			if re == nil || !re.MatchString(name) {
				t.Errorf("%s %s asks testing.Short(), but .ci/run's SLOW_TESTS does not run it in full: add it to the entry of %s", pkg, name, pkg)
			}
		}
	}
}

// ciSlowTests reads .ci/run's SLOW_TESTS array: entries "./dir REGEXP",
// the package and the -run pattern of its tests that -short leaves out.
func ciSlowTests(lines []string) (map[string]*regexp.Regexp, []string) {
	slow := map[string]*regexp.Regexp{}
	var problems []string
	in := false
	for _, l := range lines {
		l = strings.TrimSpace(l)
		switch {
		case l == "SLOW_TESTS=(":
			in = true
		case in && l == ")":
			return slow, problems
		case in && l != "" && !strings.HasPrefix(l, "#"):
			pkg, pattern, ok := strings.Cut(strings.Trim(l, `"`), " ")
			re, err := regexp.Compile(pattern)
			// Anchored: the script runs the union of the patterns over all
			// their packages, where "." would run every test of each.
			if !ok || err != nil || !strings.HasPrefix(pkg, "./") || !strings.HasPrefix(pattern, "^") || !strings.HasSuffix(pattern, "$") {
				problems = append(problems, "SLOW_TESTS entry "+l+` is not "./dir ^REGEXP$"`)
				continue
			}
			slow[strings.TrimPrefix(pkg, "./")] = re
		}
	}
	return slow, append(problems, ".ci/run has no SLOW_TESTS=( … ) array")
}

// shortTests returns, by package directory, the Test functions that ask
// testing.Short(), directly or through a function of their package's
// tests that asks it.
func shortTests(t *testing.T, root string) map[string][]string {
	t.Helper()
	fsys := os.DirFS(root)
	type pkgFuncs struct {
		askers map[string]bool
		tests  map[string]*ast.FuncDecl
	}
	pkgs := map[string]*pkgFuncs{}
	fset := token.NewFileSet()
	for _, name := range repoFiles(t, fsys, ".go") {
		if !strings.HasSuffix(name, "_test.go") || strings.Contains(name, "/testdata/") {
			continue
		}
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		dir := path.Dir(name)
		p := pkgs[dir]
		if p == nil {
			p = &pkgFuncs{askers: map[string]bool{}, tests: map[string]*ast.FuncDecl{}}
			pkgs[dir] = p
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if callsSel(fn.Body, "testing", "Short") {
				p.askers[fn.Name.Name] = true
			}
			if fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				p.tests[fn.Name.Name] = fn
			}
		}
	}
	out := map[string][]string{}
	for dir, p := range pkgs {
		for name, fn := range p.tests {
			if p.askers[name] || callsAny(fn.Body, p.askers) {
				out[dir] = append(out[dir], name)
			}
		}
		sort.Strings(out[dir])
	}
	return out
}

// callsSel reports whether body calls x.sel().
func callsSel(body ast.Node, x, sel string) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if s, ok := c.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == sel {
				if id, ok := s.X.(*ast.Ident); ok && id.Name == x {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

// callsAny reports whether body calls one of the named functions.
func callsAny(body ast.Node, names map[string]bool) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if id, ok := c.Fun.(*ast.Ident); ok && names[id.Name] {
				found = true
			}
		}
		return !found
	})
	return found
}
