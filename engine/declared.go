package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/weft-agents/weft"
)

// defaultToolTimeout bounds declarative tools without a timeout.
const defaultToolTimeout = 60 * time.Second

// errToolTimeout is the cause of a command tool's own time limit ending it.
var errToolTimeout = errors.New("the tool's time limit")

// expand resolves ${env:NAME} (and ${env:NAME:default}) from the thread env at call time.
func (s *threadState) expand(ctx context.Context, v string) (string, error) {
	return weft.ExpandEnv(v, func(name string) (string, bool, error) { return s.LookupEnv(ctx, name) })
}

// runCommand runs a declarative command tool: no shell, args JSON on stdin, declared variables in
// the environment; a non-zero exit is an error with the tail of stderr.
func (r *run) runCommand(ctx context.Context, st *threadState, t *weft.Tool, args []byte) (weft.ToolResult, error) {
	c := t.Command
	timeout := t.Timeout.D()
	if timeout == 0 {
		timeout = defaultToolTimeout
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errToolTimeout)
		defer cancel()
	}
	argv := make([]string, len(c.Argv))
	for i, a := range c.Argv {
		v, err := st.expand(ctx, a)
		if err != nil {
			return weft.ToolResult{}, err
		}
		argv[i] = v
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if root := r.e.reg.Root; root != "" {
		cmd.Dir = filepath.Join(root, filepath.FromSlash(c.Dir))
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
		v, err := st.expand(ctx, c.Env[k])
		if err != nil {
			return weft.ToolResult{}, err
		}
		env = append(env, k+"="+v)
	}
	opts, _ := json.Marshal(st.exec.ToolOptions())
	env = append(env, "WEFT_THREAD_ID="+st.thread.ID, "WEFT_TOOL_CALL_ID="+st.exec.call.ID, "WEFT_TOOL_OPTIONS="+string(opts))
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(args)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &limitedBuffer{b: &stderr, n: 64 << 10}
	cmd.SysProcAttr = toolProcAttr()
	// The goroutine that starts the tool waits for it on the same OS thread (Pdeathsig).
	started := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		defer pinThread()()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return weft.ToolResult{}, fmt.Errorf("cannot start %s: %w", argv[0], errors.Unwrap(err))
	}
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, errToolTimeout) || (t.Timeout > 0 && ctx.Err() == context.DeadlineExceeded && r.ctx.Err() == nil):
			return weft.ToolResult{}, fmt.Errorf("command timed out after %s", timeout)
		case r.ctx.Err() == context.DeadlineExceeded:
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

// parseToolOutput reads a JSON object with a status key as a ToolResult, anything else as text.
func parseToolOutput(out []byte) weft.ToolResult {
	trimmed := bytes.TrimSpace(out)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var probe map[string]json.RawMessage
		if json.Unmarshal(trimmed, &probe) == nil {
			if _, ok := probe["status"]; ok {
				var res weft.ToolResult
				if json.Unmarshal(trimmed, &res) == nil && (res.Status == weft.ToolSuccess || res.Status == weft.ToolError) {
					return res
				}
			}
		}
	}
	return weft.Success(string(trimmed))
}

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

// maxHTTPToolResponse bounds an http tool's response body; a longer one is refused, not cut.
const maxHTTPToolResponse = 8 << 20

// httpToolClient sends declarative http tools' requests. It follows redirects only within the
// tool's own host: the declared headers (often a secret key) must never reach another host, and
// Go's client forwards custom headers to any redirect target (it strips only Authorization and
// cookies there).
var httpToolClient = &http.Client{
	CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if from := via[0].URL; req.URL.Scheme != from.Scheme || req.URL.Host != from.Host {
			return &crossHostRedirect{from: from.Scheme + "://" + from.Host, to: req.URL.Scheme + "://" + req.URL.Host}
		}
		return nil
	},
}

// crossHostRedirect refuses a redirect that leaves the tool's host.
type crossHostRedirect struct{ from, to string }

func (e *crossHostRedirect) Error() string {
	return fmt.Sprintf("the tool's URL redirected from %s to %s; an http tool follows redirects only within its own host, "+
		"so its headers never reach another (point the tool at the final URL)", e.from, e.to)
}

// runHTTP calls a declarative http tool: POST sends the args as JSON, GET as query parameters.
func (r *run) runHTTP(ctx context.Context, st *threadState, t *weft.Tool, args map[string]any) (weft.ToolResult, error) {
	h := t.HTTP
	if t.Timeout == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultToolTimeout)
		defer cancel()
	}
	u, err := st.expand(ctx, h.URL)
	if err != nil {
		return weft.ToolResult{}, err
	}
	method := strings.ToUpper(h.Method)
	if method == "" {
		method = http.MethodPost
	}
	var body io.Reader
	if method == http.MethodGet {
		pu, err := url.Parse(u)
		if err != nil {
			return weft.ToolResult{}, fmt.Errorf("invalid url: %w", err)
		}
		q := pu.Query()
		for k, v := range args {
			switch x := v.(type) {
			case string:
				q.Set(k, x)
			case nil:
			default:
				b, _ := json.Marshal(x)
				q.Set(k, strings.Trim(string(b), `"`))
			}
		}
		pu.RawQuery = q.Encode()
		u = pu.String()
	} else {
		b, _ := json.Marshal(args)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return weft.ToolResult{}, fmt.Errorf("invalid request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range h.Headers {
		ev, err := st.expand(ctx, v)
		if err != nil {
			return weft.ToolResult{}, err
		}
		req.Header.Set(k, ev)
	}
	resp, err := httpToolClient.Do(req)
	if err != nil {
		var cross *crossHostRedirect
		switch {
		case errors.As(err, &cross):
			return weft.ToolResult{}, cross
		case ctx.Err() == context.DeadlineExceeded:
			return weft.ToolResult{}, fmt.Errorf("request timed out")
		}
		return weft.ToolResult{}, fmt.Errorf("request failed: %s", r.red.Error(errors.Unwrap(err)))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxHTTPToolResponse+1))
	if err != nil {
		return weft.ToolResult{}, fmt.Errorf("reading the response: %w", err)
	}
	if len(data) > maxHTTPToolResponse {
		return weft.ToolResult{}, fmt.Errorf("the response is over the %s limit of an http tool; nothing of it was kept",
			weft.ByteSize(maxHTTPToolResponse))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		snippet := data
		if len(snippet) > 1024 {
			snippet = snippet[:1024]
		}
		return weft.ToolResult{}, fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(snippet)))
	}
	return parseToolOutput(data), nil
}
