package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// exitApproval: the run stopped before tool calls that wait for a person's decision.
const exitApproval = 6

// decideRequest is a decision `weft threads approve|deny` makes before continuing the thread.
type decideRequest struct {
	call     string
	decision engine.Decision
}

// newDecideCmd builds `weft threads approve` (approve true) or `weft threads deny`: the decision
// is stored and, once no call of the reply waits any more, the thread continues in this process
// as `weft run --thread` would, with run's output.
func newDecideCmd(g *globals, db *string, approve bool) *cobra.Command {
	f := &runFlags{}
	var argsJSON, reason string
	use, short := "deny THREAD CALL", "Deny a tool call waiting for approval; the model reads the reason"
	if approve {
		use, short = "approve THREAD CALL", "Approve a tool call waiting for approval (optionally with edited arguments)"
	}
	c := &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(2),
		Long: short + `.

Once no call of the reply waits any more, the thread continues here and the result is printed as
weft run prints it (exit status as weft run's; 6 when calls still wait for a decision).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			d := engine.Decision{Approve: approve, Reason: reason, By: "cli"}
			if argsJSON != "" {
				if !json.Valid([]byte(argsJSON)) {
					return exit(exitUsage, fmt.Errorf("--args: not valid JSON"))
				}
				d.Arguments = json.RawMessage(argsJSON)
			}
			f.db, f.thread = *db, args[0]
			f.decide = &decideRequest{call: args[1], decision: d}
			if rc := remoteOf(g); rc != nil {
				return rc.decide(cmd, f, args[0], f.decide)
			}
			return runAgent(cmd, g, f, []string{""})
		},
	}
	fl := c.Flags()
	if approve {
		fl.StringVar(&argsJSON, "args", "", "run the call with these arguments (a JSON object) instead of the model's")
	} else {
		fl.StringVar(&reason, "reason", "", "why the call is denied (the model reads it)")
	}
	fl.StringVar(&f.script, "model-script", os.Getenv("WEFT_MODEL_SCRIPT"), "answer every model call from this script (env WEFT_MODEL_SCRIPT)")
	fl.BoolVar(&f.asJSON, "json", false, "print the whole thread as JSON")
	fl.DurationVar(&f.timeout, "timeout", 10*time.Minute, "wall-clock limit; on expiry the run is stopped")
	fl.BoolVar(&f.verbose, "verbose", false, "print run events to stderr")
	fl.BoolVar(&f.quiet, "quiet", false, "print nothing but the result")
	return c
}

// decideFirst stores the requested decision; ready reports that the thread can continue.
func decideFirst(ctx context.Context, eng *engine.Engine, threadID string, req *decideRequest) (bool, error) {
	ready, err := eng.Decide(ctx, threadID, req.call, req.decision)
	if err != nil {
		return false, exit(exitUsage, err)
	}
	return ready, nil
}

// waitingCalls prints the calls that wait for a decision and, for each, the commands that decide
// it, with the call's id and the flags (again, from continueFlags) the continuation needs.
func waitingCalls(ctx context.Context, w io.Writer, eng *engine.Engine, threadID, again string, redact func(string) string) {
	pending, err := eng.PendingApprovals(ctx, threadID)
	if err != nil || len(pending) == 0 {
		return
	}
	verb := "wait"
	if len(pending) == 1 {
		verb = "waits"
	}
	fmt.Fprintf(w, "weft: %s %s for approval:\n", plural(len(pending), "tool call"), verb)
	for _, p := range pending {
		fmt.Fprintf(w, "  %s  %s(%s)\n", p.CallID, p.Name, redact(p.Arguments))
	}
	fmt.Fprintln(w, "decide with:")
	for _, p := range pending {
		fmt.Fprintf(w, "  weft threads approve %s %s%s [--args JSON]\n  weft threads deny %s %s%s [--reason TEXT]\n",
			threadID, shellWord(p.CallID), again, threadID, shellWord(p.CallID), again)
	}
}

// continueFlags are the flags a command that continues the thread needs to see what this run saw:
// the definitions (--dir), the store (--db) and the model script, whose entries the thread's
// earlier calls used are skipped when it continues (resumeScript).
func continueFlags(g *globals, f *runFlags) string {
	var b strings.Builder
	if def := envOr("WEFT_DIR", "agents"); g.dir != "" && g.dir != def {
		b.WriteString(" --dir " + shellWord(g.dir))
	}
	if f.db != "" && f.db != defaultDB() {
		b.WriteString(" --db " + shellWord(f.db))
	}
	if f.script != "" && f.script != os.Getenv("WEFT_MODEL_SCRIPT") {
		b.WriteString(" --model-script " + shellWord(f.script))
	}
	return b.String()
}

// shellWord quotes s for a POSIX shell when it holds anything but plain path characters.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:@=+,%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// pendingRedacted lists the calls the thread waits for (its blocking subagents' included), their
// arguments redacted.
func pendingRedacted(ctx context.Context, eng *engine.Engine, threadID string, redact func(string) string) ([]weft.ToolCallRecord, error) {
	pending, err := eng.PendingApprovals(ctx, threadID)
	if err != nil {
		return nil, err
	}
	for i := range pending {
		pending[i].Arguments = redact(pending[i].Arguments)
	}
	return pending, nil
}

// askApprovals asks, on a terminal, about each waiting call: y approves, e edits the arguments
// first, anything else denies. It returns whether any decision was made.
func askApprovals(ctx context.Context, in io.Reader, out io.Writer, eng *engine.Engine, threadID string, redact func(string) string) (bool, error) {
	pending, err := pendingRedacted(ctx, eng, threadID, redact)
	if err != nil {
		return false, err
	}
	q := &approvalQuestions{pending: pending, by: "cli"}
	decided := false
	sc := bufio.NewScanner(in)
	for !q.done() {
		fmt.Fprint(out, q.prompt())
		line, ok := "", sc.Scan()
		if ok {
			line = sc.Text()
		} else if !q.asksReason() {
			break // a reason is optional: the denial stands without one
		}
		if call, d, ready := q.answer(line); ready {
			if _, err := eng.Decide(ctx, threadID, call, d); err != nil {
				if !q.refused() {
					return decided, err
				}
				fmt.Fprintf(out, "%s\n", err)
			} else {
				decided = true
			}
		}
		if !ok {
			break
		}
	}
	return decided, nil
}

// approvalQuestions asks about the calls waiting for approval one answer at a time, so that weft
// run's terminal and both modes of weft chat ask the same questions: `Approve NAME(ARGS)? [y/N/e]`
// — y approves; e asks for the arguments as JSON, again until the tool's schema accepts them;
// anything else (or nothing) denies and asks for an optional reason the model reads.
type approvalQuestions struct {
	// pending are the waiting calls, their arguments already redacted.
	pending []weft.ToolCallRecord
	// by names the decider on the decisions.
	by string
	// i is the call asked about; stage the question about it.
	i     int
	stage approvalStage
	// last is the decision answer returned last.
	last engine.Decision
}

// approvalStage is the question asked about a call.
type approvalStage int

const (
	askApprove approvalStage = iota
	askArguments
	askReason
)

func (q *approvalQuestions) done() bool { return q.i >= len(q.pending) }

// asksReason tells whether the question is a denial's reason.
func (q *approvalQuestions) asksReason() bool { return !q.done() && q.stage == askReason }

// prompt is the question now ("" when done).
func (q *approvalQuestions) prompt() string {
	if q.done() {
		return ""
	}
	switch q.stage {
	case askArguments:
		return "Arguments (JSON): "
	case askReason:
		return "Reason (optional): "
	}
	p := q.pending[q.i]
	return fmt.Sprintf("Approve %s(%s)? [y/N/e] ", p.Name, p.Arguments)
}

// answer reads an answer to the question. When it completes a decision, it returns it (ready) and
// the next question is asked, unless the caller reports the decision refused (refused).
func (q *approvalQuestions) answer(line string) (callID string, d engine.Decision, ready bool) {
	if q.done() {
		return "", engine.Decision{}, false
	}
	call := q.pending[q.i].CallID
	d = engine.Decision{By: q.by}
	switch q.stage {
	case askApprove:
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			d.Approve = true
		case "e", "edit":
			q.stage = askArguments
			return "", d, false
		default:
			q.stage = askReason
			return "", d, false
		}
	case askArguments:
		d.Approve, d.Arguments = true, json.RawMessage(line)
	case askReason:
		d.Reason = strings.TrimSpace(line)
	}
	q.last = d
	q.i, q.stage = q.i+1, askApprove
	return call, d, true
}

// refused reports that the decision answer returned was not stored. Edited arguments are asked
// for again (it returns true); any other decision is given up and the next call asked about.
func (q *approvalQuestions) refused() bool {
	if !q.last.Approve || q.last.Arguments == nil {
		return false
	}
	q.i, q.stage = q.i-1, askArguments
	return true
}

// interactive tells whether standard input and output are both terminals.
func interactive(in io.Reader, out io.Writer) bool { return isTerminal(in) && isTerminal(out) }

// isTerminal tells whether v is a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// awaiting tells whether a run result parked the thread for approvals.
func awaiting(reason weft.StopReason) bool { return reason == weft.StopAwaitingApproval }
