package main

import (
	"fmt"
	"io"
	"strings"
	"sync"

	xterm "github.com/charmbracelet/x/term"

	"github.com/weft-agents/weft/engine"
)

// runProgress is weft run's status line on a terminal's standard error: steps, tool calls and
// tokens so far, redrawn in place as the run's events arrive and erased when the run ends.
type runProgress struct {
	mu sync.Mutex
	w  io.Writer
	// width is the terminal's width; the line is cut to fit.
	width int
	tr    *transcript
	// shown: the status line is on the screen.
	shown bool
	// open: streamed reply text on the same terminal ends mid-line; the status waits for its end.
	open bool
}

// newRunProgress returns the status line of stderr, or nil when stderr is not a terminal.
func newRunProgress(stderr io.Writer) *runProgress {
	if !isTerminal(stderr) {
		return nil
	}
	width := 80
	if f, ok := stderr.(interface{ Fd() uintptr }); ok {
		if w, _, err := xterm.GetSize(f.Fd()); err == nil && w > 0 {
			width = w
		}
	}
	return &runProgress{w: stderr, width: width, tr: newTranscript("", "")}
}

// follow sets the thread whose work is counted.
func (p *runProgress) follow(threadID string) {
	p.mu.Lock()
	p.tr.thread = threadID
	p.mu.Unlock()
}

// event counts an event and redraws the line.
func (p *runProgress) event(e engine.Event) {
	if e.Type == "message_chunk" || e.Type == "reasoning_chunk" {
		return
	}
	e = plainEvent(e)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tr.add(e)
	p.tr.live.Reset() // the reply's text is weft run's own output, not the status's
	p.draw()
}

// draw writes the status over the current line (with the lock held).
func (p *runProgress) draw() {
	if p.open {
		return
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", clip("weft: "+p.tr.status(), max(p.width-1, 20)))
	p.shown = true
}

// clear erases the status line (with the lock held).
func (p *runProgress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}

// text writes streamed reply text to out, which may be the same terminal: the status line is
// erased first and drawn again once the text ends a line.
func (p *runProgress) text(out io.Writer, s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	fmt.Fprint(out, s)
	p.open = !strings.HasSuffix(s, "\n")
}

// done erases the status line for good.
func (p *runProgress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	p.open = true
}
