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

// Limited returns res, or the error result that refuses it when its text is over
// weft.MaxToolResultBytes: refused, not cut, so that the model learns why it gets no result.
func Limited(res weft.ToolResult) weft.ToolResult {
	if n := len(res.Result) + len(res.Error); n > weft.MaxToolResultBytes {
		return weft.Failure(fmt.Sprintf("The tool's result is %s; the limit is %s. Ask for less (a page, a summary, a file).",
			weft.ByteSize(int64(n)), weft.ByteSize(weft.MaxToolResultBytes)))
	}
	return res
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
