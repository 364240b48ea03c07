package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/mcp"
)

// testServer declares the test binary as a stdio MCP server in the given mode.
func testServer(mode string) *weft.MCPServer {
	return &weft.MCPServer{Name: "t_" + mode, Command: []string{os.Args[0]}, Env: map[string]string{"WEFT_MCP_TEST_SERVER": mode}}
}

func env(vals map[string]string) weft.EnvLookup {
	return func(name string) (string, bool, bool) { v, ok := vals[name]; return v, true, ok }
}

func newClient(t *testing.T, opt mcp.ClientOptions) *mcp.Client {
	t.Helper()
	c := mcp.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestClientStdio drives a real server process built with the go-sdk's server API: listing with
// the schema check, a call, an error result, an image and a resource, a server that dies mid-call
// (and its restart), a call that hangs (bounded by the context) and a list change.
func TestClientStdio(t *testing.T) {
	c := newClient(t, mcp.ClientOptions{})
	srv := testServer("normal")
	srv.Prefix = "t_"
	ctx := context.Background()
	tools, err := c.Tools(ctx, srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]weft.MCPTool{}
	for _, tl := range tools {
		byName[tl.Remote] = tl
	}
	echo := byName["echo"]
	if echo.Name != "t_echo" || echo.Description != "Echo the text back." || echo.Args == nil || echo.Args.Properties["text"] == nil || echo.Problem != "" {
		t.Fatalf("echo listed as %+v", echo)
	}
	if odd := byName["odd_schema"]; odd.Args != nil || !strings.Contains(odd.Problem, "patternProperties") {
		t.Fatalf("a schema outside the subset must be reported, got %+v", odd)
	}
	if fail := byName["fail"]; fail.Args != nil || fail.Problem != "" {
		t.Fatalf("an empty object schema is a tool without arguments, got %+v", fail)
	}

	cases := []struct {
		tool, args string
		status     weft.ToolStatus
		text       string
		atts       []string // name:mime
	}{
		{"echo", `{"text":"hi"}`, weft.ToolSuccess, "echo: hi\ndone", nil},
		{"fail", `{}`, weft.ToolError, "the lookup failed: no such order", nil},
		{"picture", `{}`, weft.ToolSuccess, "here it is", []string{"image-2.png:image/png", "readme.txt:text/plain"}},
	}
	for _, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			res, err := c.Call(ctx, srv, tc.tool, json.RawMessage(tc.args), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := res.Result
			if res.Status == weft.ToolError {
				got = res.Error
			}
			if res.Status != tc.status || got != tc.text {
				t.Fatalf("got %s %q, want %s %q", res.Status, got, tc.status, tc.text)
			}
			var atts []string
			for _, a := range res.Attachments {
				atts = append(atts, a.Name+":"+a.MimeType)
				if len(a.Data) == 0 {
					t.Errorf("attachment %s has no data", a.Name)
				}
			}
			if strings.Join(atts, ",") != strings.Join(tc.atts, ",") {
				t.Fatalf("attachments %v, want %v", atts, tc.atts)
			}
		})
	}

	t.Run("dies mid-call, then restarts", func(t *testing.T) {
		before, err := c.Call(ctx, srv, "whoami", json.RawMessage(`{}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Call(ctx, srv, "die", json.RawMessage(`{}`), nil)
		if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "out of cheese") {
			t.Fatalf("want an error naming the exit and stderr, got %v", err)
		}
		after, err := c.Call(ctx, srv, "whoami", json.RawMessage(`{}`), nil)
		if err != nil {
			t.Fatalf("the server was not restarted: %v", err)
		}
		if before.Result == after.Result {
			t.Fatalf("same process before and after the crash: %s", after.Result)
		}
	})

	t.Run("hang is bounded by the context", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.Call(cctx, srv, "hang", json.RawMessage(`{}`), nil)
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
			t.Fatalf("err %v after %s", err, time.Since(start))
		}
		if _, err := c.Call(ctx, srv, "echo", json.RawMessage(`{"text":"still"}`), nil); err != nil {
			t.Fatalf("the session must survive a timed-out call: %v", err)
		}
	})

	t.Run("malformed JSON-RPC mid-session", func(t *testing.T) {
		// The broken line swallows the answer: the call ends at its deadline (the engine's tool
		// timeout), the next request reads garbage and fails clearly, and the one after gets a
		// fresh server.
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if _, err := c.Call(cctx, srv, "babble", json.RawMessage(`{}`), nil); err == nil {
			t.Fatal("babble's answer was swallowed, yet the call succeeded")
		}
		// The SDK may notice the garbage before or after this call is sent: the call fails with
		// the protocol error, or with the connection the SDK closed because of it.
		_, err := c.Call(ctx, srv, "echo", json.RawMessage(`{"text":"lost"}`), nil)
		if err == nil || !(strings.Contains(err.Error(), "broke the protocol") || strings.Contains(err.Error(), "closed the connection")) {
			t.Fatalf("want a protocol error, got %v", err)
		}
		res, err := c.Call(ctx, srv, "echo", json.RawMessage(`{"text":"after"}`), nil)
		if err != nil || res.Result != "echo: after\ndone" {
			t.Fatalf("after a malformed line: %+v %v", res, err)
		}
	})

	t.Run("list changed", func(t *testing.T) {
		if _, err := c.Call(ctx, srv, "grow", json.RawMessage(`{}`), nil); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			tools, err := c.Tools(ctx, srv, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, tl := range tools {
				if tl.Remote == "added" {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the listing was not refreshed after tools/list_changed: %v", tools)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// TestClientBadServers: a server that never answers, one that answers garbage and a command that
// does not exist all fail with a clear error within the connect timeout; nothing hangs.
func TestClientBadServers(t *testing.T) {
	c := newClient(t, mcp.ClientOptions{ConnectTimeout: 500 * time.Millisecond})
	cases := []struct {
		srv  *weft.MCPServer
		want string
	}{
		{testServer("silent"), "no answer to initialize within 500ms"},
		{testServer("garbage"), "could not be started"},
		{&weft.MCPServer{Name: "nope", Command: []string{"weft-no-such-mcp-server"}}, `program "weft-no-such-mcp-server" not found in PATH`},
	}
	for _, tc := range cases {
		t.Run(tc.srv.Name, func(t *testing.T) {
			start := time.Now()
			_, err := c.Tools(context.Background(), tc.srv, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("took %s", d)
			}
			// A failed start is remembered for a moment: the next step does not wait again.
			start = time.Now()
			if _, err := c.Tools(context.Background(), tc.srv, nil); err == nil || time.Since(start) > 100*time.Millisecond {
				t.Fatalf("second attempt: %v after %s", err, time.Since(start))
			}
		})
	}
}

// TestClientEnvironment: a stdio server sees its declared variables, resolved from the thread
// env, and none of Weft's provider keys; each resolved configuration gets its own session.
func TestClientEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-process-secret")
	c := newClient(t, mcp.ClientOptions{})
	srv := testServer("normal")
	srv.Env["KB_TOKEN"] = "${env:KB_TOKEN}"
	srv.Variables = []weft.VariableDefinition{{Name: "KB_TOKEN", Type: weft.VarSecret}}
	res, err := c.Call(context.Background(), srv, "whoami", json.RawMessage(`{}`), env(map[string]string{"KB_TOKEN": "tok-1"}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Result, "token=tok-1 ") || !strings.HasSuffix(res.Result, "openai=") {
		t.Fatalf("server saw %q", res.Result)
	}
	other, err := c.Call(context.Background(), srv, "whoami", json.RawMessage(`{}`), env(map[string]string{"KB_TOKEN": "tok-2"}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(other.Result, "token=tok-2 ") {
		t.Fatalf("server saw %q", other.Result)
	}
}

// TestClientClose: closing the client stops its stdio servers.
func TestClientClose(t *testing.T) {
	c := mcp.NewClient(mcp.ClientOptions{})
	res, err := c.Call(context.Background(), testServer("normal"), "whoami", json.RawMessage(`{}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmtSscanf(res.Result, &pid); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("server %d still runs after Close", pid)
	}
	if _, err := c.Tools(context.Background(), testServer("normal"), nil); err == nil {
		t.Fatal("a closed client must not start servers")
	}
}

// TestClientStreamableHTTP: a streamable-HTTP server gets the declared headers (resolved from the
// env); errors never show their values.
func TestClientStreamableHTTP(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "http-test", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "auth", Description: "Says which token it got.", InputSchema: raw(`{"type":"object"}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text("got " + req.Extra.Header.Get("Authorization")), nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret-token" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close) // after the client's sessions end (cleanups run last-in first-out)
	c := newClient(t, mcp.ClientOptions{})
	srv := &weft.MCPServer{Name: "remote", URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer ${env:TOKEN}"}}
	res, err := c.Call(context.Background(), srv, "auth", json.RawMessage(`{}`), env(map[string]string{"TOKEN": "s3cret-token"}))
	if err != nil || res.Result != "got Bearer s3cret-token" {
		t.Fatalf("%+v %v", res, err)
	}
	_, err = c.Tools(context.Background(), srv, env(map[string]string{"TOKEN": "wrong-secret-value"}))
	if err == nil || strings.Contains(err.Error(), "wrong-secret-value") {
		t.Fatalf("want an error without the header's value, got %v", err)
	}
}

// TestClientScrubsSecrets: a transport error that quotes the URL never shows a secret the URL was
// built from.
func TestClientScrubsSecrets(t *testing.T) {
	c := newClient(t, mcp.ClientOptions{ConnectTimeout: 2 * time.Second})
	srv := &weft.MCPServer{Name: "remote", URL: "http://127.0.0.1:1/mcp?key=${env:KEY}"}
	_, err := c.Tools(context.Background(), srv, env(map[string]string{"KEY": "very-secret-key"}))
	if err == nil || strings.Contains(err.Error(), "very-secret-key") || !strings.Contains(err.Error(), "key=[redacted]") {
		t.Fatalf("want a scrubbed error naming the server, got %v", err)
	}
}
