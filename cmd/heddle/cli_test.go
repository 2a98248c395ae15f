package main

// These tests drive what every command shares: exit statuses and the
// messages of bad input, version, completion, and the respelling of the
// single-dash long flags of the binary's first command line.

import (
	"bytes"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Bad input exits 2 with a message naming what was wrong and the usage
// line; help exits 0 on stdout.
func TestExitStatuses(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr []string
	}{
		{args: []string{"wokflow"}, code: 2, stderr: []string{`heddle: unknown command "wokflow"; did you mean workflow?`, "Usage:\n  heddle <command> [flags]", "Available Commands:", "  workflow    start, execute,"}},
		{args: []string{"help", "frob"}, code: 2, stderr: []string{`heddle help: unknown command "frob"`}},
		{args: []string{"help", "workflow", "frob"}, code: 2, stderr: []string{`unknown command "workflow frob"`}},
		{args: []string{"cluster", "status", "extra"}, code: 2, stderr: []string{`heddle cluster status: unexpected argument "extra"`, "Usage: heddle cluster status [flags]"}},
		{args: []string{"cluster", "status", "-o", "xml"}, code: 2, stderr: []string{`invalid argument "xml" for "-o, --output" flag: want table, json or jsonl`}},
		{args: []string{"cluster", "up", "--nodes", "three"}, code: 2, stderr: []string{`invalid argument "three" for "--nodes" flag`}},
		{args: []string{"workflow", "list", "--limit"}, code: 2, stderr: []string{"flag needs an argument: --limit"}},
		{args: []string{"workflow", "help"}, code: 0, stdout: []string{"Available Commands:", "query"}},
		{args: []string{"completion"}, code: 2, stderr: []string{"heddle completion: missing command", "bash"}},
		{args: []string{"completion", "tcsh"}, code: 2, stderr: []string{`unknown command "tcsh"`}},
		{args: []string{"version", "extra"}, code: 2, stderr: []string{`unexpected argument "extra"`}},
		{args: []string{"-h"}, code: 0, stdout: []string{"Available Commands:"}},
		{args: []string{"-help"}, code: 0, stdout: []string{"Available Commands:"}},
		{args: []string{"workflow", "start", "-h"}, code: 0, stdout: []string{"-t, --task-queue queue"}},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code {
			t.Errorf("heddle %q: exit %d, want %d; stderr %q", tc.args, code, tc.code, stderr.String())
		}
		wantContains(t, "stdout of heddle "+strings.Join(tc.args, " "), stdout.String(), tc.stdout...)
		wantContains(t, "stderr of heddle "+strings.Join(tc.args, " "), stderr.String(), tc.stderr...)
		if tc.code != 0 && stdout.Len() > 0 {
			t.Errorf("heddle %q printed on stdout: %q", tc.args, stdout.String())
		}
	}
}

func TestVersion(t *testing.T) {
	var text, flagText, js bytes.Buffer
	if code := run([]string{"version"}, &text, &text); code != 0 {
		t.Fatalf("heddle version: exit %d: %s", code, text.String())
	}
	if code := run([]string{"--version"}, &flagText, &flagText); code != 0 || flagText.String() != text.String() {
		t.Errorf("heddle --version: exit %d, and it differs from heddle version:\n%s\n%s", code, flagText.String(), text.String())
	}
	if code := run([]string{"version", "-o", "json"}, &js, &js); code != 0 {
		t.Fatalf("heddle version -o json: exit %d: %s", code, js.String())
	}
	var d versionDoc
	wfDecodeOne(t, js.String(), &d)
	if d.Version == "" || d.GoVersion != runtime.Version() || d.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("version -o json = %+v", d)
	}
	wantContains(t, "heddle version", text.String(), "heddle "+d.Version+"\n", runtime.Version())

	for _, tc := range []struct {
		d    versionDoc
		want string
	}{
		{versionDoc{Version: unknownVersion, GoVersion: "go1.26.8", Platform: "linux/amd64"},
			"heddle (devel)\n  commit  unknown\n  go      go1.26.8 linux/amd64\n"},
		{versionDoc{Version: "v1.2.3", Commit: "0123abc", CommitTime: "2025-03-01T12:00:00Z", Modified: true, GoVersion: "go1.26.8", Platform: "darwin/arm64"},
			"heddle v1.2.3\n  commit  0123abc (2025-03-01T12:00:00Z), modified\n  go      go1.26.8 darwin/arm64\n"},
	} {
		if got := versionText(tc.d); got != tc.want {
			t.Errorf("versionText(%+v) =\n%s\nwant\n%s", tc.d, got, tc.want)
		}
	}
	b, _ := json.Marshal(versionDoc{Version: unknownVersion, GoVersion: "go1.26.8", Platform: "linux/amd64"})
	if string(b) != `{"version":"(devel)","go_version":"go1.26.8","platform":"linux/amd64"}` {
		t.Errorf("an unknown build's version JSON is %s", b)
	}
}

