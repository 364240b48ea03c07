package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/weft-agents/weft/engine"
)

// typed is a line typed into the chat and entered.
type typed string

// TestChatModel drives the terminal UI's model with keys and synthetic events, without a terminal.
func TestChatModel(t *testing.T) {
	chunk := func(s string) tea.Msg {
		return chatEventMsg{ev("message_chunk", map[string]any{"depth": 0.0, "delta": s})}
	}
	reply := func(id, s string) tea.Msg {
		return chatEventMsg{msgEv(map[string]any{"id": id, "role": "assistant", "content": s, "depth": 0.0})}
	}
	key := func(k tea.KeyType) tea.Msg { return tea.KeyMsg{Type: k} }
	tests := []struct {
		name     string
		steps    []any // typed lines or messages
		printed  []string
		view     []string // substrings of the final view
		notView  []string
		running  bool
		stopping bool
		quitting bool
		sent     []string
	}{
		{
			name:    "a message starts a run",
			steps:   []any{typed("hello")},
			printed: []string{"you> hello"},
			view:    []string{"step 0 · 0 tool calls · 0 tokens · sending · Ctrl-C stops", "> "},
			running: true,
			sent:    []string{"hello"},
		},
		{
			name:    "streamed text shows live until the stored reply prints",
			steps:   []any{typed("hello"), chunk("Hel"), chunk("lo th")},
			printed: []string{"you> hello"},
			view:    []string{"helper> Hello th", "writing"},
			running: true,
		},
		{
			name:    "the stored reply replaces the live text; the end of the run idles",
			steps:   []any{typed("hello"), chunk("Hel"), reply("m1", "Hello there"), chatDoneMsg{}},
			printed: []string{"you> hello", "helper> Hello there"},
			view:    []string{"thr_1 · idle"},
			notView: []string{"helper>"},
		},
		{
			name:     "Ctrl-C while a run goes stops it, and only once",
			steps:    []any{typed("hello"), chunk("Str"), key(tea.KeyCtrlC), key(tea.KeyCtrlC)},
			printed:  []string{"you> hello", "-- stopping the run"},
			running:  true,
			stopping: true,
		},
		{
			name: "the stop's events end the run; the chat stays",
			steps: []any{typed("hello"), chunk("Str"), key(tea.KeyCtrlC),
				chatEventMsg{ev("run_stopped", map[string]any{"reason": "aborted_by_user"})}, chatDoneMsg{}},
			printed: []string{"you> hello", "-- stopping the run", "helper> Str [cut off]", "-- run stopped: aborted_by_user"},
			view:    []string{"idle"},
		},
		{
			name:     "an interrupt signal is Ctrl-C",
			steps:    []any{typed("hello"), chatInterruptMsg{}},
			printed:  []string{"you> hello", "-- stopping the run"},
			running:  true,
			stopping: true,
		},
		{
			name:     "/stop stops the run",
			steps:    []any{typed("hello"), typed("/stop")},
			printed:  []string{"you> hello", "-- stopping the run"},
			running:  true,
			stopping: true,
		},
		{
			name:    "/stop with nothing running",
			steps:   []any{typed("/stop")},
			printed: []string{"-- nothing is running"},
		},
		{
			name:    "a message while a run goes waits",
			steps:   []any{typed("hello"), typed("again")},
			printed: []string{"you> hello", "-- a run is going: wait for it, or /stop it"},
			running: true,
			sent:    []string{"hello"},
		},
		{
			name:  "Ctrl-C when idle says how to leave, and stays",
			steps: []any{key(tea.KeyCtrlC)},
			view:  []string{"nothing runs · to leave: /exit or Ctrl-D"},
		},
		{
			name:  "Ctrl-C never leaves, however often",
			steps: []any{key(tea.KeyCtrlC), key(tea.KeyCtrlC), chatInterruptMsg{}, key(tea.KeyCtrlC)},
			view:  []string{"to leave: /exit or Ctrl-D"},
		},
		{
			name:    "the hint goes at the next key",
			steps:   []any{key(tea.KeyCtrlC), tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("x")}},
			view:    []string{"thr_1 · idle · /help for commands"},
			notView: []string{"to leave"},
		},
		{
			name:    "Ctrl-C clears a typed line",
			steps:   []any{tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("draft")}, key(tea.KeyCtrlC)},
			view:    []string{"message, or /help", "line cleared"},
			notView: []string{"draft"},
		},
		{
			name:     "Ctrl-C stops a run, and once more while it stops only says so",
			steps:    []any{typed("hello"), chunk("Str"), key(tea.KeyCtrlC), key(tea.KeyCtrlC), key(tea.KeyCtrlC)},
			printed:  []string{"you> hello", "-- stopping the run"},
			view:     []string{"helper> Str", "stopping the run…"},
			running:  true,
			stopping: true,
		},
		{
			name:     "/exit leaves",
			steps:    []any{typed("/exit")},
			quitting: true,
		},
		{
			name:     "Ctrl-D on an empty line leaves",
			steps:    []any{key(tea.KeyCtrlD)},
			quitting: true,
		},
		{
			name:    "/continue b runs side b",
			steps:   []any{typed("/continue b")},
			printed: []string{"-- continue b"},
			running: true,
		},
		{
			name:    "/continue with a bad side",
			steps:   []any{typed("/continue c")},
			printed: []string{"!! /continue c: want a or b"},
		},
		{
			name:    "a failed conversation shows its error, inert",
			steps:   []any{typed("hello"), chatDoneMsg{errors.New("thread thr_1: \x1b[2Jboom")}},
			printed: []string{"you> hello", "!! thread thr_1: ␛[2Jboom"},
		},
		{
			name:    "escape sequences typed or streamed are inert",
			steps:   []any{typed("hi\x1b]0;t\x07"), chunk("a\x1b]0;pwned\x07b")},
			printed: []string{"you> hi]0;t"}, // the input line drops control characters
			view:    []string{"helper> a␛]0;pwned␇b"},
			notView: []string{"\x1b]0;", "\x07"},
			running: true,
		},
		{
			name:    "the live reply wraps at word boundaries to the width",
			steps:   []any{typed("hello"), tea.WindowSizeMsg{Width: 31, Height: 30}, chunk("the quick brown fox jumps over the lazy dog again")},
			printed: []string{"you> hello"},
			view:    []string{"helper> the quick brown fox\njumps over the lazy dog again\n"},
			running: true,
		},
		{
			name:    "command answers print",
			steps:   []any{chatNoteMsg{[]chatLine{{lineNote, "-- thread thr_1"}}}},
			printed: []string{"-- thread thr_1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &stubBackend{thread: "thr_1"}
			m := newChatModel(context.Background(), b, newTranscript("helper", "thr_1"), false)
			m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
			for _, s := range tc.steps {
				switch s := s.(type) {
				case typed:
					m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)})
					m.Update(tea.KeyMsg{Type: tea.KeyEnter})
				case tea.Msg:
					m.Update(s)
				}
			}
			var printed []string
			for _, l := range m.printed {
				printed = append(printed, l.text)
			}
			if strings.Join(printed, "\n") != strings.Join(tc.printed, "\n") {
				t.Errorf("printed:\n%s\nwant:\n%s", strings.Join(printed, "\n"), strings.Join(tc.printed, "\n"))
			}
			view := m.View()
			for _, s := range tc.view {
				if !strings.Contains(view, s) {
					t.Errorf("view lacks %q:\n%s", s, view)
				}
			}
			for _, s := range tc.notView {
				if strings.Contains(view, s) {
					t.Errorf("view has %q:\n%s", s, view)
				}
			}
			if m.running != tc.running || m.stopping != tc.stopping || m.quitting != tc.quitting {
				t.Errorf("running=%v stopping=%v quitting=%v, want %v %v %v", m.running, m.stopping, m.quitting, tc.running, tc.stopping, tc.quitting)
			}
			if tc.sent != nil && strings.Join(m.tr.sent, "|") != strings.Join(tc.sent, "|") {
				t.Errorf("sent %q, want %q", m.tr.sent, tc.sent)
			}
		})
	}
}

