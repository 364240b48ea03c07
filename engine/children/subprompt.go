package children

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/weft-agents/weft"
)

// A sub-prompt is a prompt listed as a tool: its call runs a nested run in the caller's thread,
// one level deeper, whose rows hang under the caller's tool message and stay invisible to the
// caller; it loops until a reply without tool calls and answers the call with one string shaped
// by the entry's include* keys. The engine runs the nested run; these are its rules.

// SubPromptSteps caps a sub-prompt's nested run when it is not an agent side.
const SubPromptSteps = 25

// SubPromptResultKey is the key, in a sub-prompt call's record metadata, of the id of the call's
// tool message under which its nested run's rows hang: a call inside that waits for approval
// marks its callers so, and a resumed run goes on with the nested run instead of answering the
// call as interrupted.
const SubPromptResultKey = "sub_prompt_result_id"

// SubPromptMeta is the metadata of a sub-prompt call whose nested run parked.
type SubPromptMeta struct {
	// ResultID is the call's tool message id, the nested rows' parent (SubPromptResultKey).
	ResultID string `json:"sub_prompt_result_id"`
}

// ParkedSubPrompt returns the tool message id under which the nested run of a parked sub-prompt
// call hangs, from the call's record (SubPromptResultKey); "" when the call is no parked
// sub-prompt call.
func ParkedSubPrompt(rec *weft.ToolCallRecord) string {
	var meta SubPromptMeta
	if len(rec.Meta) == 0 || json.Unmarshal(rec.Meta, &meta) != nil {
		return ""
	}
	return meta.ResultID
}

// MarkParked marks the record of a sub-prompt call whose nested run parks: running since now
// (unless it already was), its metadata naming resultID, the nested rows' parent.
func MarkParked(rec *weft.ToolCallRecord, resultID string, now time.Time) {
	m := map[string]any{}
	if len(rec.Meta) > 0 {
		_ = json.Unmarshal(rec.Meta, &m)
	}
	m[SubPromptResultKey] = resultID
	rec.Meta, _ = json.Marshal(m)
	if rec.Status != weft.CallRunning {
		rec.Status, rec.StartedAt = weft.CallRunning, &now
	}
}

// SubPromptFirst is a nested run's first message (SubPromptInit's content and files), written as
// by the side other than the one the nested run acts for, at its depth under its parent; nil when
// it has neither content nor files.
func SubPromptFirst(content string, atts []weft.Attachment, side weft.Side, depth int, parentID, runID string) *weft.Message {
	if content == "" && len(atts) == 0 {
		return nil
	}
	role := weft.RoleUser
	if side == weft.SideB {
		role = weft.RoleAssistant
	}
	return &weft.Message{Role: role, Side: side.Other(), Content: content, Attachments: atts, Status: weft.MessageCompleted,
		Depth: depth, ParentID: parentID, RunID: runID}
}

// SubPromptInit is the content and files of a nested run's first message: the entry's
// initUserMessageProperty argument (a string as is, else JSON) with the thread's files its
// initAttachmentsProperty names attached; without an init property, a callee that is not
// templated gets its arguments as JSON. Neither content nor files: there is no first message.
func SubPromptInit(ctx context.Context, st weft.Store, threadID string, e weft.ToolEntry, args map[string]any, templated bool) (string, []weft.Attachment, error) {
	var content string
	switch {
	case e.InitUserMessageProperty != "":
		content = Text(args[e.InitUserMessageProperty])
	case len(args) > 0 && !templated:
		b, _ := json.MarshalIndent(args, "", "  ")
		content = "Arguments:\n" + string(b)
	}
	var atts []weft.Attachment
	if e.InitAttachmentsProperty != "" {
		var err error
		if atts, err = Attachments(ctx, st, threadID, AttachmentPaths(args[e.InitAttachmentsProperty])); err != nil {
			return "", nil, err
		}
	}
	return content, atts, nil
}

// SubCall is a call a nested run made, for its result's tool and error sections.
type SubCall struct {
	// Call is the call, with the arguments a person approved.
	Call weft.ToolCall
	// Result is its result.
	Result weft.ToolResult
	// Answered: its tool row was stored, with content Response.
	Answered bool
	Response string
}

