package bench

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
)

// Plot dimensions in SVG user units (pixels when opened as is).
const (
	plotWidthPx  = 720
	panelHeight  = 220
	marginLeftPx = 70
	marginTopPx  = 90
	panelGapPx   = 70
	histBins     = 30
)

// WriteSVG draws the results one under another, each with its throughput
// over time (completions per second in each bucket) and a histogram of its
// latencies, written by hand so that no plotting library is needed.
func WriteSVG(w io.Writer, results []*Result) error {
	blockPx := marginTopPx + 2*panelHeight + 2*panelGapPx
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n",
		plotWidthPx+marginLeftPx+30, blockPx*len(results)+20)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	for i, r := range results {
		drawResult(&b, r, i*blockPx)
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s)) // a bytes.Buffer takes every write
	return b.String()
}

func text(b *bytes.Buffer, x, y float64, anchor, style, s string) {
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s" %s>%s</text>`+"\n", x, y, anchor, style, esc(s))
}

func drawResult(b *bytes.Buffer, r *Result, top int) {
	y0 := float64(top)
	text(b, 10, y0+22, "start", `font-size="16" font-weight="bold"`,
		fmt.Sprintf("heddle bench %s (%s), n=%d", r.Workload, r.Mode, r.N))
	text(b, 10, y0+42, "start", "", fmt.Sprintf("%s: %.4g   ceiling: %.4g   ratio: %.3f   (%s)",
		r.Figure, r.Value, r.Ceiling, r.RatioToCeiling, r.CeilingBasis))
	text(b, 10, y0+58, "start", `fill="#555"`, fmt.Sprintf("%d cores, %s, commit %.12s, peak RSS %.0f MiB",
		r.Cores, r.GoVersion, r.Commit, float64(r.PeakRSSBytes)/(1<<20)))

	// Throughput over time.
	py := y0 + marginTopPx
	var xs, ys []float64
	for i, v := range r.Timeline {
		xs = append(xs, (float64(i)+0.5)*r.BucketS)
		ys = append(ys, v)
	}
	xMax := float64(len(r.Timeline)) * r.BucketS
	axes(b, py, "completions per second over time", "time (s)", xMax, maxOf(ys))
	if len(xs) == 0 {
		text(b, marginLeftPx+plotWidthPx/2, py+panelHeight/2, "middle", `fill="#888"`, "no timeline for this workload")
	} else {
		var pts bytes.Buffer
		for i := range xs {
			x, y := scale(xs[i], xMax, ys[i], maxOf(ys), py)
			fmt.Fprintf(&pts, "%.1f,%.1f ", x, y)
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="%s"/>`+"\n", pts.String())
	}

	// Latency histogram.
	hy := py + panelHeight + panelGapPx
	lat := r.Samples
	lo, hi := 0.0, 1.0
	if len(lat) > 0 {
		lo, hi = ms(lat[0]), ms(lat[len(lat)-1])
	}
	if hi <= lo {
		hi = lo + 1
	}
	counts := make([]float64, histBins)
	width := (hi - lo) / histBins
	for _, d := range lat {
		counts[min(int((ms(d)-lo)/width), histBins-1)]++
	}
	axesFrom(b, hy, "latency histogram: "+r.LatencyOf, "latency (ms)", lo, hi, maxOf(counts))
	barPx := float64(plotWidthPx) / histBins
	cMax := maxOf(counts)
	for i, c := range counts {
		if c == 0 {
			continue
		}
		h := c / cMax * panelHeight
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#ff7f0e"><title>%.2f–%.2f ms: %.0f</title></rect>`+"\n",
			marginLeftPx+float64(i)*barPx, hy+panelHeight-h, barPx-1, h, lo+float64(i)*width, lo+float64(i+1)*width, c)
	}
	for _, q := range []struct {
		name string
		v    float64
	}{{"p50", r.LatencyMS.P50}, {"p99", r.LatencyMS.P99}} {
		x := marginLeftPx + (q.v-lo)/(hi-lo)*plotWidthPx
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#d62728" stroke-dasharray="4 3"/>`+"\n", x, hy, x, hy+panelHeight)
		// A marker in the right half gets its label on its left, so a p99
		// at the axis's end is not cut off by the image's edge.
		lx, anchor := x+3, "start"
		if x > marginLeftPx+plotWidthPx/2 {
			lx, anchor = x-3, "end"
		}
		text(b, lx, hy+12, anchor, `fill="#d62728"`, fmt.Sprintf("%s %.2f ms", q.name, q.v))
	}
}

func maxOf(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, x)
	}
	if m == 0 {
		return 1
	}
	return m
}

func scale(x, xMax, y, yMax, top float64) (float64, float64) {
	if xMax <= 0 {
		xMax = 1
	}
	return marginLeftPx + x/xMax*plotWidthPx, top + panelHeight - y/yMax*panelHeight
}

func axes(b *bytes.Buffer, top float64, title, xLabel string, xMax, yMax float64) {
	axesFrom(b, top, title, xLabel, 0, xMax, yMax)
}

// axesFrom draws a panel's frame, title, axis labels and five ticks on each
// axis, x running from xLo to xHi and y from 0 to yMax.
func axesFrom(b *bytes.Buffer, top float64, title, xLabel string, xLo, xHi, yMax float64) {
	fmt.Fprintf(b, `<rect x="%d" y="%.1f" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", marginLeftPx, top, plotWidthPx, panelHeight)
	text(b, marginLeftPx, top-8, "start", `font-weight="bold"`, title)
	text(b, marginLeftPx+plotWidthPx/2, top+panelHeight+32, "middle", "", xLabel)
	for i := 0; i <= 4; i++ {
		f := float64(i) / 4
		x := marginLeftPx + f*plotWidthPx
		text(b, x, top+panelHeight+15, "middle", `fill="#555"`, fmt.Sprintf("%.3g", xLo+f*(xHi-xLo)))
		y := top + panelHeight - f*panelHeight
		text(b, marginLeftPx-6, y+4, "end", `fill="#555"`, fmt.Sprintf("%.3g", f*yMax))
	}
}