// TestChatModelConverses runs the commands the model returns for a message: the backend's
// events come back through the model until the conversation ends.
func TestChatModelConverses(t *testing.T) {
	b := &stubBackend{thread: "thr_1", converse: func(emit func(engine.Event)) error {
		emit(ev("message_chunk", map[string]any{"depth": 0.0, "delta": "Hi"}))
		emit(msgEv(map[string]any{"id": "m1", "role": "assistant", "content": "Hi there", "depth": 0.0}))
		return nil
	}}
	m := newChatModel(context.Background(), b, newTranscript("helper", "thr_1"), false)
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("hello")})
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	// The enter's batch holds the print, the backend call and the wait for its first message.
	var pending []tea.Cmd
	pending = append(pending, cmd)
	for steps := 0; len(pending) > 0 && steps < 100; steps++ {
		c := pending[0]
		pending = pending[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case tea.BatchMsg:
			pending = append(pending, msg...)
		case chatEventMsg, chatDoneMsg:
			_, next := m.Update(msg)
			pending = append(pending, next)
		}
	}
	if m.running || len(b.sent) != 1 || b.sent[0] != "hello|" {
		t.Fatalf("running=%v sent=%q", m.running, b.sent)
	}
	var printed []string
	for _, l := range m.printed {
		printed = append(printed, l.text)
	}
	if strings.Join(printed, "\n") != "you> hello\nhelper> Hi there" {
		t.Errorf("printed:\n%s", strings.Join(printed, "\n"))
	}
}

