package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// The terminal UI of weft chat: finished transcript lines are printed above the program (they
// scroll into the terminal's history), wrapped at word boundaries to the terminal's width; the
// program itself draws the reply streaming now (re-wrapped as the terminal is resized), a status
// line and the input line.
//
// Ctrl-C never leaves: it stops a run, or clears the line typed, or says how to leave (/exit,
// Ctrl-D on an empty line).

// Messages of the chat model besides the keyboard's.
type (
	// chatEventMsg is one event of the running conversation.
	chatEventMsg struct{ ev engine.Event }
	// chatDoneMsg ends the running conversation.
	chatDoneMsg struct{ err error }
	// chatNoteMsg carries the lines a command answered.
	chatNoteMsg struct{ lines []chatLine }
	// chatInterruptMsg is an interrupt signal (a kill -INT): as Ctrl-C.
	chatInterruptMsg struct{}
	// chatApprovalsMsg lists the calls a stopped run waits for.
	chatApprovalsMsg struct {
		pending []weft.ToolCallRecord
		err     error
	}
)

// chatStyles colours transcript lines by kind.
type chatStyles map[lineKind]lipgloss.Style

func newChatStyles(color bool) chatStyles {
	if !color {
		return chatStyles{}
	}
	return chatStyles{
		lineYou:    lipgloss.NewStyle().Bold(true),
		lineReply:  lipgloss.NewStyle().Foreground(lipgloss.Color("12")),
		lineTool:   lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
		lineResult: lipgloss.NewStyle().Foreground(lipgloss.Color("8")),
		lineNote:   lipgloss.NewStyle().Foreground(lipgloss.Color("8")),
		lineError:  lipgloss.NewStyle().Foreground(lipgloss.Color("9")),
	}
}

func (s chatStyles) render(l chatLine) string {
	st, ok := s[l.kind]
	if !ok {
		return l.text
	}
	// Line by line: a block rendered whole would be padded to its widest line.
	lines := strings.Split(l.text, "\n")
	for i, line := range lines {
		lines[i] = st.Render(line)
	}
	return strings.Join(lines, "\n")
}

// wrapText breaks text into lines of at most width terminal cells, at spaces and hyphens; a word
// longer than a line is broken. Tabs become four spaces (a terminal's tab stops would move the
// text past the width).
func wrapText(text string, width int) string {
	return ansi.Wrap(strings.ReplaceAll(text, "\t", "    "), max(width, 10), "")
}

// chatModel is the bubbletea model of weft chat. It holds no terminal: Update reads messages and
// returns commands, so that tests drive it with synthetic events.
type chatModel struct {
	ctx    context.Context
	s      *chatSession
	b      chatBackend
	tr     *transcript
	input  textinput.Model
	styles chatStyles
	width  int
	height int
	// running: a conversation is going; events delivers its messages.
	running bool
	events  chan tea.Msg
	// finished closes when the running conversation's backend call returns.
	finished chan struct{}
	// stopping: a stop was asked for the running conversation.
	stopping bool
	// hint replaces the status line's idle text until the next key: what Ctrl-C did, or how to
	// leave.
	hint string
	// printed holds every line committed above the program, in order.
	printed []chatLine
	// quitting: the program is ending.
	quitting bool
	// asking holds the questions about calls waiting for approval while the input answers them.
	asking *approvalQuestions
}

func newChatModel(ctx context.Context, b chatBackend, tr *transcript, color bool) *chatModel {
	in := textinput.New()
	in.Prompt = "> "
	in.Placeholder = "message, or /help"
	in.CharLimit = 0
	in.Focus()
	return &chatModel{ctx: ctx, s: &chatSession{b: b, tr: tr}, b: b, tr: tr, input: in, styles: newChatStyles(color), width: 80, height: 24}
}

// lineWidth is the width transcript lines wrap at: the terminal's, less a column (a line that
// fills the last column makes some terminals wrap early).
func (m *chatModel) lineWidth() int { return max(m.width-1, 10) }

func (m *chatModel) Init() tea.Cmd { return textinput.Blink }

// commit prints lines above the program.
func (m *chatModel) commit(lines []chatLine) tea.Cmd {
	if len(lines) == 0 {
		return nil
	}
	m.printed = append(m.printed, lines...)
	return tea.Println(m.render(lines))
}

// render is lines as printed: wrapped to the terminal's width, styled.
func (m *chatModel) render(lines []chatLine) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = m.styles.render(chatLine{l.kind, wrapText(l.text, m.lineWidth())})
	}
	return strings.Join(out, "\n")
}

