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