// TestChatWrap: printed transcript lines wrap at word boundaries to the terminal's width (less a
// column), follow a resize, and break only a word longer than a line.
func TestChatWrap(t *testing.T) {
	m := newChatModel(context.Background(), &stubBackend{thread: "thr_1"}, newTranscript("helper", "thr_1"), false)
	long := "helper> Supercalifragilisticexpialidocious words wrap\tat spaces: https://example.com/a/very/long/url/that/cannot/fit end."
	for _, tc := range []struct {
		width int
		want  string
	}{
		{31, "helper>\nSupercalifragilisticexpialidoc\nious words wrap    at spaces:\nhttps://example.com/a/very/lon\ng/url/that/cannot/fit end."},
		{61, "helper> Supercalifragilisticexpialidocious words wrap    at\nspaces: https://example.com/a/very/long/url/that/cannot/fit\nend."},
		{200, strings.ReplaceAll(long, "\t", "    ")},
	} {
		m.Update(tea.WindowSizeMsg{Width: tc.width, Height: 30})
		got := m.render([]chatLine{{lineReply, long}, {lineNote, "-- short"}})
		if got != tc.want+"\n-- short" {
			t.Errorf("width %d:\n%s\nwant:\n%s", tc.width, got, tc.want)
		}
		for _, l := range strings.Split(got, "\n") {
			if n := len([]rune(l)); n > tc.width-1 {
				t.Errorf("width %d: a line of %d: %q", tc.width, n, l)
			}
		}
	}
	// Styled, every wrapped line keeps its colour and gets no padding.
	m = newChatModel(context.Background(), &stubBackend{thread: "thr_1"}, newTranscript("helper", "thr_1"), true)
	m.Update(tea.WindowSizeMsg{Width: 21, Height: 30})
	for _, l := range strings.Split(m.render([]chatLine{{lineReply, "one two three four five six seven"}}), "\n") {
		if strings.HasSuffix(l, " ") {
			t.Errorf("padded line %q", l)
		}
	}
}
