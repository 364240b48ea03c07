package children

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/weft-agents/weft"
)

// Result is a stopped child's outcome (outcome) with the child's secrets redacted: it leaves the
// child's thread for its parent's, whose redaction knows only the parent's layers, and a secret
// given to the child alone (the variables API) would reach the parent's rows and model. When the
// child's secrets cannot be read, the outcome is withheld rather than passed on.
func (c *Room) Result(ctx context.Context, child *weft.Thread, a *weft.Agent, info weft.StopInfo) weft.ToolResult {
	out := c.outcome(ctx, child, a, info)
	red, err := c.host.Redactor(ctx, child.ID)
	if err != nil {
		return weft.Failure("Subagent result could not be redacted: " + err.Error())
	}
	out.Result, out.Error = red(out.Result), red(out.Error)
	return out
}

// outcome is a stopped child's outcome, first match: a session stop's text; with session tools
// bound, their latest call (never called is a failure); a failing stop's error; else the content
// of the latest top-level non-tool row.
func (c *Room) outcome(ctx context.Context, child *weft.Thread, a *weft.Agent, info weft.StopInfo) weft.ToolResult {
	if info.Reason == weft.StopSession && info.Error == "" && info.RunID == "" {
		// Known from the store only (the stop happened before a crash): the session tool call's text.
		if out, ok := c.sessionCallResult(ctx, child, a); ok {
			return out
		}
	}
	switch info.Reason {
	case weft.StopSession, weft.StopStateSession:
		return weft.Success(info.Error)
	case weft.StopSessionFail:
		if info.Error == "" && info.RunID == "" {
			if out, ok := c.sessionCallResult(ctx, child, a); ok {
				return out
			}
		}
		return weft.Failure(info.Error)
	}
	if b := a.Side(weft.SideB); a.SideA.SessionStop != nil || a.SideA.SessionFail != nil || b.SessionStop != nil || b.SessionFail != nil {
		return weft.Failure("Subagent ended without calling a session tool.")
	}
	if !info.Reason.OK() {
		return weft.Failure(orDefault(info.Error, "Subagent failed: "+string(info.Reason)))
	}
	rows, err := c.store.Messages(ctx, child.ID, weft.MessageQuery{Limit: 20, Desc: true, Roles: []weft.Role{weft.RoleAssistant, weft.RoleUser}})
	if err != nil {
		return weft.Failure("Subagent result could not be read: " + err.Error())
	}
	for _, m := range rows {
		if strings.TrimSpace(m.Content) != "" {
			return weft.Success(m.Content)
		}
	}
	return weft.Success("")
}

// sessionBinding is a session tool bound by a side of the child's agent.
type sessionBinding struct {
	t    *weft.SessionTool
	fail bool // a sessionFail tool
}

// sessionCallResult derives a stopped child's outcome from its latest successful sessionStop or
// sessionFail call: the call's messageProperty argument, else the tool's result.
func (c *Room) sessionCallResult(ctx context.Context, child *weft.Thread, a *weft.Agent) (weft.ToolResult, bool) {
	rows, err := c.store.Messages(ctx, child.ID, weft.MessageQuery{Limit: 50, Desc: true, Roles: []weft.Role{weft.RoleTool, weft.RoleAssistant, weft.RoleUser}})
	if err != nil {
		return weft.ToolResult{}, false
	}
	bindings := map[string]sessionBinding{}
	for _, side := range []weft.AgentSide{a.SideA, a.Side(weft.SideB)} {
		if side.SessionStop != nil {
			bindings[side.SessionStop.Name] = sessionBinding{side.SessionStop, false}
		}
		if side.SessionFail != nil {
			bindings[side.SessionFail.Name] = sessionBinding{side.SessionFail, true}
		}
	}
	for i, m := range rows {
		b, ok := bindings[m.Name]
		if m.Role != weft.RoleTool || !ok || m.ToolStatus != weft.ToolSuccess {
			continue
		}
		text := m.Content
		if b.t.MessageProperty != "" {
			// The call's arguments are on the assistant row before it (older rows follow in rows).
			for _, prev := range rows[i+1:] {
				for _, call := range prev.ToolCalls {
					if call.ID != m.ToolCallID {
						continue
					}
					var args map[string]any
					if json.Unmarshal([]byte(call.Arguments), &args) == nil {
						if v, ok := args[b.t.MessageProperty].(string); ok {
							text = v
						}
					}
				}
			}
		}
		if b.fail {
			return weft.Failure(text), true
		}
		return weft.Success(text), true
	}
	return weft.ToolResult{}, false
}
