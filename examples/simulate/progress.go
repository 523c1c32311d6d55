package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gpufair/gpufair/sim"
)

// bar draws a progress bar on w, at most ten times a second.
type bar struct {
	w     io.Writer
	label string
	last  time.Time
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// update is a sim.Settings.Progress callback.
func (b *bar) update(p sim.Progress) {
	if now := time.Now(); now.Sub(b.last) >= 100*time.Millisecond || p.Finished == p.Jobs {
		b.last = now
		const width = 30
		done := width * p.Finished / p.Jobs
		fmt.Fprintf(b.w, "\r%-18s [%s%s] %3d%% %d/%d jobs, %d active, day %.1f ",
			b.label, strings.Repeat("#", done), strings.Repeat(" ", width-done),
			100*p.Finished/p.Jobs, p.Finished, p.Jobs, p.Active, p.Now/86400)
	}
}

// done ends the bar's line.
func (b *bar) done() { fmt.Fprintln(b.w) }
