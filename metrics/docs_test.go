package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The documentation lives in docs/ at the module's root.
const (
	dashboardPath = "../docs/grafana/heddle.json"
	docPath       = "../docs/observability.md"
)

// dashboard is the part of a Grafana dashboard's JSON the test reads.
type dashboard struct {
	Title      string      `json:"title"`
	UID        string      `json:"uid"`
	Panels     []dashPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

type dashPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashPanel `json:"panels"` // a collapsed row's
}

var metricRef = regexp.MustCompile(`heddle_[a-z_]+`)

// Every metric the dashboard queries is one New registers (a histogram's
// _bucket, _sum and _count series included), and every metric New
// registers has a panel.
func TestDashboardQueriesRegisteredMetrics(t *testing.T) {
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s is not a dashboard: %v", dashboardPath, err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("%s: title %q, uid %q, %d panels", dashboardPath, d.Title, d.UID, len(d.Panels))
	}
	registered := registeredNames(t)
	types := map[string]string{}
	for _, f := range Families() {
		types[f.Name] = f.Type
	}
	used := map[string]bool{}
	check := func(where, expr string) {
		for _, ref := range metricRef.FindAllString(expr, -1) {
			name := ref
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(ref, suffix); ok && types[base] == "histogram" {
					name = base
				}
			}
			if !registered[name] {
				t.Errorf("%s queries %s, which heddle does not register", where, ref)
			}
			used[name] = true
		}
	}
	ids := map[int]bool{}
	var walk func([]dashPanel)
	walk = func(ps []dashPanel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel id %d is used twice", p.ID)
			}
			ids[p.ID] = true
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
				t.Errorf("panel %q has no query on the dashboard's data source", p.Title)
			}
			for _, tg := range p.Targets {
				if tg.Expr == "" {
					t.Errorf("panel %q has an empty query", p.Title)
				}
				check("panel "+p.Title, tg.Expr)
			}
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		check("variable "+v.Name, v.Definition)
	}
	for name := range registered {
		if strings.HasPrefix(name, "heddle_") && !used[name] {
			t.Errorf("%s has no panel on the dashboard", name)
		}
	}
}

var docRow = regexp.MustCompile("^\\| `(heddle_[a-z_]+)` \\| (counter|gauge|histogram) \\| ([^|]+) \\| (.+) \\|$")

// docs/observability.md lists exactly the families New registers, with
// their types and labels.
func TestDocsListEveryMetric(t *testing.T) {
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		m := docRow.FindStringSubmatch(line)
		if m == nil {
			if strings.HasPrefix(line, "| `heddle_") {
				t.Errorf("a row of the metric table does not read as name, type, labels, meaning: %s", line)
			}
			continue
		}
		labels := strings.TrimSpace(m[3])
		if labels == "—" {
			labels = ""
		}
		listed[m[1]] = m[2] + " " + strings.NewReplacer("`", "", " ", "").Replace(labels)
	}
	for _, f := range Families() {
		want := f.Type + " " + strings.Join(f.Labels, ",")
		switch got, ok := listed[f.Name]; {
		case !ok:
			t.Errorf("%s is not in %s", f.Name, docPath)
		case got != want:
			t.Errorf("%s is listed as %q, registered as %q", f.Name, got, want)
		}
		delete(listed, f.Name)
	}
	for name := range listed {
		t.Errorf("%s lists %s, which heddle does not register", docPath, name)
	}
}
