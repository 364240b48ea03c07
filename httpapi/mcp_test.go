package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearerTransport adds an API key to every request.
type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPSessionBoundToUser (issue 47, row 8): an MCP session opened with alice's key answers
// only alice's key; bob's key (or the admin key) driving alice's Mcp-Session-Id is refused with
// 403, and cannot close it either.
func TestMCPSessionBoundToUser(t *testing.T) {
	e := newEnv(t, envOptions{mcp: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "alice", Version: "1"}, nil)
	// Sessions exist up to the 2025-11-25 revision (2026-07-28 is stateless).
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{e.alice}}}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	session := cs.ID()
	if session == "" {
		t.Fatal("no session id")
	}
	post := func(key, body string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const list = `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`
	cases := []struct {
		who  string
		key  string
		want int
	}{
		{"bob", e.bob, http.StatusForbidden},
		{"admin", e.admin, http.StatusForbidden},
		{"alice", e.alice, http.StatusOK},
	}
	for _, c := range cases {
		if code, body := post(c.key, list); code != c.want {
			t.Errorf("%s driving alice's session: %d, want %d: %s", c.who, code, c.want, body)
		}
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, e.srv.URL+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+e.bob)
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("bob closing alice's session: %d, want 403", resp.StatusCode)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Errorf("alice's session after bob's attempts: %v", err)
	}
}

// TestMCPProtocolVersions: /mcp speaks the 2026-07-28 revision (the go-sdk client's default: it
// probes with server/discover and sends the Mcp-Method header) and the earlier revisions a client
// asks for with initialize, each negotiated as asked.
func TestMCPProtocolVersions(t *testing.T) {
	e := newEnv(t, envOptions{mcp: true})
	for _, version := range []string{"", "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"} {
		t.Run("v="+version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var methods []string
			var mu sync.Mutex
			rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				mu.Lock()
				methods = append(methods, r.Header.Get("Mcp-Method"))
				mu.Unlock()
				return bearerTransport{e.alice}.RoundTrip(r)
			})
			client := sdk.NewClient(&sdk.Implementation{Name: "v", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: rt}},
				&sdk.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			want := version
			if want == "" {
				want = "2026-07-28"
			}
			if got := cs.InitializeResult().ProtocolVersion; got != want {
				t.Fatalf("negotiated %q, want %q", got, want)
			}
			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			seen := strings.Join(methods, ",")
			if want == "2026-07-28" && (!strings.Contains(seen, "server/discover") || !strings.Contains(seen, "tools/list")) {
				t.Errorf("Mcp-Method headers sent: %q", seen)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
