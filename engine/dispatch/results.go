package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/declared"
	"github.com/weft-agents/weft/engine/redact"
)

// InterruptedResult answers a non-idempotent call that was running when the process died: it is
// not run again, since it may have had its effect.
const InterruptedResult = "Tool execution was interrupted by a restart; it may or may not have completed."

// DefinedTool is the handler of a command or http tool declared in definitions (package
// declared), given what only the run knows (o: the project root, the run's redactor and why it
// ended).
func DefinedTool(t *weft.Tool, o declared.Options) weft.ToolHandler {
	if t.Command != nil {
		return declared.Command(t, o)
	}
	return declared.HTTP(t, o)
}

// RunTool runs a Go, command or http tool's handler h (nil: the tool has none) with ctx, the
// call's, bounded by the tool's timeout, and turns every failure into an error result; run is the
// run's context (a timeout is the tool's only while the run goes on) and name the call's target's.
func RunTool(ctx, run context.Context, st weft.State, name string, t *weft.Tool, h weft.ToolHandler, raw json.RawMessage) weft.ToolResult {
	if t.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.Timeout.D())
		defer cancel()
	}
	var out weft.ToolResult
	var err error
	if h != nil {
		out, err = h.Call(ctx, st, raw)
	} else {
		err = fmt.Errorf("tool %q has no implementation", name)
	}
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded && run.Err() == nil {
			return weft.Failure(fmt.Sprintf("tool %s timed out after %s", name, t.Timeout))
		}
		return weft.ToolResult{Status: weft.ToolError, Error: err.Error(), Attachments: out.Attachments}
	}
	if out.Status == "" {
		out.Status = weft.ToolSuccess
	}
	return out
}

// ToStore returns res as a tool message stores it: refused when its text is over
// weft.MaxToolResultBytes (not cut, so that the model learns why it gets no result), and its
// result and error redacted by red.
func ToStore(res weft.ToolResult, red *redact.Redactor) weft.ToolResult {
	if n := len(res.Result) + len(res.Error); n > weft.MaxToolResultBytes {
		res = weft.Failure(fmt.Sprintf("The tool's result is %s; the limit is %s. Ask for less (a page, a summary, a file).",
			weft.ByteSize(int64(n)), weft.ByteSize(weft.MaxToolResultBytes)))
	}
	res.Result = red.String(res.Result)
	res.Error = red.String(res.Error)
	return res
}

// ResultContent is the text of the tool message that stores res (ToStore's): Content's, or for a
// successful call of a session tool bound to messageProperty, the call's argument of that name
// (arguments are the call's).
func ResultContent(res weft.ToolResult, arguments, messageProperty string) string {
	if res.Status != weft.ToolSuccess {
		return Content(res.Status, res.Error)
	}
	if messageProperty != "" {
		var args map[string]any
		if json.Unmarshal([]byte(arguments), &args) == nil {
			if v, ok := args[messageProperty].(string); ok {
				if v == "" {
					return Content(res.Status, "")
				}
				return v
			}
		}
	}
	return Content(res.Status, res.Result)
}

// AddAttachments adds a result's new files and references to its tool message m; paths: the
// message's text also names each new file's path, for the model to use.
func AddAttachments(m *weft.Message, files []NewFile, refs []weft.Attachment, paths bool) {
	for _, f := range files {
		m.Attachments = append(m.Attachments, f.Att)
		if paths {
			m.Content += fmt.Sprintf("\n\nAttachment path for %q: %s", f.Att.Name, f.Att.Path)
		}
	}
	m.Attachments = append(m.Attachments, refs...)
}

// Content is a tool message's text: the trimmed result, or "Tool executed successfully" when
// there is none; for an error, "Failed to execute tool: " and the error.
func Content(status weft.ToolStatus, text string) string {
	text = strings.TrimSpace(text)
	switch {
	case status != weft.ToolSuccess:
		return "Failed to execute tool: " + text
	case text == "":
		return "Tool executed successfully"
	}
	return text
}

// ResultMeta is a tool message's metadata for res: its stack (redacted by red) and error code and
// data (nil when none).
func ResultMeta(res weft.ToolResult, red *redact.Redactor) map[string]any {
	if res.Stack == "" && res.ErrorCode == "" {
		return nil
	}
	meta := map[string]any{}
	if res.Stack != "" {
		meta["stack"] = red.String(res.Stack)
	}
	if res.ErrorCode != "" {
		meta["error_code"] = res.ErrorCode
		meta["error_data"] = res.ErrorData
	}
	return meta
}
