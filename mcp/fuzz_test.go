package mcp

import (
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

// FuzzToolListing feeds arbitrary tools/list entries (a server's JSON) to the listing's schema
// check: it never panics, and a tool it accepts has a schema Weft's validator compiles.
func FuzzToolListing(f *testing.F) {
	for _, s := range []string{
		`{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}`,
		`{"name":"x","inputSchema":{"type":"object"}}`,
		`{"name":"x","inputSchema":{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"type":"integer","minimum":1}}}}`,
		`{"name":"x","inputSchema":{"type":"object","patternProperties":{"^x":{}}}}`,
		`{"name":"x","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"b":{"type":"boolean"}},"properties":{"b":{"$ref":"#/definitions/b"}}}}`,
		`{"name":"x","inputSchema":{"type":"string"}}`,
		`{"name":"x","inputSchema":null}`,
		`{"name":"x","inputSchema":{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"$ref":"#/$defs/a"}}}}`,
	} {
		f.Add([]byte(s))
	}
	srv := &weft.MCPServer{Name: "s", Prefix: "p_"}
	f.Fuzz(func(t *testing.T, data []byte) {
		var tool sdk.Tool
		if json.Unmarshal(data, &tool) != nil {
			return
		}
		got := convertTool(srv, &tool)
		if got.Name != "p_"+tool.Name || got.Description == "" {
			t.Fatalf("converted %+v", got)
		}
		if got.Problem != "" && got.Args != nil {
			t.Fatalf("a tool with a problem has a schema: %+v", got)
		}
		if got.Problem == "" && got.Args != nil {
			if _, err := schema.Compile(got.Args); err != nil {
				t.Fatalf("accepted schema does not compile: %v\n%s", err, data)
			}
		}
	})
}

// FuzzCallResult feeds arbitrary tools/call results to the mapping: it never panics, isError is
// always an error result, and every attachment has a name and a media type.
func FuzzCallResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`,
		`{"content":[{"type":"text","text":"boom"}],"isError":true}`,
		`{"content":[],"isError":true}`,
		`{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///a/b.txt","text":"hi"}}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"x:","blob":"AAEC","mimeType":"application/weird"}}]}`,
		`{"content":[{"type":"resource_link","uri":"file:///x","name":"x"}]}`,
		`{"content":[],"structuredContent":{"a":1}}`,
		`{"content":[{"type":"audio","data":"AAAA","mimeType":"audio/wav"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var res sdk.CallToolResult
		if json.Unmarshal(data, &res) != nil {
			return
		}
		got := convertResult(&res)
		if res.IsError != (got.Status == weft.ToolError) || (got.Status == weft.ToolError && got.Error == "") {
			t.Fatalf("isError %v mapped to %+v", res.IsError, got)
		}
		for _, a := range got.Attachments {
			if a.Name == "" || a.MimeType == "" {
				t.Fatalf("attachment without a name or type: %+v", a)
			}
		}
	})
}
