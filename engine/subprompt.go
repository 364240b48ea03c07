package engine

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/weft-agents/weft"
)

// subPromptSteps caps a sub-prompt's nested run when it is not an agent side (Δref 10).
const subPromptSteps = 25

// callSubPrompt runs a prompt as a tool: a nested run in the caller's thread at depth+1 whose rows
// hang under the caller's tool message and stay invisible to the caller; it loops until a reply
// without tool calls and returns one string shaped by the entry's include* keys (execution.md §8).
func (r *run) callSubPrompt(caller *scope, o *offered, c weft.ToolCall, args map[string]any, parentID string) weft.ToolResult {
	p := o.target.Prompt
	e := o.entry
	s, err := r.newScope(p, caller.depth+1, caller.side, args)
	if err != nil {
		return weft.Failure(fmt.Sprintf("Sub-prompt %q failed: %v", p.Name, err))
	}
	// The nested rows hang under the caller's (pre-allocated) tool message id; its effects are the
	// caller's step's.
	s.parentID, s.fx = parentID, caller.fx
	init, err := r.initMessage(s, e, args)
	if err != nil {
		return weft.Failure(fmt.Sprintf("Sub-prompt %q failed: %v", p.Name, err))
	}
	if init != nil {
		if err := r.tx(func(tx weft.Tx) error { return tx.InsertMessage(init) }); err != nil {
			return weft.Failure(fmt.Sprintf("Sub-prompt %q failed: %v", p.Name, err))
		}
		r.addRow(*init)
		s.nested = append(s.nested, *init)
	}
	var calls []callResult
	var final string
	var failure error
	for step := 1; ; step++ {
		if step > subPromptSteps {
			failure = fmt.Errorf("reached the step cap of %d", subPromptSteps)
			break
		}
		if r.stopRequested() {
			failure = fmt.Errorf("execution stopped by user")
			break
		}
		rows := r.subHistory(caller, s)
		req, err := r.requests.build(s, rows)
		if err != nil {
			failure = err
			break
		}
		msg, stepCalls, err := r.modelStep(s, req, s.parentID)
		if err != nil {
			failure = err
			break
		}
		if len(stepCalls) == 0 {
			if msg.Metadata["empty_reply"] == true || (len(msg.ToolCalls) > 0 && strings.TrimSpace(msg.Content) == "") {
				// An empty reply, or only provider-executed calls: the model continues.
				continue
			}
			final = msg.Content
			if v, ok := msg.Metadata["structured"]; ok {
				// A structured sub-prompt returns its value, as JSON, and nothing else.
				return weft.Success(canonicalJSON(v))
			}
			break
		}
		s.toolCalled = true
		res, err := r.tools.executeCalls(s, msg, stepCalls)
		calls = append(calls, res...)
		if err != nil {
			failure = err
			break
		}
	}
	return subPromptResult(p.Name, e, final, calls, failure, r.red)
}

// subHistory is a sub-prompt's context: the caller's top-level history when the callee has
// includeChat (its includePastTools applies), then its own rows.
func (r *run) subHistory(caller *scope, s *scope) []*weft.Message {
	var rows []*weft.Message
	if s.prompt.IncludeChat {
		top := &scope{prompt: s.prompt, side: caller.side}
		rows = r.requests.history(top)
	}
	for i := range s.nested {
		rows = append(rows, &s.nested[i])
	}
	return rows
}

// initMessage builds the sub-prompt's first user message (seed 000 §3.3): the initUserMessageProperty
// value (string as is, else JSON) with the initAttachmentsProperty files attached; without an init
// property, a non-templated callee with arguments gets them as JSON (Δref 11).
func (r *run) initMessage(s *scope, e weft.ToolEntry, args map[string]any) (*weft.Message, error) {
	var content string
	switch {
	case e.InitUserMessageProperty != "":
		switch v := args[e.InitUserMessageProperty].(type) {
		case nil:
		case string:
			content = v
		default:
			b, _ := json.Marshal(v)
			content = string(b)
		}
	case len(args) > 0 && s.prompt.Template == nil:
		b, _ := json.MarshalIndent(args, "", "  ")
		content = "Arguments:\n" + string(b)
	}
	var atts []weft.Attachment
	if e.InitAttachmentsProperty != "" {
		var paths []string
		switch v := args[e.InitAttachmentsProperty].(type) {
		case string:
			paths = []string{v}
		case []any:
			for _, x := range v {
				if s, ok := x.(string); ok {
					paths = append(paths, s)
				}
			}
		}
		for _, p := range paths {
			clean, err := weft.CleanPath(p)
			if err != nil {
				return nil, fmt.Errorf("attachment path %q is invalid", p)
			}
			fi, err := r.e.store.Files().Stat(r.ctx, r.thread.ID, clean)
			if err != nil {
				return nil, fmt.Errorf("Attachment not found: %s", p)
			}
			atts = append(atts, weft.Attachment{ID: weft.NewID("att_"), Path: fi.Path, Name: fi.Name, MimeType: fi.MimeType,
				Size: fi.Size, Width: fi.Width, Height: fi.Height, Description: fi.Description})
		}
	}
	if content == "" && len(atts) == 0 {
		return nil, nil
	}
	role := weft.RoleUser
	side := s.side.Other()
	if s.side == weft.SideB {
		role = weft.RoleAssistant
	}
	return &weft.Message{Role: role, Side: side, Content: content, Attachments: atts, Status: weft.MessageCompleted,
		Depth: s.depth, ParentID: s.parentID, RunID: r.id}, nil
}

// subPromptResult shapes the nested run's outcome into one string (execution.md §8.4–8.5).
func subPromptResult(name string, e weft.ToolEntry, final string, calls []callResult, failure error, red *redactor) weft.ToolResult {
	var parts []string
	if failure == nil && weft.Flag(e.IncludeTextResponse, true) && strings.TrimSpace(final) != "" {
		parts = append(parts, final)
	}
	if weft.Flag(e.IncludeToolCalls, true) && len(calls) > 0 {
		var b strings.Builder
		b.WriteString("Tool Executions:")
		for _, c := range calls {
			fmt.Fprintf(&b, "\nTool Call: %s(%s)", c.call.Name, c.call.Arguments)
			if c.msg != nil {
				fmt.Fprintf(&b, "\nTool Response: %s", c.msg.Content)
			}
		}
		parts = append(parts, b.String())
	}
	if weft.Flag(e.IncludeErrors, true) {
		var errs []string
		for _, c := range calls {
			if c.result.Status == weft.ToolError {
				errs = append(errs, fmt.Sprintf("%s: %s", c.call.Name, c.result.Error))
			}
		}
		if len(errs) > 0 {
			parts = append(parts, "Errors:\n"+strings.Join(errs, "\n"))
		}
	}
	if failure != nil {
		head := fmt.Sprintf("Sub-prompt %q failed: %s", name, red.Error(failure))
		if !weft.Flag(e.IncludeErrors, true) {
			return weft.Failure(fmt.Sprintf("Sub-prompt %q failed.", name))
		}
		return weft.Failure(strings.Join(append([]string{head}, parts...), "\n\n"))
	}
	if len(parts) == 0 {
		return weft.Success("Prompt executed successfully")
	}
	return weft.Success(strings.Join(parts, "\n\n"))
}
