package report

import (
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"
)

// Text renders the report as aligned plain-text tables for a terminal: the
// ceiling, then one table per workload, then the run's notes.
func Text(rep *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nlocksmith bench — %s, %d CPU, Go %s, redis %s at %s\n", rep.Meta.CPUModel, rep.Meta.NumCPU,
		strings.TrimPrefix(rep.Meta.GoVersion, "go"), rep.Meta.RedisVersion, rep.Meta.ServerAddr)
	for _, t := range Tables(rep) {
		title := t.Title
		if t.ID == "ceiling" && t.Note != "" && len(t.Rows) == 0 {
			title += ": " + t.Note
		}
		fmt.Fprintf(&b, "\n%s\n", title)
		if len(t.Rows) == 0 {
			continue
		}
		writeAligned(&b, t)
		if t.ID == "ceiling" {
			fmt.Fprintf(&b, "pair ceiling of rlock's scripts: %s pairs/s (P%d)\n", count(rep.Ceiling.PairsPerSec),
				rep.Ceiling.Pipeline)
		}
	}
	b.WriteString("\n* = estimated from the server's command statistics; ⚠ = other processes used more than " +
		fmt.Sprintf("%.2f cores during the window of a run, even after reruns; ours÷lib > 1 means ours is faster.\n",
			rep.Meta.OtherMax))
	for _, n := range rep.Meta.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	b.WriteString(runLine(rep.Meta) + "\n")
	return b.String()
}

// runLine says how the figures were taken: repeats, order seed, total time.
func runLine(m Meta) string {
	s := fmt.Sprintf("%d run(s) of every case in a random order (-seed %d)", max(m.Repeat, 1), m.Seed)
	if m.Quick {
		s = "quick run (-quick): " + s + " and short windows, a smoke test: do not compare libraries on it"
	}
	if !m.Started.IsZero() && m.Finished.After(m.Started) {
		s += fmt.Sprintf("; total run time %s", m.Finished.Sub(m.Started).Round(time.Second))
	}
	return s + "."
}

// writeAligned writes t with columns padded to their widest cell: the first
// column left-aligned, the others right-aligned, "errors" left-aligned last.
func writeAligned(b *strings.Builder, t Table) {
	width := make([]int, len(t.Headers))
	cells := make([][]string, 0, len(t.Rows)+1)
	cells = append(cells, t.Headers)
	for _, r := range t.Rows {
		cells = append(cells, plainRow(r))
	}
	na := map[int]int{} // row -> index of its n/a cell
	for i, r := range cells {
		if k := naIndex(r); k >= 0 {
			na[i] = k
			for j := 0; j < k; j++ { // the cells before the n/a note align with the others
				width[j] = max(width[j], utf8.RuneCountInString(r[j]))
			}
			continue
		}
		for j, c := range r {
			width[j] = max(width[j], utf8.RuneCountInString(c))
		}
	}
	for i, r := range cells {
		var line strings.Builder
		k, isNA := na[i]
		for j, c := range r {
			if isNA && j > k {
				break
			}
			pad := width[j] - utf8.RuneCountInString(c)
			left := j == 0 || j == len(r)-1 || (isNA && j == k)
			if isNA && j == k {
				pad = 0
			}
			if j > 0 {
				line.WriteString("  ")
			}
			if !left && pad > 0 {
				line.WriteString(strings.Repeat(" ", pad))
			}
			line.WriteString(c)
			if left && pad > 0 && j < len(r)-1 {
				line.WriteString(strings.Repeat(" ", pad))
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
}

func plainRow(r []string) []string {
	out := make([]string, len(r))
	for i, c := range r {
		out[i] = strings.ReplaceAll(c, "**", "")
	}
	return out
}

// Markdown renders the report as Markdown (the format of the project's
// benchmark notes): a heading, the note and a table per section.
func Markdown(rep *Report) string {
	var b strings.Builder
	m := rep.Meta
	fmt.Fprintf(&b, "# locksmith bench (%s UTC)\n\n", m.Started.Format("2006-01-02 15:04"))
	fmt.Fprintf(&b, "Machine: %d CPU (%s), %s/%s, %s, redis-server %s at %s (%s). Command: `%s`. "+
		"Window %s per case after %s of warm-up.\n", m.NumCPU, m.CPUModel, m.GOOS, m.GOARCH, m.GoVersion,
		m.RedisVersion, m.ServerAddr, map[bool]string{true: "embedded", false: "external"}[m.Embedded], m.Command,
		secs(m.DurationSec), secs(m.WarmupSec))
	fmt.Fprintf(&b, "\n%s\n", runLine(m))
	for _, n := range m.Notes {
		fmt.Fprintf(&b, "\nNote: %s\n", n)
	}
	for _, t := range Tables(rep) {
		fmt.Fprintf(&b, "\n## %s\n\n", t.Title)
		if t.Note != "" {
			fmt.Fprintf(&b, "%s\n\n", t.Note)
		}
		if len(t.Rows) == 0 {
			continue
		}
		b.WriteString("| " + strings.Join(t.Headers, " | ") + " |\n|")
		for j := range t.Headers {
			if j == 0 || j == len(t.Headers)-1 {
				b.WriteString("---|")
			} else {
				b.WriteString("---:|")
			}
		}
		b.WriteByte('\n')
		for _, r := range t.Rows {
			b.WriteString("| " + strings.Join(escapePipes(r), " | ") + " |\n")
		}
	}
	return b.String()
}

func escapePipes(r []string) []string {
	out := make([]string, len(r))
	for i, c := range r {
		out[i] = strings.ReplaceAll(c, "|", `\|`)
	}
	return out
}

// WriteMarkdown writes Markdown(rep) to path.
func WriteMarkdown(path string, rep *Report) error {
	if err := os.WriteFile(path, []byte(Markdown(rep)), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
