package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary doubles as the MCP servers the client tests start: with WEFT_MCP_TEST_SERVER
// set it serves on stdio (built with the go-sdk's server API) instead of running tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("WEFT_MCP_TEST_SERVER"); mode != "" {
		serveTestServer(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// onePixelPNG is a valid 1×1 PNG.
var onePixelPNG = []byte{0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00,
	0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0, 0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99,
	0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func raw(schema string) json.RawMessage { return json.RawMessage(schema) }

// serveTestServer runs one of the test servers on stdio.
func serveTestServer(mode string) {
	switch mode {
	case "silent":
		// Reads and never answers: initialize must time out.
		time.Sleep(time.Hour)
		return
	case "garbage":
		// Answers every line with something that is not JSON-RPC.
		buf := make([]byte, 4096)
		for {
			n, err := os.Stdin.Read(buf)
			if err != nil {
				return
			}
			if n > 0 {
				fmt.Fprintln(os.Stdout, "{this is not json-rpc")
			}
		}
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "weft-test-server", Version: "1"}, nil)
	obj := `{"type":"object","properties":{"text":{"type":"string","description":"What to echo"}},"required":["text"]}`
	s.AddTool(&sdk.Tool{Name: "echo", Description: "Echo the text back.", InputSchema: raw(obj)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct{ Text string }
			if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
				return nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + a.Text}, &sdk.TextContent{Text: "done"}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "fail", Description: "Always fails.", InputSchema: raw(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the lookup failed: no such order"}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "picture", Description: "Returns a picture and a resource.", InputSchema: raw(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "here it is"},
				&sdk.ImageContent{Data: onePixelPNG, MIMEType: "image/png"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///notes/readme.txt", MIMEType: "text/plain", Text: "hello notes"}},
			}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "hang", Description: "Never returns.", InputSchema: raw(`{"type":"object"}`)},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			time.Sleep(time.Hour)
			return text("late"), nil
		})
	s.AddTool(&sdk.Tool{Name: "die", Description: "Exits mid-call.", InputSchema: raw(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "fatal: out of cheese")
			os.Exit(3)
			return nil, nil
		})
	s.AddTool(&sdk.Tool{Name: "flood", Description: "Returns 5 MiB of text.", InputSchema: raw(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text(strings.Repeat("x", 5<<20)), nil
		})
	s.AddTool(&sdk.Tool{Name: "odd_schema", Description: "Its schema uses a keyword outside the subset.",
		InputSchema: raw(`{"type":"object","properties":{"a":{"type":"string"}},"patternProperties":{"^x":{"type":"string"}}}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text("should not be called"), nil
		})
	s.AddTool(&sdk.Tool{Name: "grow", Description: "Adds a tool and says the list changed.", InputSchema: raw(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			s.AddTool(&sdk.Tool{Name: "added", Description: "Added later.", InputSchema: raw(`{"type":"object"}`)},
				func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					return text("added works"), nil
				})
			return text("grown"), nil
		})
	s.AddTool(&sdk.Tool{Name: "babble", Description: "Writes a line that is not JSON-RPC to the protocol stream.", InputSchema: raw(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			fmt.Fprintln(os.Stdout, `{"jsonrpc":"2.0","id":`)
			return text("babbled"), nil
		})
	s.AddTool(&sdk.Tool{Name: "whoami", Description: "Reports the environment it sees.", InputSchema: raw(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text(fmt.Sprintf("pid=%d token=%s openai=%s", os.Getpid(), os.Getenv("KB_TOKEN"), os.Getenv("OPENAI_API_KEY"))), nil
		})
	_ = s.Run(context.Background(), &sdk.StdioTransport{})
}
