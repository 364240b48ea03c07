package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/scripted"
)

type runFlags struct {
	env, args, attach  []string
	envFile, argsJSON  string
	script, db, thread string
	trace              string
	// ifBusy is the message's double-texting policy (--if-busy).
	ifBusy                 string
	asJSON, verbose, quiet bool
	timeout                time.Duration
	// decide, set by `weft threads approve|deny`, is stored before the thread continues.
	decide *decideRequest
	// wait: when another process runs the thread, wait for it to answer.
	wait bool
	// budgetUSD and budgetTokens cap a new thread's spend.
	budgetUSD    float64
	budgetTokens int64
}

func newRunCmd(g *globals) *cobra.Command {
	f := &runFlags{}
	c := &cobra.Command{
		Use:   "run AGENT [MESSAGE|-]",
		Short: "Create a thread, post a message and run it until it is quiet",
		Long: `Create a thread of AGENT (or continue one with --thread), post MESSAGE ("-" reads standard
input), run until no run is active or queued, and print the result: the text of the last reply of
the agent's AI side. With --json the whole thread is printed as a JSON document.

Exit status: 0 the run stopped with an ok reason, 1 it failed (step_error, max steps, …),
2 usage, 3 invalid definitions, 4 thread creation failed (missing variables, invalid arguments),
5 model script mismatch, 6 tool calls wait for approval (weft threads approve|deny), 130 interrupted.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error { return runAgent(cmd, g, f, args) },
	}
	fl := c.Flags()
	fl.StringArrayVar(&f.env, "env", nil, "thread env value K=V (repeatable)")
	fl.StringVar(&f.envFile, "env-file", "", "dotenv file of thread env values")
	fl.StringArrayVar(&f.args, "arg", nil, "thread argument K=V (V parsed as JSON when it parses; repeatable)")
	fl.StringVar(&f.argsJSON, "args", "", "thread arguments as a JSON object")
	fl.StringArrayVar(&f.attach, "attach", nil, "attach a file to the message (repeatable)")
	fl.StringVar(&f.script, "model-script", os.Getenv("WEFT_MODEL_SCRIPT"), "answer every model call from this script (env WEFT_MODEL_SCRIPT)")
	fl.BoolVar(&f.asJSON, "json", false, "print the whole thread as JSON")
	fl.StringVar(&f.db, "db", defaultDB(), "store: SQLite file, postgres:// URL, or :memory: for a thread that is not kept (env WEFT_DB)")
	fl.StringVar(&f.thread, "thread", "", "continue an existing thread (needs a persistent --db)")
	fl.DurationVar(&f.timeout, "timeout", 10*time.Minute, "wall-clock limit; on expiry the run is stopped")
	fl.BoolVar(&f.verbose, "verbose", false, "print run events to stderr")
	fl.BoolVar(&f.quiet, "quiet", false, "print nothing but the result")
	fl.StringVar(&f.trace, "trace-requests", "", "append every model request (redacted) as a JSON line to FILE")
	ifBusyFlag(fl, &f.ifBusy)
	fl.BoolVar(&f.wait, "wait", false, "when another process runs the thread, wait for its answer and print it")
	fl.Float64Var(&f.budgetUSD, "budget-usd", 0, "cap the new thread's cost in USD (subagents included); the run pauses there")
	fl.Int64Var(&f.budgetTokens, "budget-tokens", 0, "cap the new thread's tokens (subagents included); the run pauses there")
	return c
}

// envMaxThreadMessages reads WEFT_MAX_THREAD_MESSAGES: the messages a thread may hold before new
// ones are refused (0: the default, weft.DefaultMaxThreadMessages; negative: no limit).
func envMaxThreadMessages() (int, error) {
	v := os.Getenv("WEFT_MAX_THREAD_MESSAGES")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, exit(exitUsage, fmt.Errorf("WEFT_MAX_THREAD_MESSAGES=%q: want a whole number", v))
	}
	return n, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func runAgent(cmd *cobra.Command, g *globals, f *runFlags, args []string) error {
	if _, err := parseIfBusy(f.ifBusy); err != nil {
		return err
	}
	if rc := remoteOf(g); rc != nil {
		return rc.run(cmd, f, args)
	}
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	reg, err := loadProject(g.dir)
	if err != nil {
		return err
	}
	agent := args[0]
	if _, ok := reg.Agent(agent); !ok && f.thread == "" {
		return noAgent(reg, agent, g.dir)
	}
	message, err := readMessage(cmd.InOrStdin(), args)
	if err != nil {
		return err
	}
	env, err := parseEnv(f.env, f.envFile)
	if err != nil {
		return exit(exitUsage, err)
	}
	threadArgs, err := parseArgs(f.args, f.argsJSON)
	if err != nil {
		return exit(exitUsage, err)
	}
	attachments, err := readAttachments(f.attach)
	if err != nil {
		return exit(exitUsage, err)
	}
	log := newLogger(g.logLevel, os.Stderr)
	rt, err := openLocal(ctx, reg, f.db, f.script, log, nil)
	if err != nil {
		return err
	}
	defer rt.Close()
	store, script, clock, opt := rt.store, rt.script, rt.clock, rt.opt
	if v := os.Getenv("WEFT_LEASE_TTL"); v != "" {
		ttl, err := time.ParseDuration(v)
		if err != nil || ttl <= 0 {
			return exit(exitUsage, fmt.Errorf("WEFT_LEASE_TTL=%q: want a positive duration such as 30s", v))
		}
		opt.LeaseTTL = ttl
	}
	// On a terminal the reply's text appears as it streams (the --json document is unchanged).
	var streamThread atomic.Value // the thread whose deltas are shown, once known
	var streamed atomic.Bool
	live := !f.asJSON && !f.quiet && isTerminal(stdout)
	// On a terminal, standard error shows the run's progress (not with --verbose's event lines).
	var progress *runProgress
	if !f.quiet && !f.verbose {
		progress = newRunProgress(stderr)
	}
	if (f.verbose && !f.quiet) || live || progress != nil {
		opt.OnEvent = func(e engine.Event) {
			if f.verbose && !f.quiet {
				printEvent(stderr, e)
			}
			if progress != nil {
				progress.event(e)
			}
			if c, ok := e.Data.(engine.Chunk); ok && live && e.Type == "message_chunk" && e.ThreadID == streamThread.Load() && c.Depth == 0 {
				if d := c.Delta; d != "" {
					if progress != nil {
						progress.text(stdout, d)
					} else {
						fmt.Fprint(stdout, d)
					}
					streamed.Store(true)
				}
			}
		}
	}
	if f.trace != "" {
		tf, err := os.OpenFile(f.trace, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return exit(exitUsage, fmt.Errorf("--trace-requests: %w", unwrapPath(err)))
		}
		defer tf.Close()
		tw := bufio.NewWriter(tf)
		defer tw.Flush()
		opt.OnTrace = func(line []byte) { tw.Write(line); tw.WriteByte('\n') }
	}
	eng, err := engine.New(opt)
	if err != nil {
		return exit(exitFailure, err)
	}

	var th *weft.Thread
	if f.thread != "" {
		if th, err = store.Thread(ctx, f.thread); err != nil {
			return exit(exitUsage, err) // the store names the thread
		}
		if script != nil && f.decide != nil {
			// A decision continues the run that stopped for it: the script goes on after the
			// entries that run used. A new message (run --thread) starts the script afresh.
			if err := resumeScript(ctx, store, script, th.ID); err != nil {
				return exit(exitFailure, err)
			}
		}
	} else {
		nt := engine.NewThread{Agent: agent, Env: env, Arguments: threadArgs}
		if cmd.Flags().Changed("budget-usd") || cmd.Flags().Changed("budget-tokens") {
			nt.Budget = &weft.Budget{MaxCostUSD: f.budgetUSD, MaxTokens: f.budgetTokens}
		}
		th, err = eng.CreateThread(ctx, nt)
		if err != nil {
			switch weft.ErrorCode(err) {
			case weft.EMissingVariables, weft.EInvalid:
				return exit(exitCreation, err)
			}
			return exit(exitFailure, err)
		}
	}
	// The message (or a continue) runs to quiescence: the thread's runs, its subagents and their
	// reports, work an earlier process left behind, and effects due within the timeout (cli.md:
	// `weft run` waits for all descendants).
	in := engine.Input{EffectsUntil: clock.Now().Add(f.timeout)}
	if message != "" || len(attachments) > 0 {
		in.Message = &weft.NewMessage{Role: weft.RoleUser, Content: message, Attachments: attachments, IfBusy: weft.IfBusy(f.ifBusy)}
	}
	streamThread.Store(th.ID)
	if progress != nil {
		progress.follow(th.ID)
	}
	runCtx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	if f.decide != nil {
		ready, err := decideFirst(ctx, eng, th.ID, f.decide)
		if err != nil {
			return err
		}
		if !ready {
			if progress != nil {
				progress.done()
			}
			redact, _ := eng.Redactor(context.WithoutCancel(ctx), th.ID)
			if redact == nil {
				redact = func(s string) string { return s }
			}
			waitingCalls(ctx, stderr, eng, th.ID, continueFlags(g, f), redact)
			return exit(exitApproval, nil)
		}
	}
	res, err := eng.Ask(runCtx, th.ID, in)
	if errors.Is(err, weft.ErrLeaseHeld) && in.Message != nil {
		// Another process runs the thread: the message is queued, and that run takes it at its
		// next step boundary.
		if !f.wait {
			if !f.quiet {
				fmt.Fprintf(stderr, "weft: thread %s is running in another process; your message is queued and that run will answer it\n"+
					"  see the answer with: weft threads show %s%s   (or run with --wait)\n", th.ID, th.ID, dbFlag(f.db))
			}
			return nil
		}
		if err = waitElsewhere(runCtx, store, th.ID); err != nil {
			return exit(exitFailure, err)
		}
		res, err = &engine.RunResult{}, nil
	}
	// On a terminal, calls that wait for approval are asked about here, and the thread goes on.
	for err == nil && awaiting(res.Last().Reason) && !f.asJSON && interactive(cmd.InOrStdin(), stdout) {
		redact, rerr := eng.Redactor(context.WithoutCancel(ctx), th.ID)
		if rerr != nil {
			break
		}
		if progress != nil {
			progress.done() // the questions take the terminal
		}
		decided, derr := askApprovals(runCtx, cmd.InOrStdin(), stderr, eng, th.ID, redact)
		if derr != nil || !decided {
			break
		}
		more, aerr := eng.Ask(runCtx, th.ID, engine.Input{EffectsUntil: in.EffectsUntil})
		res.Stops, res.Steps, err = append(res.Stops, more.Stops...), res.Steps+more.Steps, aerr
		res.LastLineRedactions += more.LastLineRedactions
	}
	eng.Wait()
	if progress != nil {
		progress.done()
	}
	if err != nil && len(res.Stops) == 0 && !errors.Is(err, weft.ErrLeaseHeld) {
		switch weft.ErrorCode(err) {
		case weft.EInvalid, weft.ENotFound, weft.EConflict:
			// The message was refused (a terminated thread, an empty message): nothing ran.
			return exit(exitUsage, err)
		}
	}
	interrupted := ctx.Err() != nil
	if err != nil && !interrupted {
		return exit(exitFailure, err)
	}
	redact, err := eng.Redactor(context.WithoutCancel(ctx), th.ID)
	if err != nil {
		return exit(exitFailure, err)
	}
	doc, err := buildDocument(context.WithoutCancel(ctx), store, th.ID, res, script)
	if err != nil {
		return exit(exitFailure, err)
	}
	if f.asJSON {
		b, _ := json.MarshalIndent(doc, "", "  ")
		fmt.Fprintln(stdout, redact(string(b)))
	} else if streamed.Load() {
		fmt.Fprintln(stdout) // the text was shown as it streamed
	} else if doc.Result.Text != "" {
		fmt.Fprintln(stdout, redact(doc.Result.Text))
	}
	switch {
	case interrupted:
		if !f.quiet {
			fmt.Fprintf(stderr, "weft: interrupted: the run of thread %s was stopped (%s); continue it with: weft run %s --thread %s%s\n",
				th.ID, doc.Result.Reason, th.Agent, th.ID, dbFlag(f.db))
		}
		return exit(exitInterrupted, nil)
	case awaiting(doc.Result.Reason):
		if !f.quiet {
			waitingCalls(context.WithoutCancel(ctx), stderr, eng, th.ID, continueFlags(g, f), redact)
		}
		return exit(exitApproval, nil)
	case script != nil && scriptFailed(script, res):
		for _, f := range script.Failures() {
			fmt.Fprintf(stderr, "weft: %s\n", f)
		}
		if script.Strict() && script.Remaining() > 0 {
			fmt.Fprintf(stderr, "weft: model script has %d responses left over (strict)\n", script.Remaining())
		}
		if res.LastLineRedactions > 0 {
			fmt.Fprintf(stderr, "weft: %d secret value(s) reached a model request and were caught by the last redaction pass\n", res.LastLineRedactions)
		}
		return exit(exitScript, nil)
	case !doc.Result.OK:
		if !f.quiet {
			fmt.Fprintf(stderr, "weft: run stopped: %s", doc.Result.Reason)
			if doc.Result.Error != nil {
				fmt.Fprintf(stderr, ": %s", redact(*doc.Result.Error))
			}
			fmt.Fprintln(stderr)
			if doc.Result.Error != nil && script == nil && strings.Contains(*doc.Result.Error, "No API key found") {
				// A thread this command made that holds only the message (its first model call
				// failed) is not kept.
				kept, bg := " --thread "+th.ID, context.WithoutCancel(ctx)
				if n, err := store.CountMessages(bg, th.ID, weft.MessageQuery{}); f.thread == "" && err == nil && n <= 1 &&
					store.DeleteThread(bg, th.ID) == nil {
					kept = ""
				}
				fmt.Fprintf(stderr, "weft: set the key in the environment or the project's .env, or answer the model offline with --model-script FILE%s\n", kept)
			}
		}
		return exit(exitFailure, nil)
	}
	return nil
}

// waitElsewhere waits, polling the store (another process gives no signal), until the queue of a
// thread run elsewhere is empty and its run has stopped.
func waitElsewhere(ctx context.Context, store weft.Store, threadID string) error {
	for {
		t, err := store.Thread(ctx, threadID)
		if err != nil {
			return err
		}
		q, err := store.Queued(ctx, threadID)
		if err != nil {
			return err
		}
		if len(q) == 0 && t.Status != weft.ThreadRunning {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("thread %s: still running in another process when the time limit passed", threadID)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// dbFlag is the --db flag that names a store other than the default ("" for the default).
func dbFlag(db string) string {
	if db == "" || db == defaultDB() {
		return ""
	}
	return " --db " + db
}

func scriptFailed(s *scripted.Provider, res *engine.RunResult) bool {
	return len(s.Failures()) > 0 || (s.Strict() && s.Remaining() > 0 && len(res.Stops) > 0) || res.LastLineRedactions > 0
}

func readMessage(stdin io.Reader, args []string) (string, error) {
	if len(args) < 2 {
		return "", nil
	}
	if args[1] != "-" {
		return args[1], nil
	}
	// One byte over the limit is read, so that a longer message is refused instead of cut.
	b, err := io.ReadAll(io.LimitReader(stdin, weft.MaxMessageBytes+1))
	if err != nil {
		return "", exit(exitUsage, fmt.Errorf("reading the message from standard input: %w", err))
	}
	if len(b) > weft.MaxMessageBytes {
		return "", exit(exitUsage, fmt.Errorf("the message on standard input is over the %s limit; nothing was sent (put large inputs in a file and --attach it)",
			weft.ByteSize(weft.MaxMessageBytes)))
	}
	return strings.TrimRight(string(b), "\n"), nil
}

// parseEnv reads --env K=V values and a dotenv file.
func parseEnv(pairs []string, file string) (map[string]string, error) {
	env := map[string]string{}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--env-file: %w", unwrapPath(err))
		}
		vars, err := parseDotenv(file, data)
		if err != nil {
			return nil, fmt.Errorf("--env-file %w", err)
		}
		for _, v := range vars {
			env[v.name] = v.value
		}
	}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--env %q: want NAME=value", p)
		}
		env[k] = v
	}
	return env, nil
}

// parseArgs reads --args JSON then --arg K=V (V as JSON when it parses, else a string).
func parseArgs(pairs []string, raw string) (map[string]any, error) {
	args := map[string]any{}
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			return nil, fmt.Errorf("--args: not a JSON object: %v", err)
		}
	}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--arg %q: want NAME=value", p)
		}
		var x any
		if json.Unmarshal([]byte(v), &x) == nil {
			args[k] = x
		} else {
			args[k] = v
		}
	}
	return args, nil
}

func readAttachments(paths []string) ([]weft.ToolAttachment, error) {
	var out []weft.ToolAttachment
	if len(paths) > weft.MaxAttachments {
		return nil, fmt.Errorf("--attach: %d files; the limit is %d per message", len(paths), weft.MaxAttachments)
	}
	for _, p := range paths {
		// Refused before reading: a file over the limit is never loaded.
		if fi, err := os.Stat(p); err == nil && fi.Size() > weft.MaxAttachmentBytes {
			return nil, fmt.Errorf("--attach %s: %w", p, weft.LimitError("the file", fi.Size(), weft.MaxAttachmentBytes))
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("--attach %s: %w", p, unwrapPath(err))
		}
		mt := mime.TypeByExtension(filepath.Ext(p))
		if mt == "" {
			mt = "application/octet-stream"
		}
		out = append(out, weft.ToolAttachment{Name: filepath.Base(p), MimeType: mt, Data: data})
	}
	return out, nil
}

func printEvent(w io.Writer, e engine.Event) {
	switch e.Type {
	case "message_chunk", "reasoning_chunk":
		return
	case "message":
		if d, ok := e.Data.(engine.MessageData); ok {
			fmt.Fprintf(w, "[%s] %s: %s\n", e.Type, d.Message.Role, oneLine(d.Message.Content))
		}
		return
	}
	b, _ := json.Marshal(e.Data)
	fmt.Fprintf(w, "[%s] %s\n", e.Type, b)
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
