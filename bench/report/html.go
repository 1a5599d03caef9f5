package report

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"html"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/render"

	"github.com/locksmith-go/locksmith/bench/workload"
)

// echartsGz is Apache ECharts 5.4.3's dist/echarts.min.js (the version
// go-echarts v2.6.0 targets), gzipped, with its LICENSE and NOTICE beside it
// in assets/. It is inlined into the page so that the report renders offline
// (go-echarts would otherwise load it from a CDN). To refresh it:
// npm pack echarts@5.4.3, then gzip -9 package/dist/echarts.min.js.
//
//go:embed assets/echarts-5.4.3.min.js.gz
var echartsGz []byte

var echartsJS = sync.OnceValues(func() (string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(echartsGz))
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(zr)
	return string(b), err
})

// WriteHTML writes the report as one self-contained HTML page: the run's
// description, the ceiling, and per workload its charts (throughput bars with
// the ceiling, latency CDFs and histograms per configuration, fairness or
// memory bars) above its table.
func WriteHTML(path string, rep *Report) error {
	page, err := HTML(rep)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// HTML renders the page.
func HTML(rep *Report) (string, error) {
	js, err := echartsJS()
	if err != nil {
		return "", fmt.Errorf("report: unpacking echarts: %w", err)
	}
	var b strings.Builder
	m := rep.Meta
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>locksmith bench</title>\n")
	b.WriteString("<style>" + pageCSS + "</style>\n<script>" + js + "</script>\n</head><body>\n")
	fmt.Fprintf(&b, "<h1>locksmith bench</h1>\n<p class=\"meta\">%s UTC · %d CPU (%s) · %s %s/%s · redis-server %s at %s (%s) · "+
		"window %s after %s warm-up · <code>%s</code></p>\n",
		m.Started.Format("2006-01-02 15:04"), m.NumCPU, esc(m.CPUModel), esc(m.GoVersion), m.GOOS, m.GOARCH,
		esc(m.RedisVersion), esc(m.ServerAddr), map[bool]string{true: "embedded", false: "external"}[m.Embedded],
		secs(m.DurationSec), secs(m.WarmupSec), esc(m.Command))
	for _, n := range m.Notes {
		fmt.Fprintf(&b, "<p class=\"note\">Note: %s</p>\n", esc(n))
	}
	tables := Tables(rep)
	b.WriteString("<nav>")
	for _, t := range tables {
		fmt.Fprintf(&b, "<a href=\"#%s\">%s</a> ", t.ID, esc(shortTitle(t.Title)))
	}
	b.WriteString("</nav>\n")
	for _, t := range tables {
		fmt.Fprintf(&b, "<section id=\"%s\"><h2>%s</h2>\n", t.ID, esc(t.Title))
		if t.Note != "" {
			fmt.Fprintf(&b, "<p class=\"note\">%s</p>\n", esc(t.Note))
		}
		for _, row := range chartsFor(rep, t.ID) {
			b.WriteString("<div class=\"charts\">\n")
			for _, c := range row {
				s := c.RenderSnippet()
				b.WriteString("<div class=\"chart\">" + s.Element + s.Script + "</div>\n")
			}
			b.WriteString("</div>\n")
		}
		writeHTMLTable(&b, t)
		b.WriteString("</section>\n")
	}
	b.WriteString("<p class=\"meta\">* estimated from the server's command statistics · ⚠ other processes used more " +
		"than the threshold during the window after reruns · ours÷lib &gt; 1 means ours is faster. " +
		"Charts: Apache ECharts via go-echarts.</p>\n</body></html>\n")
	return b.String(), nil
}

const pageCSS = `
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;background:#fff}
h1{margin:0 0 4px}
h2{margin:32px 0 6px;border-bottom:1px solid #ddd;padding-bottom:4px}
.meta{color:#555;font-size:13px}
.note{color:#444;font-size:13px;max-width:1200px}
nav a{margin-right:12px;font-size:14px}
.charts{display:flex;flex-wrap:wrap;gap:8px}
.chart{border:1px solid #eee;border-radius:4px}
.container{display:block}
table{border-collapse:collapse;font-size:12px;margin-top:10px}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:right;white-space:nowrap}
th{background:#f4f4f4}
td:first-child,th:first-child{text-align:left}
td.na{text-align:left;color:#777}
tr.ours td{background:#eef6ff}
`

func esc(s string) string { return html.EscapeString(s) }

func shortTitle(t string) string {
	if i := strings.Index(t, " — "); i > 0 {
		return t[:i]
	}
	if i := strings.Index(t, " ("); i > 0 {
		return t[:i]
	}
	return t
}

func writeHTMLTable(b *strings.Builder, t Table) {
	if len(t.Rows) == 0 {
		return
	}
	b.WriteString("<table><tr>")
	for _, h := range t.Headers {
		b.WriteString("<th>" + esc(h) + "</th>")
	}
	b.WriteString("</tr>\n")
	for _, r := range t.Rows {
		class := ""
		if strings.HasPrefix(r[0], "ours") {
			class = " class=\"ours\""
		}
		b.WriteString("<tr" + class + ">")
		if k := naIndex(r); k >= 0 {
			for _, c := range r[:k] {
				b.WriteString("<td>" + esc(c) + "</td>")
			}
			fmt.Fprintf(b, "<td class=\"na\" colspan=\"%d\">%s</td>", len(r)-k, esc(r[k]))
		} else {
			for _, c := range r {
				b.WriteString("<td>" + boldHTML(esc(c)) + "</td>")
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
}

// boldHTML turns **x** into <b>x</b>.
func boldHTML(s string) string {
	for {
		i := strings.Index(s, "**")
		if i < 0 {
			return s
		}
		j := strings.Index(s[i+2:], "**")
		if j < 0 {
			return s
		}
		s = s[:i] + "<b>" + s[i+2:i+2+j] + "</b>" + s[i+2+j+2:]
	}
}

// chartsFor returns the charts of one section, in rows: the overview
// (throughput, fairness), then one row per configuration (CDF, histogram).
func chartsFor(rep *Report, id string) [][]render.Renderer {
	recs := measured(byWorkload(rep.Records, id))
	switch id {
	case "ceiling":
		return [][]render.Renderer{ceilingCharts(rep.Ceiling)}
	case workload.W3:
		return [][]render.Renderer{heldCharts(recs)}
	}
	if len(recs) == 0 {
		return nil
	}
	ceiling := 0.0
	if id == workload.W1 || id == workload.Raw || id == workload.W5 {
		ceiling = rep.Ceiling.PairsPerSec
	}
	overview := []render.Renderer{throughputChart(id, recs, ceiling)}
	if id == workload.W2 {
		overview = append(overview, fairnessChart(recs))
	}
	rows := [][]render.Renderer{overview}
	for _, cfg := range configs(recs) {
		group := inConfig(recs, cfg)
		rows = append(rows, []render.Renderer{cdfChart(id, cfg, group), histogramChart(id, cfg, group)})
	}
	return rows
}

func measured(recs []workload.Record) []workload.Record {
	var out []workload.Record
	for _, r := range recs {
		if r.NotApplicable == "" {
			out = append(out, r)
		}
	}
	return out
}

// config labels a record's configuration within its workload.
func config(r workload.Record) string {
	switch r.Workload {
	case workload.W2:
		return fmt.Sprintf("G=%d keys=%d", r.Goroutines, r.Keys)
	case workload.W5:
		return fmt.Sprintf("keys=%d", r.Keys)
	default:
		return fmt.Sprintf("G=%d", r.Goroutines)
	}
}

func configs(recs []workload.Record) []string {
	var out []string
	for _, r := range recs {
		if c := config(r); !contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

func libraries(recs []workload.Record) []string {
	var out []string
	for _, r := range recs {
		if !contains(out, r.Library) {
			out = append(out, r.Library)
		}
	}
	return out
}

func inConfig(recs []workload.Record, cfg string) []workload.Record {
	var out []workload.Record
	for _, r := range recs {
		if config(r) == cfg {
			out = append(out, r)
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func chartInit(id string) charts.GlobalOpts {
	return charts.WithInitializationOpts(opts.Initialization{Width: "640px", Height: "380px", ChartID: id})
}

func chartTitle(title, sub string) charts.GlobalOpts {
	return charts.WithTitleOpts(opts.Title{Title: title, Subtitle: sub,
		TitleStyle: &opts.TextStyle{FontSize: 14}})
}

var legend = charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "bottom", Type: "scroll"})
var tooltipAxis = charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"})
var noAnimation = charts.WithAnimation(false)

func chartID(parts ...string) string {
	return strings.NewReplacer(" ", "_", "=", "", ":", "_", "-", "_").Replace("c_" + strings.Join(parts, "_"))
}

// throughputChart: ops/s per configuration, one bar series per library, the
// pair ceiling as a line where it applies.
func throughputChart(id string, recs []workload.Record, ceiling float64) render.Renderer {
	bar := charts.NewBar()
	unit := map[string]string{workload.W1: "pairs/s", workload.Raw: "pairs/s", workload.W5: "pairs/s",
		workload.W2: "acquisitions/s", workload.W4: "hand-offs/s"}[id]
	yAxis := opts.YAxis{Name: unit, Type: "value"}
	if id == workload.W4 {
		yAxis.Type = "log" // polling peers hand off 100× slower than waiters woken by a message
	}
	if ceiling > 0 && yAxis.Type == "value" {
		// echarts sizes the axis to the bars only: make room for the ceiling line.
		top := ceiling
		for _, r := range recs {
			top = max(top, r.OpsPerSec)
		}
		yAxis.Max = niceCeil(top * 1.08)
	}
	bar.SetGlobalOptions(chartInit(chartID(id, "throughput")), chartTitle("Throughput", unit), legend, tooltipAxis,
		noAnimation, charts.WithYAxisOpts(yAxis))
	cfgs := configs(recs)
	bar.SetXAxis(cfgs)
	for i, lib := range libraries(recs) {
		data := make([]opts.BarData, len(cfgs))
		for j, cfg := range cfgs {
			data[j] = opts.BarData{Value: 0}
			for _, r := range inConfig(recs, cfg) {
				if r.Library == lib {
					data[j] = opts.BarData{Value: round(r.OpsPerSec)}
				}
			}
		}
		var sopts []charts.SeriesOpts
		if i == 0 && ceiling > 0 {
			sopts = append(sopts, charts.WithMarkLineNameYAxisItemOpts(opts.MarkLineNameYAxisItem{
				Name: "server pair ceiling", YAxis: round(ceiling)}),
				charts.WithMarkLineStyleOpts(opts.MarkLineStyle{Label: &opts.Label{Show: opts.Bool(true),
					Formatter: "ceiling {c}"}}))
		}
		bar.AddSeries(lib, data, sopts...)
	}
	return bar
}

// cdfChart: share of operations completed within a latency (x log-scaled).
func cdfChart(id, cfg string, recs []workload.Record) render.Renderer {
	line := charts.NewLine()
	line.SetGlobalOptions(chartInit(chartID(id, cfg, "cdf")), chartTitle("Latency CDF, "+cfg, latencyWhat(id)),
		legend, noAnimation,
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "log", Name: "µs", NameLocation: "end"}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "% completed", Min: 0, Max: 100}))
	for _, r := range recs {
		data := make([]opts.LineData, 0, len(r.LatencyCDF))
		for _, p := range r.LatencyCDF {
			if p.Us > 0 { // a log axis has no place for 0
				data = append(data, opts.LineData{Value: []any{roundTo(p.Us, 1), p.Pct}})
			}
		}
		line.AddSeries(r.Library, data, charts.WithLineChartOpts(opts.LineChart{Step: "end", ShowSymbol: opts.Bool(false)}))
	}
	return line
}

// histogramChart: operations per latency bucket (four buckets per octave), as
// a share of each library's operations so that libraries of different
// throughput compare.
func histogramChart(id, cfg string, recs []workload.Record) render.Renderer {
	bar := charts.NewBar()
	bar.SetGlobalOptions(chartInit(chartID(id, cfg, "hist")), chartTitle("Latency histogram, "+cfg,
		"share of operations per bucket (upper bound), "+latencyWhat(id)), legend, tooltipAxis, noAnimation,
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "% of ops"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: "≤",
			AxisLabel: &opts.AxisLabel{Rotate: 45, Interval: "3"}})) // one label per octave
	lo, hi := 1<<30, -1
	for _, r := range recs {
		for _, b := range r.LatencyHistogram {
			k := binIndex(b.UpToUs)
			lo, hi = min(lo, k), max(hi, k)
		}
	}
	if hi < 0 {
		return bar
	}
	labels := make([]string, 0, hi-lo+1)
	for k := lo; k <= hi; k++ {
		labels = append(labels, us(binUpper(k)))
	}
	bar.SetXAxis(labels)
	for _, r := range recs {
		data := make([]opts.BarData, hi-lo+1)
		for i := range data {
			data[i] = opts.BarData{Value: 0}
		}
		var total int64
		for _, b := range r.LatencyHistogram {
			total += b.Count
		}
		for _, b := range r.LatencyHistogram {
			if total > 0 {
				data[binIndex(b.UpToUs)-lo] = opts.BarData{Value: roundTo(100*float64(b.Count)/float64(total), 3)}
			}
		}
		bar.AddSeries(r.Library, data, charts.WithBarChartOpts(opts.BarChart{BarGap: "0%"}))
	}
	return bar
}

func latencyWhat(id string) string {
	switch id {
	case workload.W2:
		return "wait until held"
	case workload.W4:
		return "unlock to next holder"
	default:
		return "lock+unlock pair"
	}
}

// fairnessChart: W2's Jain index and re-acquisition share per library.
func fairnessChart(recs []workload.Record) render.Renderer {
	bar := charts.NewBar()
	bar.SetGlobalOptions(chartInit(chartID("w2", "fairness")), chartTitle("Fairness",
		"Jain index ×100 (100 = even) and re-acquisitions by the previous holder (%)"), legend, tooltipAxis,
		noAnimation, charts.WithYAxisOpts(opts.YAxis{Type: "value", Max: 100}))
	var x []string
	var jain, reacq []opts.BarData
	for _, r := range recs {
		x = append(x, r.Library+" "+config(r))
		jain = append(jain, opts.BarData{Value: roundTo(100*r.Jain, 1)})
		reacq = append(reacq, opts.BarData{Value: roundTo(r.ReacqPct, 1)})
	}
	bar.SetXAxis(x)
	bar.SetGlobalOptions(charts.WithXAxisOpts(opts.XAxis{Type: "category", AxisLabel: &opts.AxisLabel{Rotate: 30}}))
	bar.AddSeries("Jain ×100", jain).AddSeries("reacq %", reacq)
	return bar
}

// heldCharts: W3's cost per held lock and renewal traffic.
func heldCharts(recs []workload.Record) []render.Renderer {
	if len(recs) == 0 {
		return nil
	}
	libs := libraries(recs)
	mk := func(name, title, sub, unit string, series map[string]func(workload.Record) float64, order []string) render.Renderer {
		bar := charts.NewBar()
		bar.SetGlobalOptions(chartInit(chartID("w3", name)), chartTitle(title, sub), legend, tooltipAxis, noAnimation,
			charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: unit}))
		bar.SetXAxis(libs)
		for _, s := range order {
			f := series[s]
			data := make([]opts.BarData, 0, len(recs))
			for _, r := range recs {
				data = append(data, opts.BarData{Value: roundTo(f(r), 2)})
			}
			bar.AddSeries(s, data)
		}
		return bar
	}
	perLock := func(v uint64, r workload.Record) float64 {
		if r.Acquired == 0 {
			return 0
		}
		return float64(v) / float64(r.Acquired) / 1024
	}
	return []render.Renderer{
		mk("mem", "Memory per held lock", "heap (after GC) and goroutine stacks, mid-hold", "KB/lock",
			map[string]func(workload.Record) float64{
				"heap KB/lock":  func(r workload.Record) float64 { return r.HeapBytesPerLock / 1024 },
				"stack KB/lock": func(r workload.Record) float64 { return perLock(r.StackHoldBytes, r) },
			}, []string{"heap KB/lock", "stack KB/lock"}),
		mk("goroutines", "Goroutines while holding", "base → hold", "goroutines",
			map[string]func(workload.Record) float64{
				"base": func(r workload.Record) float64 { return float64(r.GoroutinesBase) },
				"hold": func(r workload.Record) float64 { return float64(r.GoroutinesHold) },
			}, []string{"base", "hold"}),
		mk("renew", "Renewal traffic", "EVALSHA+EVAL calls/s seen by the server vs expected", "cmds/s",
			map[string]func(workload.Record) float64{
				"measured": func(r workload.Record) float64 { return r.RenewCmdsPerSec },
				"expected": func(r workload.Record) float64 { return r.RenewCmdsExpected },
			}, []string{"measured", "expected"}),
		mk("cpu", "CPU while holding", "cores used during the hold", "cores",
			map[string]func(workload.Record) float64{
				"client": func(r workload.Record) float64 { return r.ClientCPU },
				"server": func(r workload.Record) float64 { return r.ServerCPU },
			}, []string{"client", "server"}),
	}
}

