package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/scripted"
)

type chatFlags struct {
	thread, db, script string
	ifBusy             string // --if-busy: what each message does when the thread is running
	env                []string
}

func newChatCmd(g *globals) *cobra.Command {
	f := &chatFlags{}
	c := &cobra.Command{
		Use:   "chat AGENT",
		Short: "Talk with an agent in the terminal",
		Long: `Start an interactive session with AGENT: type a message, watch the reply stream in, with the
tool calls it makes and their results shown on one line each. The thread is created with your first
message (or continue one with --thread) and is kept in --db, or on the server with --server.

Commands:
  /stop            stop the run (Ctrl-C does the same)
  /continue [a|b]  run again without a new message (side a or b; default the side due next)
  /env NAME=VALUE  set a thread variable (secret unless the agent declares it text)
  /thread          show the thread: id, agent, messages, status, and the command that resumes it
  /json            print the thread as the weft run --json document
  /help            list the commands
  /exit            leave (also /quit, or Ctrl-D on an empty line)

Ctrl-C never leaves the chat: while a reply streams it stops the run (the text so far stays,
marked [cut off]); otherwise it clears the line you are typing. Leaving mid-run stops the run.
Long lines wrap at word boundaries to the terminal's width.

A tool call that waits for approval is asked about inline, as weft run asks on a terminal:
"Approve NAME(ARGS)? [y/N/e]" - y approves, e edits the arguments (JSON), anything else denies
and asks for a reason the model reads; the last decision continues the thread.

With --if-busy, each message says what it does if the thread is running (another client's run):
queue, reject (the message is refused), interrupt or rollback (that run stops; rollback also removes
what it added). Without it, the thread's default applies (docs/http-api.md).

When standard output is not a terminal, weft chat reads one message, command or answer per line
from standard input and prints the transcript as plain lines; there an interrupt stops the run,
or ends the chat (exit 130) when nothing runs.

Example:
  weft chat support --model-script examples/support/demo.script.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return chat(cmd, g, f, args[0]) },
	}
	fl := c.Flags()
	fl.StringVar(&f.thread, "thread", "", "continue this thread")
	fl.StringVar(&f.db, "db", defaultDB(), "store: SQLite file, postgres:// URL or :memory: (env WEFT_DB)")
	fl.StringVar(&f.script, "model-script", os.Getenv("WEFT_MODEL_SCRIPT"), "answer every model call from this script (env WEFT_MODEL_SCRIPT)")
	fl.StringArrayVar(&f.env, "env", nil, "thread env value K=V for a new thread (repeatable)")
	ifBusyFlag(fl, &f.ifBusy)
	return c
}

// chatBackend is what a chat drives: a local engine and store, or a server.
type chatBackend interface {
	// Converse posts text (or, when text is "", continues the thread on side) and passes every
	// event of the conversation to emit until it is quiet. The thread is created first if needed.
	Converse(ctx context.Context, text string, side weft.Side, emit func(engine.Event)) error
	// Stop stops the thread's run.
	Stop(ctx context.Context) error
	// SetEnv sets a thread variable (kept for the thread's creation when it does not exist yet)
	// and returns its type.
	SetEnv(ctx context.Context, name, value string) (weft.VarType, error)
	// Thread is the thread's id, "" before it exists.
	Thread() string
	// Document is the thread as the weft run --json document, redacted.
	Document(ctx context.Context) (string, error)
	// Info describes the thread (it exists) for /thread.
	Info(ctx context.Context) (chatThreadInfo, error)
}

// chatThreadInfo is what /thread tells about the thread besides its id.
type chatThreadInfo struct {
	// Agent is the thread's current agent (it changes with a handoff).
	Agent string `json:"agent"`
	// Status and StopReason are where the last run left it.
	Status     weft.ThreadStatus `json:"status"`
	StopReason weft.StopReason   `json:"stop_reason"`
	// Messages counts its messages (a sub-prompt's excluded).
	Messages int `json:"message_count"`
}

// chatApprover is a chat backend that takes approval decisions, so that the chat asks about calls
// waiting for approval inline.
type chatApprover interface {
	// Approvals lists the calls the thread waits for (its blocking subagents' included), their
	// arguments redacted.
	Approvals(ctx context.Context) ([]weft.ToolCallRecord, error)
	// Decide stores a decision on a waiting call. When no call waits any more (ready), the thread
	// goes on and every event of the conversation is passed to emit until it is quiet.
	Decide(ctx context.Context, callID string, d engine.Decision, emit func(engine.Event)) (ready bool, err error)
}

func chat(cmd *cobra.Command, g *globals, f *chatFlags, agent string) error {
	env, err := parseEnv(f.env, "")
	if err != nil {
		return exit(exitUsage, err)
	}
	ifBusy, err := parseIfBusy(f.ifBusy)
	if err != nil {
		return err
	}
	// The session outlives an interrupt: Ctrl-C stops a run, not the chat.
	ctx, cancel := context.WithCancel(context.WithoutCancel(cmd.Context()))
	defer cancel()
	var b chatBackend
	if rc := remoteOf(g); rc != nil {
		if f.script != "" {
			return exit(exitUsage, fmt.Errorf("--model-script applies to local chats only (give it to weft serve)"))
		}
		rb := &remoteChat{r: rc, agent: agent, env: env, thread: f.thread, ifBusy: ifBusy}
		if f.thread != "" {
			if err := rc.do(ctx, "GET", threadPath(f.thread), nil, nil); err != nil {
				return remoteExit(err)
			}
		} else if err := rc.do(ctx, "GET", "/api/agents/"+url.PathEscape(agent), nil, nil); err != nil {
			return remoteExit(err)
		}
		b = rb
	} else {
		lb, err := openLocalChat(ctx, g, f, agent, env, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		defer lb.close()
		b = lb
	}
	tr := newTranscript(agent, b.Thread())
	s := &chatSession{b: b, tr: tr, resume: chatResumeCommand(cmd, agent)}
	stdout := cmd.OutOrStdout()
	if isTerminal(stdout) && isTerminal(cmd.InOrStdin()) {
		return chatTUI(ctx, cancel, s, g.noColor, cmd.InOrStdin(), stdout)
	}
	return chatLines(ctx, s, cmd.InOrStdin(), stdout)
}

// chatSession is a chat's backend, its transcript and the command that resumes its thread.
type chatSession struct {
	b  chatBackend
	tr *transcript
	// resume is the weft chat command line that comes back to a thread.
	resume func(thread string) string
}

// chatResumeCommand returns the command that resumes a thread of this chat: weft chat AGENT
// --thread ID with the flags given that choose the project, the store or server and the model
// script (as typed; an API key is never printed, WEFT_API_KEY gives it).
func chatResumeCommand(cmd *cobra.Command, agent string) func(thread string) string {
	parts := []string{"weft", "chat", agent}
	var flags []string
	for _, name := range []string{"dir", "db", "server", "model-script"} {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			flags = append(flags, "--"+name, f.Value.String())
		}
	}
	return func(thread string) string {
		words := append(append(append([]string(nil), parts...), "--thread", thread), flags...)
		for i, w := range words {
			words[i] = shellWord(w)
		}
		return strings.Join(words, " ")
	}
}

// chatCommand is a parsed line: a slash command and its argument, or a message (name "").
type chatCommand struct{ name, arg string }

func parseChatLine(line string) chatCommand {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "/") {
		return chatCommand{arg: line}
	}
	name, arg, _ := strings.Cut(line, " ")
	return chatCommand{name: name, arg: strings.TrimSpace(arg)}
}

// sideArg reads /continue's argument.
func sideArg(arg string) (weft.Side, error) {
	switch strings.ToLower(arg) {
	case "":
		return "", nil
	case "a":
		return weft.SideA, nil
	case "b":
		return weft.SideB, nil
	}
	return "", fmt.Errorf("/continue %s: want a or b", arg)
}

// chatHelp lists the commands.
var chatHelp = []chatLine{{lineNote, "-- /stop (or Ctrl-C) stops the run · /continue [a|b] runs again · /env NAME=VALUE sets a variable · " +
	"/thread shows the thread · /json prints it · /exit (or Ctrl-D) leaves"}}

// answer runs the commands that need no run state: /env, /thread, /json, /help and unknown ones.
func (s *chatSession) answer(ctx context.Context, c chatCommand) []chatLine {
	b := s.b
	switch c.name {
	case "/env":
		name, value, ok := strings.Cut(c.arg, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return []chatLine{{lineError, "!! /env: want NAME=VALUE"}}
		}
		had := b.Thread() != ""
		typ, err := b.SetEnv(ctx, name, value)
		if err != nil {
			return []chatLine{{lineError, "!! /env " + inert(name) + ": " + inert(err.Error())}}
		}
		if !had {
			return []chatLine{{lineNote, fmt.Sprintf("-- %s (%s) will be set when the thread is created", inert(name), typ)}}
		}
		return []chatLine{{lineNote, fmt.Sprintf("-- %s (%s) set for thread %s", inert(name), typ, b.Thread())}}
	case "/thread":
		id := b.Thread()
		if id == "" {
			return []chatLine{{lineNote, "-- no thread yet: it is created with your first message"}}
		}
		lines := []chatLine{{lineNote, "-- thread " + id}}
		info, err := b.Info(ctx)
		if err != nil {
			lines = append(lines, chatLine{lineError, "!! /thread: " + inert(err.Error())})
		} else {
			status := string(info.Status)
			if info.StopReason != "" {
				status += " (" + string(info.StopReason) + ")"
			}
			lines[0].text += fmt.Sprintf(" · agent %s · %s · %s", inert(info.Agent), plural(info.Messages, "message"), inert(status))
		}
		if s.resume != nil {
			lines = append(lines, chatLine{lineNote, "-- resume it with: " + inert(s.resume(id))})
		}
		return lines
	case "/json":
		if b.Thread() == "" {
			return []chatLine{{lineNote, "-- no thread yet: it is created with your first message"}}
		}
		doc, err := b.Document(ctx)
		if err != nil {
			return []chatLine{{lineError, "!! /json: " + inert(err.Error())}}
		}
		return []chatLine{{lineNote, inert(doc)}}
	case "/help", "/?":
		return chatHelp
	}
	return []chatLine{{lineError, "!! unknown command " + inert(c.name) + " (try /help)"}}
}

// chatLines is the chat without a terminal: a message or command per input line, the transcript
// as plain lines. An interrupt stops the run, or ends the chat when nothing runs.
func chatLines(ctx context.Context, s *chatSession, in io.Reader, out io.Writer) error {
	b, tr := s.b, s.tr
	show := func(lines []chatLine) {
		for _, l := range lines {
			fmt.Fprintln(out, l.text)
		}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), weft.MaxMessageBytes)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	// follow runs a conversation (fn passes its events on), showing it; an interrupt stops it.
	follow := func(fn func(emit func(engine.Event)) error) error {
		tr.reset()
		done := make(chan error, 1)
		go func() {
			done <- fn(func(ev engine.Event) {
				if tr.thread == "" {
					tr.thread = b.Thread()
				}
				ls, _ := tr.add(ev)
				show(ls)
			})
		}()
		for {
			select {
			case err := <-done:
				show(tr.flushLive(" [cut off]"))
				return err
			case s := <-sigs:
				if s != os.Interrupt {
					return exit(exitInterrupted, nil)
				}
				if err := b.Stop(ctx); err != nil && weft.ErrorCode(err) != weft.EConflict {
					show([]chatLine{{lineError, "!! stop: " + inert(err.Error())}})
				}
			}
		}
	}
	converse := func(text string, side weft.Side) error {
		err := follow(func(emit func(engine.Event)) error { return b.Converse(ctx, text, side, emit) })
		ap, approves := b.(chatApprover)
		// The calls the run waits for are asked about here, as weft run asks on a terminal; the
		// last decision continues the thread, which may wait again.
		for err == nil && approves && tr.awaiting {
			tr.awaiting = false
			pending, perr := ap.Approvals(ctx)
			if perr != nil {
				return perr
			}
			q := &approvalQuestions{pending: pending, by: "chat"}
			for !q.done() {
				fmt.Fprintln(out, inert(strings.TrimSpace(q.prompt())))
				var answer string
				var ok bool
				select {
				case answer, ok = <-lines:
				case <-sigs:
					return exit(exitInterrupted, nil)
				}
				if !ok && !q.asksReason() {
					return nil
				}
				call, d, ready := q.answer(answer) // at the end of input, a denial stands without a reason
				if !ready {
					continue
				}
				err = follow(func(emit func(engine.Event)) error {
					_, err := ap.Decide(ctx, call, d, emit)
					return err
				})
				if err != nil {
					var ee *exitError
					if errors.As(err, &ee) {
						return err
					}
					show([]chatLine{{lineError, "!! " + inert(err.Error())}})
					q.refused() // edited arguments are asked for again
					err = nil
				}
			}
		}
		return err
	}
	for {
		var line string
		var ok bool
		select {
		case line, ok = <-lines:
		case <-sigs:
			return exit(exitInterrupted, nil)
		}
		if !ok {
			return nil
		}
		c := parseChatLine(line)
		var err error
		switch c.name {
		case "":
			if c.arg == "" {
				continue
			}
			tr.sent = append(tr.sent, c.arg)
			err = converse(c.arg, "")
		case "/exit", "/quit":
			return nil
		case "/stop":
			show([]chatLine{{lineNote, "-- nothing is running"}})
		case "/continue":
			side, serr := sideArg(c.arg)
			if serr != nil {
				show([]chatLine{{lineError, "!! " + serr.Error()}})
				continue
			}
			err = converse("", side)
		default:
			show(s.answer(ctx, c))
		}
		if err != nil {
			var ee *exitError
			if errors.As(err, &ee) {
				return err
			}
			show([]chatLine{{lineError, "!! " + inert(err.Error())}})
		}
	}
}

// localChat drives a thread in this process's engine and store.
type localChat struct {
	eng    *engine.Engine
	store  weft.Store
	rt     *local
	script *scripted.Provider
	agent  string
	mu     sync.Mutex
	thread string
	env    map[string]string // for the thread's creation
	ifBusy weft.IfBusy       // each message's policy when the thread is running (--if-busy)
	logs   *chatLog
}

// keyCreatedNotice tells that a key file was created for a database, paths relative to the
// working directory when they are inside it.
func keyCreatedNotice(keyFile, database string) string {
	rel := func(p string) string {
		if wd, err := os.Getwd(); err == nil && filepath.IsAbs(p) {
			if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
				return r
			}
		}
		return p
	}
	return fmt.Sprintf("weft: created %s, the encryption key of %s: keep it with the database (its secrets cannot be read without it), or set WEFT_ENCRYPTION_KEY",
		rel(keyFile), rel(database))
}

func openLocalChat(ctx context.Context, g *globals, f *chatFlags, agent string, env map[string]string, stderr io.Writer) (*localChat, error) {
	reg, err := loadProject(g.dir)
	if err != nil {
		return nil, err
	}
	if _, ok := reg.Agent(agent); !ok && f.thread == "" {
		return nil, noAgent(reg, agent, g.dir)
	}
	logs := &chatLog{}
	var level slog.Level
	if level.UnmarshalText([]byte(g.logLevel)) != nil {
		level = slog.LevelWarn
	}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level}))
	// A key file the store creates is said on standard error now, before the terminal UI starts,
	// in words rather than as a log record.
	rt, err := openLocal(ctx, reg, f.db, f.script, log, func(keyFile, database string) {
		fmt.Fprintln(stderr, keyCreatedNotice(keyFile, database))
	})
	if err != nil {
		return nil, err
	}
	eng, err := engine.New(rt.opt)
	if err != nil {
		rt.Close()
		return nil, exit(exitFailure, err)
	}
	if f.thread != "" {
		if _, err := rt.store.Thread(ctx, f.thread); err != nil {
			rt.Close()
			return nil, exit(exitUsage, err)
		}
	}
	return &localChat{eng: eng, store: rt.store, rt: rt, script: rt.script, agent: agent, thread: f.thread, env: env, logs: logs,
		ifBusy: weft.IfBusy(f.ifBusy)}, nil
}

// chatLog is a local chat's log output: standard error, or while the terminal UI runs, notices
// in its transcript (a line written under the UI would garble it).
type chatLog struct {
	mu sync.Mutex
	to func(string)
}

func (l *chatLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	to := l.to
	l.mu.Unlock()
	if to == nil {
		return os.Stderr.Write(p)
	}
	to(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// redirect sends log lines to to (nil: back to standard error).
func (l *chatLog) redirect(to func(string)) {
	l.mu.Lock()
	l.to = to
	l.mu.Unlock()
}

func (l *localChat) close() {
	l.eng.Wait()
	l.rt.Close()
}

func (l *localChat) Thread() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.thread
}

// ensureThread creates the thread with the variables given so far.
func (l *localChat) ensureThread(ctx context.Context) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.thread != "" {
		return l.thread, nil
	}
	th, err := l.eng.CreateThread(ctx, engine.NewThread{Agent: l.agent, Env: l.env})
	if err != nil {
		var mv *engine.MissingVariablesError
		if errors.As(err, &mv) {
			return "", fmt.Errorf("%w (set them with /env NAME=VALUE)", err)
		}
		return "", err
	}
	l.thread = th.ID
	return th.ID, nil
}

func (l *localChat) Converse(ctx context.Context, text string, side weft.Side, emit func(engine.Event)) error {
	id, err := l.ensureThread(ctx)
	if err != nil {
		return err
	}
	in := engine.Input{Side: side}
	if text != "" {
		in.Message = &weft.NewMessage{Role: weft.RoleUser, Content: text, IfBusy: l.ifBusy}
	}
	for ev, err := range l.eng.Converse(ctx, id, in) {
		if err != nil {
			return err
		}
		if ev.Type == "message_chunk" || ev.Type == "reasoning_chunk" {
			// Deltas carry only strings and numbers: no need for the JSON round trip.
			c, _ := ev.Data.(engine.Chunk)
			emit(engine.Event{Type: ev.Type, ThreadID: ev.ThreadID, Data: engine.Fields{"depth": c.Depth, "delta": c.Delta}})
			continue
		}
		emit(plainEvent(ev))
	}
	return nil
}

func (l *localChat) Approvals(ctx context.Context) ([]weft.ToolCallRecord, error) {
	id := l.Thread()
	redact, err := l.eng.Redactor(ctx, id)
	if err != nil {
		return nil, err
	}
	return pendingRedacted(ctx, l.eng, id, redact)
}

func (l *localChat) Decide(ctx context.Context, callID string, d engine.Decision, emit func(engine.Event)) (bool, error) {
	ready, err := l.eng.Decide(ctx, l.Thread(), callID, d)
	if err != nil || !ready {
		return false, err
	}
	return true, l.Converse(ctx, "", "", emit)
}

func (l *localChat) Stop(ctx context.Context) error {
	id := l.Thread()
	if id == "" {
		return nil
	}
	return l.eng.Stop(ctx, id)
}

func (l *localChat) SetEnv(ctx context.Context, name, value string) (weft.VarType, error) {
	typ := weft.VarSecret
	if vars, err := l.eng.AgentVariables(l.agent); err == nil {
		for _, v := range vars {
			if v.Name == name && v.Type != "" {
				typ = v.Type
			}
		}
	}
	l.mu.Lock()
	id := l.thread
	if id == "" {
		if l.env == nil {
			l.env = map[string]string{}
		}
		l.env[name] = value
	}
	l.mu.Unlock()
	if id == "" {
		return typ, nil
	}
	return typ, l.store.SetEnv(ctx, weft.EnvThread, id, []weft.EnvValue{{Name: name, Value: value, Type: typ}})
}

func (l *localChat) Info(ctx context.Context) (chatThreadInfo, error) {
	id := l.Thread()
	t, err := l.store.Thread(ctx, id)
	if err != nil {
		return chatThreadInfo{}, err
	}
	n, err := l.store.CountMessages(ctx, id, weft.MessageQuery{})
	if err != nil {
		return chatThreadInfo{}, err
	}
	return chatThreadInfo{Agent: t.Agent, Status: t.Status, StopReason: t.StopReason, Messages: n}, nil
}

func (l *localChat) Document(ctx context.Context) (string, error) {
	id := l.Thread()
	doc, err := buildDocument(ctx, l.store, id, &engine.RunResult{}, l.script)
	if err != nil {
		return "", err
	}
	redact, err := l.eng.Redactor(ctx, id)
	if err != nil {
		return "", err
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	return redact(string(b)), nil
}
