package mcp_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/weft-agents/weft/mcp"
)

// BenchmarkClientCall measures one tools/call round trip to a stdio server (the test binary as a
// go-sdk server), the session already started.
func BenchmarkClientCall(b *testing.B) {
	c := mcp.NewClient(mcp.ClientOptions{})
	defer c.Close()
	srv := testServer("normal")
	args := json.RawMessage(`{"text":"hi"}`)
	ctx := context.Background()
	if _, err := c.Call(ctx, srv, "echo", args, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Call(ctx, srv, "echo", args, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClientTools measures a cached listing (what each step that offers MCP tools pays).
func BenchmarkClientTools(b *testing.B) {
	c := mcp.NewClient(mcp.ClientOptions{})
	defer c.Close()
	srv := testServer("normal")
	ctx := context.Background()
	if _, err := c.Tools(ctx, srv, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Tools(ctx, srv, nil); err != nil {
			b.Fatal(err)
		}
	}
}
