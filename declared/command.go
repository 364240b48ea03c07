package declared

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/childproc"
)

// errToolTimeout is the cause of a command tool's own time limit ending it.
var errToolTimeout = errors.New("the tool's time limit")

// Command is the handler of a declared command tool (t.Command set): it runs the program without a
// shell, with the arguments as JSON on stdin and, in its environment, what weft.InheritedEnv
// passes on, the tool's declared variables, its env entries and WEFT_THREAD_ID, WEFT_TOOL_CALL_ID
// and WEFT_TOOL_OPTIONS. Its output is the result: a JSON object with a status key as a
// weft.ToolResult, anything else as text. A non-zero exit is an error with the tail of stderr. The
// program runs in its own process group, killed whole when the call's time is up, and on Linux
// dies with the process that started it.
func Command(t *weft.Tool, o Options) weft.ToolHandler {
	return weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
		return runCommand(ctx, st, t, o, args)
	})
}

func runCommand(ctx context.Context, st weft.State, t *weft.Tool, o Options, args []byte) (weft.ToolResult, error) {
	c := t.Command
	timeout := t.Timeout.D()
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errToolTimeout)
	defer cancel()
	argv := make([]string, len(c.Argv))
	for i, a := range c.Argv {
		v, err := expand(ctx, st, a)
		if err != nil {
			return weft.ToolResult{}, err
		}
		argv[i] = v
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if o.Root != "" {
		cmd.Dir = filepath.Join(o.Root, filepath.FromSlash(c.Dir))
	}
	env := weft.InheritedEnv()
	for _, vd := range weft.ToolVariables(t) {
		if v, ok, _ := st.LookupEnv(ctx, vd.Name); ok {
			env = append(env, vd.Name+"="+v)
		}
	}
	keys := make([]string, 0, len(c.Env))
	for k := range c.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := expand(ctx, st, c.Env[k])
		if err != nil {
			return weft.ToolResult{}, err
		}
		env = append(env, k+"="+v)
	}
	var callID string
	var toolOptions map[string]any
	if x := st.Execution(); x != nil {
		if call := x.ToolCall(); call != nil {
			callID = call.ID
		}
		toolOptions = x.ToolOptions()
	}
	opts, _ := json.Marshal(toolOptions)
	env = append(env, "WEFT_THREAD_ID="+st.ThreadID(), "WEFT_TOOL_CALL_ID="+callID, "WEFT_TOOL_OPTIONS="+string(opts))
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(args)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &limitedBuffer{b: &stderr, n: 64 << 10}
	done, err := childproc.Start(cmd)
	if err != nil {
		return weft.ToolResult{}, fmt.Errorf("cannot start %s: %w", argv[0], err)
	}
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = childproc.KillGroup(cmd)
		<-done
		// A caller's deadline for the tool's own timeout (the engine sets one) comes before this
		// function's, so it ends the command without errToolTimeout as the cause.
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, errToolTimeout) || (t.Timeout > 0 && ctx.Err() == context.DeadlineExceeded && o.runErr() == nil):
			return weft.ToolResult{}, fmt.Errorf("command timed out after %s", timeout)
		case o.runErr() == context.DeadlineExceeded:
			return weft.ToolResult{}, errors.New("the run's time limit ended the command before it finished")
		}
		return weft.ToolResult{}, ctx.Err()
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			tail := stderr.Bytes()
			if len(tail) > 2048 {
				tail = tail[len(tail)-2048:]
			}
			if msg := strings.TrimSpace(string(tail)); msg != "" {
				return weft.ToolResult{}, errors.New(msg)
			}
			return weft.ToolResult{}, fmt.Errorf("exit status %d", ee.ExitCode())
		}
		return weft.ToolResult{}, err
	}
	return parseToolOutput(stdout.Bytes()), nil
}

// limitedBuffer keeps the first n bytes written to it and drops the rest, so that a program's
// stderr cannot grow without bound.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
