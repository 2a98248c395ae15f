// Package metricstest reads metric values back, from a registry or from a /metrics exposition, for tests.
package metricstest

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is a set of scraped metric families by name.
type Families map[string]*dto.MetricFamily

// Gather reads g's families.
func Gather(g prometheus.Gatherer) (Families, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, err
	}
	out := Families{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out, nil
}

// Parse reads a Prometheus text exposition with the Prometheus text parser:
// an exposition that does not parse is an error.
func Parse(r io.Reader) (Families, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	return Families(mfs), nil
}

// Scrape GETs url (a /metrics endpoint) as a Prometheus server would, in
// the text format, and parses the answer.
func Scrape(c *http.Client, url string) (Families, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }() // read to the end below
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		return nil, fmt.Errorf("GET %s: Content-Type %q, want the text format", url, ct)
	}
	return Parse(resp.Body)
}

// Value returns the value of the series of family name whose labels
// include labels (alternating names and values), summed over the series
// that match: a counter's or gauge's value, a histogram's sample count.
// A family or series that is absent counts 0.
func (fs Families) Value(name string, labels ...string) float64 {
	mf := fs[name]
	if mf == nil {
		return 0
	}
	total := 0.0
	for _, m := range mf.GetMetric() {
		if !matches(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		case m.Histogram != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		case m.Untyped != nil:
			total += m.GetUntyped().GetValue()
		}
	}
	return total
}

// Series returns how many series of family name include labels.
func (fs Families) Series(name string, labels ...string) int {
	n := 0
	if mf := fs[name]; mf != nil {
		for _, m := range mf.GetMetric() {
			if matches(m, labels) {
				n++
			}
		}
	}
	return n
}

// LabelValues returns the values label takes in family name's series.
func (fs Families) LabelValues(name, label string) []string {
	var out []string
	if mf := fs[name]; mf != nil {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label {
					out = append(out, lp.GetValue())
				}
			}
		}
	}
	return out
}

func matches(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Sum returns the sum of the samples of histogram name over the series
// that include labels.
func (fs Families) Sum(name string, labels ...string) float64 {
	total := 0.0
	if mf := fs[name]; mf != nil {
		for _, m := range mf.GetMetric() {
			if matches(m, labels) && m.Histogram != nil {
				total += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return total
}