// SubCalls rebuilds, from a nested run's stored rows, the calls it ran: the answered local calls
// of its replies, in order, with the arguments a person approved (approved, by call id).
func SubCalls(rows []weft.Message, approved map[string]string) []SubCall {
	results := map[string]*weft.Message{}
	for i := range rows {
		if rows[i].Role == weft.RoleTool {
			results[rows[i].ToolCallID] = &rows[i]
		}
	}
	var calls []SubCall
	for _, reply := range rows {
		if reply.Role == weft.RoleTool || reply.Prompt == "" || reply.Metadata["empty_reply"] == true {
			continue
		}
		for _, c := range reply.ToolCalls {
			tm, ok := results[c.ID]
			if !ok || tm.Metadata["provider_executed"] == true {
				continue
			}
			if args, ok := approved[c.ID]; ok {
				c.Arguments = args
			}
			sc := SubCall{Call: c, Result: weft.ToolResult{Status: tm.ToolStatus, Result: tm.Content}, Answered: true, Response: tm.Content}
			if tm.ToolStatus == weft.ToolError {
				sc.Result.Error = strings.TrimPrefix(tm.Content, "Failed to execute tool: ")
			}
			calls = append(calls, sc)
		}
	}
	return calls
}

// SubPromptResult shapes a nested run's outcome into one string: the final text, and the calls'
// results and errors as the entry's include* keys ask. A failure (its text redacted by redact)
// makes it an error result.
func SubPromptResult(name string, e weft.ToolEntry, final string, calls []SubCall, failure error, redact func(error) string) weft.ToolResult {
	var parts []string
	if failure == nil && weft.Flag(e.IncludeTextResponse, true) && strings.TrimSpace(final) != "" {
		parts = append(parts, final)
	}
	if weft.Flag(e.IncludeToolCalls, true) && len(calls) > 0 {
		var b strings.Builder
		b.WriteString("Tool Executions:")
		for _, c := range calls {
			fmt.Fprintf(&b, "\nTool Call: %s(%s)", c.Call.Name, c.Call.Arguments)
			if c.Answered {
				fmt.Fprintf(&b, "\nTool Response: %s", c.Response)
			}
		}
		parts = append(parts, b.String())
	}
	if weft.Flag(e.IncludeErrors, true) {
		var errs []string
		for _, c := range calls {
			if c.Result.Status == weft.ToolError {
				errs = append(errs, fmt.Sprintf("%s: %s", c.Call.Name, c.Result.Error))
			}
		}
		if len(errs) > 0 {
			parts = append(parts, "Errors:\n"+strings.Join(errs, "\n"))
		}
	}
	if failure != nil {
		head := fmt.Sprintf("Sub-prompt %q failed: %s", name, redact(failure))
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

// Nested is a parked nested run as its stored rows show it.
type Nested struct {
	// Rows are its rows, in order.
	Rows []weft.Message
	// Replies counts its model replies; Last is the latest (nil when none).
	Replies int
	Last    *weft.Message
	// Pending are Last's calls without a result.
	Pending []weft.ToolCall
}

// ReadNested picks, out of a thread's rows after the caller's reply, those of the nested run at
// depth whose rows hang under the tool message parentID.
func ReadNested(rows []weft.Message, depth int, parentID string) Nested {
	var n Nested
	answered := map[string]bool{}
	last := -1
	for _, row := range rows {
		if row.Depth != depth || row.ParentID != parentID {
			continue
		}
		n.Rows = append(n.Rows, row)
		switch {
		case row.Role == weft.RoleTool:
			answered[row.ToolCallID] = true
		case row.Prompt != "":
			n.Replies++
			last = len(n.Rows) - 1
		}
	}
	if last >= 0 {
		n.Last = &n.Rows[last]
		for _, c := range n.Last.ToolCalls {
			if !answered[c.ID] {
				n.Pending = append(n.Pending, c)
			}
		}
	}
	return n
}
