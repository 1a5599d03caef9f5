package report

import (
	"fmt"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/render"

	"github.com/locksmith-go/locksmith/bench/internal/workload"
)

// chartsFor returns the charts of one section, in rows: the overview
// (throughput, fairness), then one row per configuration (CDF, histogram).
func chartsFor(rep *Report, id string) [][]render.Renderer {
	recs := measured(byWorkload(rep.Records, id))
	switch id {
	case "ceiling":
		return [][]render.Renderer{ceilingCharts(rep.Ceiling)}
	case workload.HeldMany:
		return [][]render.Renderer{heldCharts(recs)}
	}
	if len(recs) == 0 {
		return nil
	}
	ceiling := 0.0 // the line drawn: rlock's scripts' pair ceiling (the other kinds are in the ceiling's chart)
	if id == workload.UncontendedPairs || id == workload.Raw || id == workload.AsyncPairs {
		ceiling = rep.Ceiling.PairsPerSec
	}
	overview := []render.Renderer{throughputChart(id, recs, ceiling)}
	if id == workload.ContendedKeys || id == workload.ContendedKeysSpread {
		overview = append(overview, fairnessChart(id, recs))
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
	case workload.ContendedKeys:
		return fmt.Sprintf("G=%d keys=%d", r.Goroutines, r.Keys)
	case workload.AsyncPairs:
		return fmt.Sprintf("keys=%d", r.Keys)
	case workload.ContendedKeysSpread, workload.HandoffSpread:
		return fmt.Sprintf("%dx%d keys=%d", r.Processes, r.Goroutines, r.Keys)
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
		if !contains(out, r.Label()) {
			out = append(out, r.Label())
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

// chartInit sizes a chart and leaves room above the plot for the title,
// subtitle and axis name, and below it for rotated labels and the legend.
func chartInit(id string) charts.GlobalOpts {
	return func(bc *charts.BaseConfiguration) {
		charts.WithInitializationOpts(opts.Initialization{Width: "640px", Height: "400px", ChartID: id})(bc)
		charts.WithGridOpts(opts.Grid{Top: "80", Bottom: "60", Left: "50", Right: "60",
			ContainLabel: opts.Bool(true)})(bc)
	}
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
	unit := map[string]string{workload.UncontendedPairs: "pairs/s", workload.Raw: "pairs/s", workload.AsyncPairs: "pairs/s",
		workload.ContendedKeys: "acquisitions/s", workload.Handoff: "hand-offs/s", workload.ContendedKeysSpread: "acquisitions/s",
		workload.HandoffSpread: "hand-offs/s"}[id]
	yAxis := opts.YAxis{Name: unit, Type: "value"}
	if id == workload.Handoff || id == workload.HandoffSpread || id == workload.ContendedKeysSpread {
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
				if r.Label() == lib {
					data[j] = opts.BarData{Value: round(r.OpsPerSec)}
				}
			}
		}
		var sopts []charts.SeriesOpts
		if i == 0 && ceiling > 0 {
			sopts = append(sopts, charts.WithMarkLineNameYAxisItemOpts(opts.MarkLineNameYAxisItem{
				Name: "server pair ceiling", YAxis: round(ceiling)}),
				// insideEndTop: above the line at its right end, inside the grid (the default, after the end,
				// is clipped by the chart's edge).
				charts.WithMarkLineStyleOpts(opts.MarkLineStyle{Label: &opts.Label{Show: opts.Bool(true),
					Position: "insideEndTop", Formatter: "ceiling {c}"}}))
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
		line.AddSeries(r.Label(), data, charts.WithLineChartOpts(opts.LineChart{Step: "end", ShowSymbol: opts.Bool(false)}))
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
		bar.AddSeries(r.Label(), data, charts.WithBarChartOpts(opts.BarChart{BarGap: "0%"}))
	}
	return bar
}

func latencyWhat(id string) string {
	switch id {
	case workload.ContendedKeys, workload.ContendedKeysSpread:
		return "wait until held"
	case workload.Handoff, workload.HandoffSpread:
		return "unlock to next holder"
	default:
		return "lock+unlock pair"
	}
}

// fairnessChart: W2's (W2x's) Jain index (per goroutine, and per process
// when spread) and re-acquisition share per library.
func fairnessChart(id string, recs []workload.Record) render.Renderer {
	bar := charts.NewBar()
	bar.SetGlobalOptions(chartInit(chartID(id, "fairness")), chartTitle("Fairness",
		"Jain index ×100 (100 = even) and re-acquisitions by the previous holder (%)"), legend, tooltipAxis,
		noAnimation, charts.WithYAxisOpts(opts.YAxis{Type: "value", Max: 100}))
	var x []string
	var jain, jainP, reacq []opts.BarData
	for _, r := range recs {
		x = append(x, r.Label()+" "+config(r))
		jain = append(jain, opts.BarData{Value: roundTo(100*r.Jain, 1)})
		jainP = append(jainP, opts.BarData{Value: roundTo(100*r.JainPerProcess, 1)})
		reacq = append(reacq, opts.BarData{Value: roundTo(r.ReacqPct, 1)})
	}
	bar.SetXAxis(x)
	bar.SetGlobalOptions(charts.WithXAxisOpts(opts.XAxis{Type: "category", AxisLabel: &opts.AxisLabel{Rotate: 30}}))
	if id == workload.ContendedKeysSpread {
		bar.AddSeries("Jain per process ×100", jainP)
	}
	bar.AddSeries("Jain per goroutine ×100", jain).AddSeries("reacq %", reacq)
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

// ceilingCharts: each kind's pair rate per pipeline depth.
func ceilingCharts(c Ceiling) []render.Renderer {
	if len(c.Runs) == 0 {
		return nil
	}
	bar := charts.NewBar()
	bar.SetGlobalOptions(chartInit("c_ceiling"), chartTitle("Server ceiling", "lock+unlock pairs/s by pipeline depth"),
		legend, tooltipAxis, noAnimation, charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "pairs/s"}))
	var depths []string
	for _, r := range c.Runs {
		if d := fmt.Sprintf("P%d", r.Pipeline); !contains(depths, d) {
			depths = append(depths, d)
		}
	}
	bar.SetXAxis(depths)
	for _, k := range c.Kinds {
		data := make([]opts.BarData, len(depths))
		for i := range data {
			data[i] = opts.BarData{Value: 0}
		}
		for _, r := range c.Runs {
			if r.Kind == k.Name {
				for i, d := range depths {
					if d == fmt.Sprintf("P%d", r.Pipeline) {
						data[i] = opts.BarData{Value: round(r.PerSec)}
					}
				}
			}
		}
		bar.AddSeries(k.Name, data)
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