// ceilingCharts: the EVALSHA rates per pipeline depth.
func ceilingCharts(c Ceiling) []render.Renderer {
	if len(c.Runs) == 0 {
		return nil
	}
	bar := charts.NewBar()
	bar.SetGlobalOptions(chartInit("c_ceiling"), chartTitle("Server ceiling", "EVALSHA/s by pipeline depth"), legend,
		tooltipAxis, noAnimation, charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "calls/s"}))
	var depths []string
	for _, r := range c.Runs {
		if d := fmt.Sprintf("P%d", r.Pipeline); !contains(depths, d) {
			depths = append(depths, d)
		}
	}
	bar.SetXAxis(depths)
	for _, test := range []string{"ACQUIRE", "RELEASE"} {
		data := make([]opts.BarData, len(depths))
		for i := range data {
			data[i] = opts.BarData{Value: 0}
		}
		for _, r := range c.Runs {
			if r.Test == test {
				for i, d := range depths {
					if d == fmt.Sprintf("P%d", r.Pipeline) {
						data[i] = opts.BarData{Value: round(r.PerSec)}
					}
				}
			}
		}
		bar.AddSeries(test, data)
	}
	return []render.Renderer{bar}
}

func round(v float64) float64 { return roundTo(v, 0) }

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := 1.0
	for p*10 <= v {
		p *= 10
	}
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func roundTo(v float64, digits int) float64 {
	p := 1.0
	for i := 0; i < digits; i++ {
		p *= 10
	}
	if v >= 0 {
		return float64(int64(v*p+0.5)) / p
	}
	return float64(int64(v*p-0.5)) / p
}

// binIndex and binUpper mirror the workload package's histogram bins (upper
// bounds 2^(k/4) µs).
func binIndex(upTo float64) int {
	k := 0
	for binUpper(k) < upTo*(1-1e-9) {
		k++
	}
	return k
}

func binUpper(k int) float64 {
	v := 1.0
	for i := 0; i < k/4; i++ {
		v *= 2
	}
	return v * [4]float64{1, 1.189207115002721, 1.4142135623730951, 1.681792830507429}[k%4]
}
