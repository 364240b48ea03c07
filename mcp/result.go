package mcp

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-agents/weft"
)

// convertResult maps a tool reply to a ToolResult: text parts joined by
// "\n"; images, audio and embedded resources as attachments; resource links as text; structured
// content as JSON text when nothing else came; isError as an error result.
func convertResult(res *sdk.CallToolResult) weft.ToolResult {
	var texts []string
	var atts []weft.ToolAttachment
	for i, c := range res.Content {
		switch x := c.(type) {
		case *sdk.TextContent:
			texts = append(texts, x.Text)
		case *sdk.ImageContent:
			mt := mediaType(x.MIMEType, "image/png")
			atts = append(atts, weft.ToolAttachment{Name: fmt.Sprintf("image-%d%s", i+1, weft.ExtByMIME(mt)), MimeType: mt, Data: x.Data})
		case *sdk.AudioContent:
			mt := mediaType(x.MIMEType, "application/octet-stream")
			atts = append(atts, weft.ToolAttachment{Name: fmt.Sprintf("audio-%d%s", i+1, weft.ExtByMIME(mt)), MimeType: mt, Data: x.Data})
		case *sdk.EmbeddedResource:
			if r := x.Resource; r != nil {
				atts = append(atts, resourceAttachment(i, r))
			}
		case *sdk.ResourceLink:
			link := "Resource: " + x.URI
			if x.Name != "" {
				link = "Resource " + x.Name + ": " + x.URI
			}
			texts = append(texts, link)
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			texts = append(texts, string(b))
		}
	}
	text := strings.Join(texts, "\n")
	if res.IsError {
		if strings.TrimSpace(text) == "" {
			text = "the MCP server reported an error without a message"
		}
		return weft.ToolResult{Status: weft.ToolError, Error: text, Attachments: atts}
	}
	return weft.ToolResult{Status: weft.ToolSuccess, Result: text, Attachments: atts}
}

// resourceAttachment stores an embedded resource as a file named after its URI.
func resourceAttachment(i int, r *sdk.ResourceContents) weft.ToolAttachment {
	mt := r.MIMEType
	data := r.Blob
	if data == nil {
		data = []byte(r.Text)
		if mt == "" {
			mt = "text/plain"
		}
	}
	if mt == "" {
		mt = "application/octet-stream"
	}
	name := path.Base(strings.TrimRight(r.URI, "/"))
	if j := strings.IndexAny(name, "?#"); j >= 0 {
		name = name[:j]
	}
	if name == "" || name == "." || name == "/" || strings.Contains(name, ":") {
		name = fmt.Sprintf("resource-%d%s", i+1, weft.ExtByMIME(mt))
	} else if path.Ext(name) == "" {
		name += weft.ExtByMIME(mt)
	}
	return weft.ToolAttachment{Name: name, MimeType: mt, Data: data, Description: r.URI}
}

// mediaType is a server's media type, or def when it sent none.
func mediaType(mt, def string) string {
	if strings.TrimSpace(mt) == "" {
		return def
	}
	return mt
}
