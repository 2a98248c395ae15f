package archtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const mod = "github.com/heddlewf/heddle"

// goList runs go list with format f over the module package pkg (a path
// relative to the module root) and returns its lines.
func goList(t *testing.T, f, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", f, mod+"/"+pkg)
	cmd.Dir = root(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pkg, err, stderr.String())
	}
	return strings.Fields(string(out))
}

// imports returns pkg's direct imports; deps everything it links.
func imports(t *testing.T, pkg string) []string {
	return goList(t, `{{join .Imports " "}}`, pkg)
}

func deps(t *testing.T, pkg string) []string {
	return goList(t, `{{join .Deps " "}}`, pkg)
}

// root is the module's root directory.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", dir, err)
	}
	return dir
}

// forbid fails for every path in got that starts with one of the
// prefixes; what says how got was found ("imports", "links").
func forbid(t *testing.T, pkg, what string, got []string, prefixes ...string) {
	t.Helper()
	for _, p := range got {
		for _, bad := range prefixes {
			if p == bad || strings.HasPrefix(p, bad+"/") {
				t.Errorf("%s %s %s, which its place in the layout forbids (docs/architecture.md)", pkg, what, p)
			}
		}
	}
}

// TestContractImportsNoStorage: engine is the contract. It imports no
// storage and links neither Badger nor Prometheus, so that everything that
// only speaks the contract (the SDK, replay, the HTTP client) links no
// database.
func TestContractImportsNoStorage(t *testing.T) {
	forbid(t, "engine", "imports", imports(t, "engine"), mod+"/storage", mod+"/engine/machine", mod+"/engine/embedded")
	forbid(t, "engine", "links", deps(t, "engine"), mod+"/storage", "github.com/dgraph-io/badger", "github.com/prometheus")
}

// TestMachineIsPure: engine/machine is the pure state machine. It imports
// no network, no clock and no runtime, and links no Raft or metrics; its
// code reads no wall clock, draws no randomness and starts no goroutine.
func TestMachineIsPure(t *testing.T) {
	forbid(t, "engine/machine", "imports", imports(t, "engine/machine"),
		"net", "net/http", "math/rand", "crypto/rand", mod+"/engine/clock", mod+"/engine/embedded", mod+"/engine/httpapi", mod+"/metrics")
	forbid(t, "engine/machine", "links", deps(t, "engine/machine"),
		"github.com/hashicorp/raft", "github.com/prometheus", mod+"/engine/clock", mod+"/raftfsm")
	files, err := filepath.Glob(filepath.Join(root(t), "engine", "machine", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	impure := regexp.MustCompile(`\btime\.(Now|Since|Until|Sleep|After|Tick|NewTimer|NewTicker)\(|^\s*go\s+\S`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if code, _, _ := strings.Cut(line, "//"); impure.MatchString(code) {
				t.Errorf("%s:%d reads the clock or starts a goroutine, which Apply's package must not: %s",
					filepath.Base(f), i+1, strings.TrimSpace(line))
			}
		}
	}
}

// TestSDKLinksNoBadger: the workflow authors' packages and replay speak
// only the contract and link no database.
func TestSDKLinksNoBadger(t *testing.T) {
	for _, p := range []string{"sdk/workflow", "sdk/activity", "sdk/temporal", "replay"} {
		forbid(t, p, "links", deps(t, p), "github.com/dgraph-io/badger", mod+"/storage")
	}
}

// TestHTTPAPIImportsNoSDK: engine/httpapi is transport over the contract;
// the SDK builds on it, never the other way.
func TestHTTPAPIImportsNoSDK(t *testing.T) {
	forbid(t, "engine/httpapi", "links", deps(t, "engine/httpapi"), mod+"/sdk")
}

// TestNoRegistryInit: no table of the contract, the machine, the runtime,
// storage or replay is filled by an init function: each is one literal in
// its owner's file, so that reading the file shows the whole table.
func TestNoRegistryInit(t *testing.T) {
	noInit(t, "engine", "engine/machine", "engine/embedded", "engine/httpapi", "storage", "replay")
}

// noInit fails for every init function in the non-test files of dirs (a
// dir that does not exist has none).
func noInit(t *testing.T, dirs ...string) {
	t.Helper()
	initFunc := regexp.MustCompile(`(?m)^func init\(\)`)
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(root(t), dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if initFunc.Match(b) {
				t.Errorf("%s/%s has an init function", dir, filepath.Base(f))
			}
		}
	}
}