func (m *chatModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.input.Width = max(msg.Width-3, 10)
		return m, nil
	case chatEventMsg:
		if m.tr.thread == "" {
			m.tr.thread = m.b.Thread()
		}
		lines, _ := m.tr.add(msg.ev)
		return m, tea.Batch(m.commit(lines), m.next())
	case chatDoneMsg:
		m.running, m.stopping, m.events, m.hint = false, false, nil, ""
		lines := m.tr.flushLive(" [cut off]")
		if msg.err != nil && m.ctx.Err() == nil {
			lines = append(lines, chatLine{lineError, "!! " + inert(msg.err.Error())})
		}
		m.tr.activity = ""
		if msg.err != nil && m.asking != nil {
			m.asking.refused() // edited arguments are asked for again
		}
		return m, tea.Batch(m.commit(lines), m.ask())
	case chatApprovalsMsg:
		if msg.err != nil {
			return m, m.commit([]chatLine{{lineError, "!! approvals: " + inert(msg.err.Error())}})
		}
		if len(msg.pending) > 0 {
			m.asking = &approvalQuestions{pending: msg.pending, by: "chat"}
		}
		return m, m.ask()
	case chatNoteMsg:
		return m, m.commit(msg.lines)
	case chatInterruptMsg:
		return m.interrupt()
	case tea.KeyMsg:
		switch msg.Type {
		case tea.KeyCtrlC:
			return m.interrupt()
		case tea.KeyCtrlD:
			if m.input.Value() == "" {
				return m.quit()
			}
		case tea.KeyEnter:
			m.hint = ""
			line := m.input.Value()
			m.input.Reset()
			return m.submit(line)
		}
		m.hint = ""
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return m, cmd
}

// ask goes on with the approval questions once nothing runs: the next question becomes the input's
// prompt; with none left, the calls a run stopped for are fetched (they come back as a
// chatApprovalsMsg), as weft run asks on a terminal.
func (m *chatModel) ask() tea.Cmd {
	if m.running {
		return nil
	}
	if m.asking != nil && !m.asking.done() {
		m.input.Prompt, m.input.Placeholder = inert(m.asking.prompt()), ""
		return nil
	}
	m.asking = nil
	m.input.Prompt, m.input.Placeholder = "> ", "message, or /help"
	ap, ok := m.b.(chatApprover)
	if !ok || !m.tr.awaiting {
		return nil
	}
	m.tr.awaiting = false
	ctx := m.ctx
	return func() tea.Msg {
		pending, err := ap.Approvals(ctx)
		return chatApprovalsMsg{pending, err}
	}
}

// decide answers the approval question asked; an answer that completes a decision stores it as a
// conversation: the last one continues the thread.
func (m *chatModel) decide(line string) (tea.Model, tea.Cmd) {
	echo := m.commit([]chatLine{{lineNote, m.input.Prompt + inert(line)}})
	call, d, ready := m.asking.answer(line)
	if !ready {
		return m, tea.Batch(echo, m.ask())
	}
	ap, ctx := m.b.(chatApprover), m.ctx
	return m, tea.Batch(echo, m.startWith(func(emit func(engine.Event)) error {
		_, err := ap.Decide(ctx, call, d, emit)
		return err
	}))
}

// interrupt is Ctrl-C: it stops the run; otherwise it clears the line typed, or, on an empty
// line, says how to leave. It never leaves: a Ctrl-C pressed once too often must not end the chat.
func (m *chatModel) interrupt() (tea.Model, tea.Cmd) {
	switch {
	case m.running && m.stopping:
		m.hint = "stopping the run…"
		return m, nil
	case m.running:
		return m, m.stop()
	case m.input.Value() != "":
		m.input.Reset()
		m.hint = "line cleared · to leave: /exit or Ctrl-D"
		return m, nil
	}
	m.hint = "nothing runs · to leave: /exit or Ctrl-D"
	if m.asking != nil {
		m.hint = "a tool call waits for your decision · to leave: /exit or Ctrl-D"
	}
	return m, nil
}

func (m *chatModel) quit() (tea.Model, tea.Cmd) {
	m.quitting = true
	return m, tea.Quit
}

// stop asks the backend to stop the run; the conversation's end follows as its events.
func (m *chatModel) stop() tea.Cmd {
	if m.stopping {
		return nil
	}
	m.stopping = true
	ctx, b := m.ctx, m.b
	return tea.Batch(m.commit([]chatLine{{lineNote, "-- stopping the run"}}), func() tea.Msg {
		if err := b.Stop(ctx); err != nil && weft.ErrorCode(err) != weft.EConflict {
			return chatNoteMsg{[]chatLine{{lineError, "!! stop: " + inert(err.Error())}}}
		}
		return nil
	})
}

