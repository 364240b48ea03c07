package children

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/weft-agents/weft"
)

// RowProperty is the child thread property holding its registry row: the agent, its label, the
// parent side that owns it and how it runs and reports.
const RowProperty = "weft.subagent"

// ResultProperty is the child thread property keeping its outcome once it is terminated, so a
// parent that dies before storing the result still finds it.
const ResultProperty = "weft.subagent_result"

// Row is a child's registry row as stored on the child thread; ok is false for a thread that is
// no subagent.
func Row(t *weft.Thread) (map[string]any, bool) {
	m, ok := t.Properties[RowProperty].(map[string]any)
	return m, ok
}

// NewRow is the registry row of a child of agent a, started through entry e by the parent's side
// owner, under label.
func NewRow(a *weft.Agent, e weft.ToolEntry, label string, owner weft.Side) map[string]any {
	row := map[string]any{"agent": a.Name, "label": label, "owner_side": string(owner),
		"blocking": weft.Flag(e.Blocking, true), "resumable": e.Resumable != nil && e.Resumable.Enabled}
	if e.Resumable != nil && e.Resumable.Enabled {
		row["receives_messages"] = orDefault(e.Resumable.ReceivesMessages, "side_a")
		row["parent_communication"] = orDefault(e.Resumable.ParentCommunication, "implicit")
	}
	return row
}

// Recorded is the outcome Finish stored on a terminated child, if any.
func Recorded(t *weft.Thread) (weft.ToolResult, bool) {
	m, ok := t.Properties[ResultProperty].(map[string]any)
	if !ok {
		return weft.ToolResult{}, false
	}
	str := func(k string) string { v, _ := m[k].(string); return v }
	return weft.ToolResult{Status: weft.ToolStatus(str("status")), Result: str("result"), Error: str("error")}, true
}

// Mode says how a background child ends: a continuable one (an entry with resumable enabled)
// stays alive after reporting, and one with explicit parent communication reports nothing on its
// own.
type Mode struct {
	// Continuable: the child stays alive for later messages after each run.
	Continuable bool
	// Explicit: the child talks to its parent only through notify_parent.
	Explicit bool
}

// DriveArgs reads from a background child's registry row what its driver needs: its agent, the
// parent side it reports to and how it reports.
func (c *Room) DriveArgs(child *weft.Thread) (*weft.Agent, weft.Side, Mode, bool) {
	row, ok := Row(child)
	if !ok {
		return nil, "", Mode{}, false
	}
	a, ok := c.reg.Agent(child.Agent)
	if !ok {
		return nil, "", Mode{}, false
	}
	owner, _ := row["owner_side"].(string)
	return a, weft.Side(owner), Mode{Continuable: row["resumable"] == true, Explicit: row["parent_communication"] == "explicit"}, true
}

// ReadAttachment reads a file of a thread as a new attachment for another thread.
func ReadAttachment(ctx context.Context, st weft.Store, threadID, p string) (weft.ToolAttachment, error) {
	clean, err := weft.CleanPath(p)
	if err != nil {
		return weft.ToolAttachment{}, fmt.Errorf("Attachment not found: %s", p)
	}
	fi, err := st.Files().Stat(ctx, threadID, clean)
	if err != nil {
		return weft.ToolAttachment{}, fmt.Errorf("Attachment not found: %s", p)
	}
	data, err := st.Files().ReadFile(ctx, threadID, clean)
	if err != nil {
		return weft.ToolAttachment{}, fmt.Errorf("Attachment not found: %s", p)
	}
	return weft.ToolAttachment{Name: fi.Name, MimeType: fi.MimeType, Data: data, Width: fi.Width, Height: fi.Height}, nil
}

// Text is a message argument as text: a string as is, anything else as JSON.
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// AttachmentPaths is an attachments argument as paths: one string, or the strings of a list.
func AttachmentPaths(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// Attachments are the thread's files at paths as attachments of a new row of the same thread:
// a handoff's or a sub-prompt's first message.
func Attachments(ctx context.Context, st weft.Store, threadID string, paths []string) ([]weft.Attachment, error) {
	var atts []weft.Attachment
	for _, p := range paths {
		clean, err := weft.CleanPath(p)
		if err != nil {
			return nil, fmt.Errorf("attachment path %q is invalid", p)
		}
		fi, err := st.Files().Stat(ctx, threadID, clean)
		if err != nil {
			return nil, fmt.Errorf("Attachment not found: %s", p)
		}
		atts = append(atts, weft.Attachment{ID: weft.NewID("att_"), Path: fi.Path, Name: fi.Name, MimeType: fi.MimeType,
			Size: fi.Size, Width: fi.Width, Height: fi.Height, Description: fi.Description})
	}
	return atts, nil
}