func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{
		"bash":       "# bash completion V2 for heddle",
		"zsh":        "#compdef heddle",
		"fish":       "# fish completion for heddle",
		"powershell": "# powershell completion for heddle",
	} {
		var out, errb bytes.Buffer
		if code := run([]string{"completion", shell}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), want) {
			t.Errorf("heddle completion %s: exit %d, stderr %q, script starts %.60q", shell, code, errb.String(), out.String())
		}
	}
	// What a shell asks the binary when the user presses tab.
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "workflow", "s"}, []string{"start", "stack", "signal"}},
		{[]string{"__complete", "workflow", "list", "--status", "C"}, []string{"Completed", "ContinuedAsNew", "Canceled", "Closed"}},
		{[]string{"__complete", "workflow", "list", "-o", ""}, []string{"table", "json", "jsonl"}},
		{[]string{"__complete", "help", "clu"}, []string{"cluster"}},
	} {
		var out bytes.Buffer
		run(tc.args, &out, &bytes.Buffer{})
		var got []string
		for _, line := range strings.Split(out.String(), "\n") {
			if line != "" && !strings.HasPrefix(line, ":") {
				got = append(got, strings.SplitN(line, "\t", 2)[0])
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("heddle %q offers %q, want %q", tc.args, got, tc.want)
		}
	}
}

// The long flags the binary took with one dash keep working.
func TestRespellLegacyFlags(t *testing.T) {
	root := newRootCommand(&bytes.Buffer{}, &bytes.Buffer{})
	for _, tc := range []struct{ in, want string }{
		{"server -id n1 -dir d -bootstrap -v", "server --id n1 --dir d --bootstrap -v"},
		{"server -http-addr=127.0.0.1:1 -verbose", "server --http-addr=127.0.0.1:1 --verbose"},
		{"bench -workload seq3 -n 5 -json out.json", "bench --workload seq3 --n 5 --json out.json"},
		{"workflow describe x -json", "workflow describe x --json"},
		{"workflow describe -addr a -json x", "workflow describe --addr a --json x"},
		// Values and what follows "--" stay as they are, as do short flags.
		{"workflow signal x go --input -json", "workflow signal x go --input -json"},
		{"workflow signal x go -w -json", "workflow signal x go -w -json"},
		{"workflow describe -- -json", "workflow describe -- -json"},
		{"workflow list -o json -t q", "workflow list -o json -t q"},
		{"workflow list -ojson -status Queued", "workflow list -ojson --status Queued"},
		// A word that names no flag of the command is pflag's to refuse.
		{"demo -bogus", "demo -bogus"},
		{"chaos worker -addr a -name n -dir d", "chaos worker --addr a --name n --dir d"},
	} {
		got := strings.Join(respellLegacyFlags(root, strings.Fields(tc.in)), " ")
		if got != tc.want {
			t.Errorf("respell %q = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The defaults stay clear of Temporal's ports (7233 frontend, 8233 UI),
// which a developer may have a dev server on.
func TestDefaultPorts(t *testing.T) {
	for _, a := range []string{defaultAddr, defaultHTTPAddr, defaultRaftAddr} {
		if strings.HasSuffix(a, ":7233") || strings.HasSuffix(a, ":8233") {
			t.Errorf("default address %s is Temporal's", a)
		}
	}
	if defaultHTTPAddr != "127.0.0.1:7280" || defaultRaftAddr != "127.0.0.1:7281" || defaultHTTPPort != 7280 {
		t.Errorf("defaults %s, %s, %d; the docs say 7280 and 7281", defaultHTTPAddr, defaultRaftAddr, defaultHTTPPort)
	}
}

// Respelling never panics (pflag's ShorthandLookup does on a long name),
// keeps every word, and changes a word only by doubling its dash.
func FuzzRespellLegacyFlags(f *testing.F) {
	for _, seed := range []string{"server -id n1 -v", "workflow list -ojson -status", "bench -n", "workflow describe -- -json", "-", "--", "-=", "workflow -w -r x"} {
		f.Add(seed)
	}
	root := newRootCommand(&bytes.Buffer{}, &bytes.Buffer{})
	f.Fuzz(func(t *testing.T, line string) {
		in := strings.Fields(line)
		out := respellLegacyFlags(root, in)
		if len(out) != len(in) {
			t.Fatalf("%q became %q", in, out)
		}
		for i := range in {
			if out[i] != in[i] && out[i] != "-"+in[i] {
				t.Fatalf("word %d %q became %q", i, in[i], out[i])
			}
		}
	})
}