// submit handles an entered line: a command or a message.
func (m *chatModel) submit(line string) (tea.Model, tea.Cmd) {
	if m.asking != nil && !m.running && !strings.HasPrefix(strings.TrimSpace(line), "/") {
		return m.decide(line)
	}
	c := parseChatLine(line)
	switch c.name {
	case "":
		if c.arg == "" {
			return m, nil
		}
		if m.running {
			return m, m.commit([]chatLine{{lineNote, "-- a run is going: wait for it, or /stop it"}})
		}
		m.tr.sent = append(m.tr.sent, c.arg)
		return m, tea.Batch(m.commit([]chatLine{{lineYou, "you> " + inert(c.arg)}}), m.start(c.arg, ""))
	case "/exit", "/quit":
		return m.quit()
	case "/stop":
		if !m.running {
			return m, m.commit([]chatLine{{lineNote, "-- nothing is running"}})
		}
		return m, m.stop()
	case "/continue":
		side, err := sideArg(c.arg)
		if err != nil {
			return m, m.commit([]chatLine{{lineError, "!! " + err.Error()}})
		}
		if m.running {
			return m, m.commit([]chatLine{{lineNote, "-- a run is going: wait for it, or /stop it"}})
		}
		return m, tea.Batch(m.commit([]chatLine{{lineNote, "-- continue " + string(side)}}), m.start("", side))
	}
	ctx, s := m.ctx, m.s
	return m, func() tea.Msg { return chatNoteMsg{s.answer(ctx, c)} }
}

// start runs a conversation in the background; its events come back one by one through next.
func (m *chatModel) start(text string, side weft.Side) tea.Cmd {
	ctx, b := m.ctx, m.b
	return m.startWith(func(emit func(engine.Event)) error { return b.Converse(ctx, text, side, emit) })
}

// startWith runs a conversation (fn passes its events on) in the background, as start does.
func (m *chatModel) startWith(fn func(emit func(engine.Event)) error) tea.Cmd {
	m.running, m.stopping = true, false
	m.tr.reset()
	m.tr.activity = "sending"
	ch, finished := make(chan tea.Msg, 64), make(chan struct{})
	m.events, m.finished = ch, finished
	ctx := m.ctx
	send := func(msg tea.Msg) {
		select {
		case ch <- msg:
		case <-ctx.Done():
		}
	}
	run := func() tea.Msg {
		defer close(finished)
		err := fn(func(ev engine.Event) { send(chatEventMsg{ev}) })
		send(chatDoneMsg{err})
		return nil
	}
	return tea.Batch(run, m.next())
}

// next waits for the running conversation's next message.
func (m *chatModel) next() tea.Cmd {
	ch := m.events
	if ch == nil {
		return nil
	}
	return func() tea.Msg { return <-ch }
}

func (m *chatModel) View() string {
	if m.quitting {
		return ""
	}
	var b strings.Builder
	if live := m.tr.live.String(); live != "" {
		text := wrapText(inert(m.tr.agent)+"> "+live, m.lineWidth())
		lines := strings.Split(text, "\n")
		if keep := max(m.height-4, 1); len(lines) > keep {
			lines = lines[len(lines)-keep:]
		}
		b.WriteString(m.styles.render(chatLine{lineReply, strings.Join(lines, "\n")}))
		b.WriteString("\n")
	}
	status := "idle · /help for commands"
	if m.asking != nil {
		status = "a tool call waits for your decision · /help for commands"
	}
	if m.running {
		status = m.tr.status() + " · Ctrl-C stops"
	}
	if id := m.b.Thread(); id != "" {
		status = id + " · " + status
	}
	if m.hint != "" {
		status = m.hint // first, whatever the width
	}
	b.WriteString(m.styles.render(chatLine{lineNote, clip(status, max(m.width-1, 10))}))
	b.WriteString("\n")
	b.WriteString(m.input.View())
	return b.String()
}

// chatTUI runs the terminal UI until /exit (or SIGTERM); a run still going is stopped first.
func chatTUI(ctx context.Context, cancel context.CancelFunc, s *chatSession, noColor bool, in io.Reader, out io.Writer) error {
	b := s.b
	m := newChatModel(ctx, b, s.tr, !noColor && os.Getenv("NO_COLOR") == "")
	m.s = s
	p := tea.NewProgram(m, tea.WithInput(in), tea.WithOutput(out), tea.WithoutSignalHandler(), tea.WithContext(ctx))
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	lb, local := b.(*localChat)
	if local {
		lb.logs.redirect(func(line string) { p.Send(chatNoteMsg{[]chatLine{{lineNote, "-- log: " + inert(line)}}}) })
	}
	go func() {
		for {
			select {
			case s := <-sigs:
				if s == os.Interrupt {
					p.Send(chatInterruptMsg{})
				} else {
					p.Quit()
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	_, err := p.Run()
	if err != nil && ctx.Err() == nil {
		err = exit(exitFailure, err)
	} else {
		err = nil
	}
	if local {
		lb.logs.redirect(nil)
	}
	if m.running && !m.stopping {
		// Leaving mid-run stops the run (on a server too), as /stop would.
		stopCtx, cancelStop := context.WithTimeout(ctx, 10*time.Second)
		if err := b.Stop(stopCtx); err != nil && weft.ErrorCode(err) != weft.EConflict {
			fmt.Fprintf(out, "weft: stopping thread %s: %v\n", b.Thread(), err)
		}
		cancelStop()
	}
	cancel() // a conversation still going ends
	if m.running {
		// Wait for the conversation to end so that the stop is stored before the store closes.
		<-m.finished
	}
	return err
}
