package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/schema"
)

// addPrompts offers each prompt that may be used as a tool (exposeAsTool not false) as an MCP
// prompt: its arguments are the properties of its requiredSchema (a .prompty file's inputs);
// prompts/get renders it as `weft render` does and returns the messages.
func addPrompts(s *sdk.Server, eng *engine.Engine) {
	for _, p := range eng.Registry().Prompts() {
		if !p.Exposed() || strings.HasPrefix(p.Name, "_") {
			continue
		}
		s.AddPrompt(&sdk.Prompt{Name: p.Name, Description: p.ToolDescription, Arguments: promptArguments(p.RequiredSchema)},
			func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
				return getPrompt(ctx, eng, p, req.Params.Arguments)
			})
	}
}

// promptArguments lists an object schema's properties in their declared order (else by name).
func promptArguments(s *schema.Schema) []*sdk.PromptArgument {
	if s == nil || len(s.Properties) == 0 {
		return nil
	}
	names := slices.Clone(s.PropertyOrder)
	var rest []string
	for name := range s.Properties {
		if !slices.Contains(names, name) {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	names = append(names, rest...)
	out := make([]*sdk.PromptArgument, 0, len(names))
	for _, name := range names {
		ps, ok := s.Properties[name]
		if !ok {
			continue
		}
		arg := &sdk.PromptArgument{Name: name, Required: slices.Contains(s.Required, name)}
		if ps != nil {
			arg.Title, arg.Description = ps.Title, ps.Description
		}
		out = append(out, arg)
	}
	return out
}

// promptArgs converts MCP's string arguments to the values the schema asks for: a property that
// is not a string is read as JSON when it parses (so "3" is a number and "[1,2]" an array), else
// kept as text for the schema to judge.
func promptArgs(s *schema.Schema, in map[string]string) map[string]any {
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = v
		if s == nil {
			continue
		}
		ps := s.Properties[k]
		if ps == nil || ps.Type == "string" {
			continue
		}
		var parsed any
		if err := json.Unmarshal([]byte(v), &parsed); err == nil {
			out[k] = parsed
		}
	}
	return out
}

// getPrompt renders p with the arguments; invalid arguments are an invalid-params error naming the
// rule broken. MCP prompt messages are user or assistant: the system text comes first as a user
// message.
func getPrompt(ctx context.Context, eng *engine.Engine, p *weft.Prompt, args map[string]string) (*sdk.GetPromptResult, error) {
	req, err := eng.Preview(ctx, engine.PreviewInput{Prompt: p.Name, Args: promptArgs(p.RequiredSchema, args)})
	if err != nil {
		code := int64(jsonrpc.CodeInternalError)
		if c := weft.ErrorCode(err); c == weft.EInvalid || c == weft.EMissingVariables {
			code = jsonrpc.CodeInvalidParams
		}
		return nil, &jsonrpc.Error{Code: code, Message: fmt.Sprintf("prompt %s: %v", p.Name, err)}
	}
	res := &sdk.GetPromptResult{Description: p.ToolDescription, Messages: []*sdk.PromptMessage{}}
	for _, m := range req.Messages {
		role := sdk.Role("user")
		if m.Role == weft.RoleAssistant {
			role = "assistant"
		}
		if len(m.Parts) == 0 {
			if m.Content != "" || len(m.ToolCalls) == 0 {
				res.Messages = append(res.Messages, &sdk.PromptMessage{Role: role, Content: &sdk.TextContent{Text: m.Content}})
			}
			continue
		}
		for _, part := range m.Parts {
			res.Messages = append(res.Messages, &sdk.PromptMessage{Role: role, Content: partContent(part)})
		}
	}
	return res, nil
}

// partContent maps a message part: text as text, an inline (data:) image as an image, any other
// media as a link to where it is.
func partContent(p weft.ContentPart) sdk.Content {
	if p.Type == weft.PartText {
		return &sdk.TextContent{Text: p.Text}
	}
	if d, ok := weft.ParseDataURI(p.URL); ok && d.Base64 && strings.HasPrefix(d.MediaType, "image/") {
		if data, err := base64.StdEncoding.DecodeString(d.Data); err == nil {
			return &sdk.ImageContent{MIMEType: d.MediaType, Data: data}
		}
	}
	return &sdk.ResourceLink{URI: p.URL, Name: p.Description, MIMEType: p.MimeType}
}
