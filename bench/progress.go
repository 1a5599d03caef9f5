package main

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// ui shows progress: a bar on a terminal, or one line per case otherwise
// (CI logs, redirected output). Logs go to the same writer, above the bar.
type ui struct {
	mu      sync.Mutex // guards the fields below
	w       io.Writer
	bar     *progressbar.ProgressBar // nil without a terminal
	total   int
	done    int
	desc    string
	verbose bool
}

// newUI decides whether to draw a bar: mode "on", or "auto" with stderr a
// terminal and CI unset.
func newUI(w io.Writer, mode string, verbose bool) *ui {
	u := &ui{w: w, verbose: verbose}
	f, isFile := w.(*os.File)
	tty := isFile && term.IsTerminal(int(f.Fd()))
	if mode == "on" || (mode == "auto" && tty && os.Getenv("CI") == "") {
		u.bar = progressbar.NewOptions(1,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetWidth(30),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionFullWidth(),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetRenderBlankState(true),
		)
	}
	return u
}

// start sets the number of steps.
func (u *ui) start(total int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.total = total
	if u.bar != nil {
		u.bar.ChangeMax(total)
	}
}

// step announces the step about to run.
func (u *ui) step(desc string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.desc = desc
	if u.bar != nil {
		u.bar.Describe(desc)
	} else if u.verbose {
		fmt.Fprintf(u.w, "[%d/%d] %s ...\n", u.done+1, u.total, desc)
	}
}

// finished marks the current step done, with a one-line summary.
func (u *ui) finished(summary string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.done++
	if u.bar != nil {
		_ = u.bar.Add(1)
		return
	}
	fmt.Fprintf(u.w, "[%d/%d] %s\n", u.done, u.total, summary)
}

// logf prints a line above the bar.
func (u *ui) logf(format string, args ...any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.bar != nil {
		_ = u.bar.Clear()
	}
	fmt.Fprintf(u.w, format+"\n", args...)
	if u.bar != nil {
		_ = u.bar.RenderBlank()
	}
}

// close removes the bar.
func (u *ui) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.bar != nil {
		_ = u.bar.Finish()
		_ = u.bar.Clear()
	}
}
