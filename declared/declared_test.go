package declared_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/declared"
)

// state is the part of weft.State a declared tool reads: the thread's id, its variables and the
// call being executed.
type state struct {
	weft.State
	env map[string]string
}

func (s *state) ThreadID() string { return "thr_1" }
func (s *state) LookupEnv(_ context.Context, name string) (string, bool, error) {
	v, ok := s.env[name]
	return v, ok, nil
}
func (s *state) Execution() weft.Execution { return execution{} }

type execution struct{ weft.Execution }

func (execution) ToolCall() *weft.ToolCall    { return &weft.ToolCall{ID: "call_1"} }
func (execution) ToolOptions() map[string]any { return map[string]any{"mode": "fast"} }

func call(t *testing.T, h weft.ToolHandler, ctx context.Context, args string) (weft.ToolResult, string) {
	t.Helper()
	res, err := h.Call(ctx, &state{env: map[string]string{"WHO": "world", "TOKEN": "s3cr3t"}}, json.RawMessage(args))
	if err != nil {
		return res, err.Error()
	}
	return res, ""
}

func TestCommand(t *testing.T) {
	cases := []struct {
		name    string
		argv    []string
		timeout time.Duration
		args    string
		want    weft.ToolResult
		wantErr string
	}{
		{"stdin and env", []string{"sh", "-c", `printf '%s %s %s %s %s' "$(cat)" "$GREETING" "$WEFT_THREAD_ID" "$WEFT_TOOL_CALL_ID" "$WEFT_TOOL_OPTIONS"`}, 0, `{"a":1}`,
			weft.Success(`{"a":1} hello world thr_1 call_1 {"mode":"fast"}`), ""},
		{"argv expanded", []string{"echo", "${env:WHO}", "${env:NOPE:there}"}, 0, `{}`, weft.Success("world there"), ""},
		{"a status object is a result", []string{"echo", `{"status":"error","error":"no such order"}`}, 0, `{}`,
			weft.ToolResult{Status: weft.ToolError, Error: "no such order"}, ""},
		{"stderr tail on failure", []string{"sh", "-c", "echo bad input >&2; exit 3"}, 0, `{}`, weft.ToolResult{}, "bad input"},
		{"exit status without stderr", []string{"sh", "-c", "exit 4"}, 0, `{}`, weft.ToolResult{}, "exit status 4"},
		{"own timeout", []string{"sleep", "5"}, 50 * time.Millisecond, `{}`, weft.ToolResult{}, "command timed out after 50ms"},
		{"missing program", []string{"/no/such/program"}, 0, `{}`, weft.ToolResult{}, "cannot start /no/such/program"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tool := &weft.Tool{Name: "t", Description: "d", Timeout: weft.Duration(tc.timeout),
				Command: &weft.CommandSpec{Argv: tc.argv, Env: map[string]string{"GREETING": "hello ${env:WHO}"}}}
			start := time.Now()
			got, err := call(t, declared.Command(tool, declared.Options{}), context.Background(), tc.args)
			if !strings.Contains(err, tc.wantErr) || (tc.wantErr == "" && err != "") {
				t.Fatalf("error %q, want %q", err, tc.wantErr)
			}
			if tc.wantErr == "" && (got.Status != tc.want.Status || got.Result != tc.want.Result || got.Error != tc.want.Error) {
				t.Errorf("result %+v, want %+v", got, tc.want)
			}
			if time.Since(start) > 3*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
		})
	}
}

// TestCommandRunDeadline: when the run's own deadline ends a command, the result says so.
func TestCommandRunDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	tool := &weft.Tool{Name: "t", Description: "d", Command: &weft.CommandSpec{Argv: []string{"sleep", "5"}}}
	_, err := call(t, declared.Command(tool, declared.Options{RunErr: ctx.Err}), ctx, `{}`)
	if err != "the run's time limit ended the command before it finished" {
		t.Errorf("error %q", err)
	}
}

func TestHTTP(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s %s key=%s type=%s", r.Method, r.URL.Path, body, r.Header.Get("X-Key"), r.Header.Get("Content-Type")))
		if r.URL.RawQuery != "" {
			seen[len(seen)-1] += " ?" + r.URL.RawQuery
		}
		mu.Unlock()
		switch r.URL.Path {
		case "/fail":
			http.Error(w, "nope", http.StatusTeapot)
		case "/status":
			fmt.Fprint(w, `{"status":"error","error":"out of stock"}`)
		default:
			fmt.Fprint(w, " ok ")
		}
	}))
	defer srv.Close()
	cases := []struct {
		name, method, path, args string
		want                     weft.ToolResult
		wantErr, wantSeen        string
	}{
		{"post", "", "/items", `{"title":"x","n":12345678901234567890}`, weft.Success("ok"), "",
			`POST /items {"title":"x","n":12345678901234567890} key=s3cr3t type=application/json`},
		{"get", "GET", "/items", `{"q":"a b","n":12345678901234567890,"tags":["x"],"none":null}`, weft.Success("ok"), "",
			`GET /items  key=s3cr3t type= ?n=12345678901234567890&q=a+b&tags=%5B%22x%22%5D`},
		{"status object", "", "/status", `{}`, weft.ToolResult{Status: weft.ToolError, Error: "out of stock"}, "", ""},
		{"http error", "", "/fail", `{}`, weft.ToolResult{}, "HTTP 418: nope", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			tool := &weft.Tool{Name: "t", Description: "d", HTTP: &weft.HTTPSpec{URL: srv.URL + tc.path, Method: tc.method,
				Headers: map[string]string{"X-Key": "${env:TOKEN}"}}}
			got, err := call(t, declared.HTTP(tool, declared.Options{}), context.Background(), tc.args)
			if !strings.Contains(err, tc.wantErr) || (tc.wantErr == "" && err != "") {
				t.Fatalf("error %q, want %q", err, tc.wantErr)
			}
			if tc.wantErr == "" && (got.Status != tc.want.Status || got.Result != tc.want.Result || got.Error != tc.want.Error) {
				t.Errorf("result %+v, want %+v", got, tc.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if tc.wantSeen != "" && (len(seen) != 1 || seen[0] != tc.wantSeen) {
				t.Errorf("server saw %q, want %q", seen, tc.wantSeen)
			}
		})
	}
}

// TestHTTPRedacts: a failed request's error, which may quote where it went (a host named by a
// secret variable), goes through Redact.
func TestHTTPRedacts(t *testing.T) {
	tool := &weft.Tool{Name: "t", Description: "d", HTTP: &weft.HTTPSpec{URL: "http://127.0.0.1:1/x"}}
	redact := func(s string) string { return strings.ReplaceAll(s, "127.0.0.1", "[redacted]") }
	_, err := call(t, declared.HTTP(tool, declared.Options{Redact: redact}), context.Background(), `{}`)
	if !strings.HasPrefix(err, "request failed: ") || strings.Contains(err, "127.0.0.1") || !strings.Contains(err, "[redacted]") {
		t.Errorf("error %q", err)
	}
}
