package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
	"github.com/weft-agents/weft/engine/dispatch"
	"github.com/weft-agents/weft/engine/redact"
)

// subPromptSteps caps a sub-prompt's nested run when it is not an agent side.
const subPromptSteps = 25

// callSubPrompt runs a prompt as a tool: a nested run in the caller's thread at depth+1 whose rows
// hang under the caller's tool message and stay invisible to the caller; it loops until a reply
// without tool calls and returns one string shaped by the entry's include* keys.
// When a call inside waits for a person's approval, the nested run parks with the caller's run
// (parked is the nested rows' parent id, and there is no result) and resumeSubPrompt goes on from
// its stored rows once it is decided.
func (r *run) callSubPrompt(caller *scope, o *offered, c weft.ToolCall, msgID string, args map[string]any, parentID string) (res weft.ToolResult, parked string) {
	p := o.target.Prompt
	e := o.entry
	s, err := r.newScope(p, caller.depth+1, caller.side, args)
	if err != nil {
		return weft.Failure(fmt.Sprintf("Sub-prompt %q failed: %v", p.Name, err)), ""
	}
	// The nested rows hang under the caller's (pre-allocated) tool message id; its effects are the
	// caller's step's.
	s.parentID, s.fx, s.resumed = parentID, caller.fx, caller.resumed
	s.via = &subCall{scope: caller, msgID: msgID, call: c, resultID: parentID}
	n := nestedRun{r: r, caller: caller, s: s, e: e}
	init, err := n.initMessage(args)
	if err != nil {
		return weft.Failure(fmt.Sprintf("Sub-prompt %q failed: %v", p.Name, err)), ""
	}
	if init != nil {
		// Streamed as every row is: recorded with the row when the run records its events.
		if err := r.tx(func(tx weft.Tx) error { return r.journal.Insert(tx, init) }); err != nil {
			return weft.Failure(fmt.Sprintf("Sub-prompt %q failed: %v", p.Name, err)), ""
		}
		r.addRow(*init)
		r.journal.Stored(*init)
		s.nested = append(s.nested, *init)
	}
	return n.loop(1, nil)
}

// nestedRun is a sub-prompt's nested run: the prompt a call of the caller's scope runs in scope s
// at depth+1 in the same thread, its rows under the call's tool message, for entry e.
type nestedRun struct {
	r         *run
	caller, s *scope
	e         weft.ToolEntry
}

// loop runs the nested run from the given step on; calls are the calls its earlier steps ran.
// parked is callSubPrompt's.
func (n nestedRun) loop(first int, calls []callResult) (res weft.ToolResult, parked string) {
	r, s := n.r, n.s
	p := s.prompt
	var final string
	var failure error
	for step := first; ; step++ {
		if step > subPromptSteps {
			failure = fmt.Errorf("reached the step cap of %d", subPromptSteps)
			break
		}
		if r.stopRequested() {
			failure = fmt.Errorf("execution stopped by user")
			break
		}
		rows := n.history()
		req, err := r.requests.build(s, rows)
		if err != nil {
			failure = err
			break
		}
		msg, stepCalls, _, err := r.modelStep(s, req, s.parentID)
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
				return weft.Success(dispatch.CanonicalJSON(v)), ""
			}
			break
		}
		s.toolCalled = true
		ran, err := r.tools.executeCalls(s, msg, stepCalls)
		calls = append(calls, ran...)
		if errors.Is(err, errAwaitApproval) {
			return weft.ToolResult{}, s.parentID
		}
		if err != nil {
			failure = err
			break
		}
	}
	return subPromptResult(p.Name, n.e, final, calls, failure, r.red), ""
}

// subCall is the call that runs a sub-prompt's nested run. A call inside that waits for approval
// marks it (subPromptMeta) in the transaction that parks the run, so that a resumed run goes on
// with the nested run instead of answering the call as interrupted.
type subCall struct {
	// scope is the caller's scope, msgID the caller's reply holding call.
	scope *scope
	msgID string
	call  weft.ToolCall
	// resultID is the call's pre-allocated tool message id, the nested rows' parent.
	resultID string
}

// subPromptMeta is the metadata of a sub-prompt call whose nested run parked.
type subPromptMeta struct {
	ResultID string `json:"sub_prompt_result_id"`
}

// parkedCallers returns the records of the sub-prompt calls that run s, innermost first, marked
// running with their nested run's parent id: the transaction parking a call inside stores them.
func (r *run) parkedCallers(s *scope) []*weft.ToolCallRecord {
	var recs []*weft.ToolCallRecord
	for v := s.via; v != nil; v = v.scope.via {
		rec := r.tools.calls.Of(v.call, v.msgID)
		m := map[string]any{}
		if len(rec.Meta) > 0 {
			_ = json.Unmarshal(rec.Meta, &m)
		}
		m["sub_prompt_result_id"] = v.resultID
		rec.Meta, _ = json.Marshal(m)
		if rec.Status != weft.CallRunning {
			now := r.now()
			rec.Status, rec.StartedAt = weft.CallRunning, &now
		}
		recs = append(recs, rec)
	}
	return recs
}

// resumeSubPrompt goes on, after a park or a restart, with the nested run of a sub-prompt call
// that parked (its record names the nested rows' parent): the nested rows come from the store, the
// open reply's calls are finished as resume finishes a top-level reply's, and the loop goes on
// from the next step. ok false: the call is no parked sub-prompt call. The result is to be stored
// under resultID, unless the nested run parks again (parked is then resultID, and there is no
// result).
func (r *run) resumeSubPrompt(caller *scope, m *weft.Message, rec weft.ToolCallRecord, c weft.ToolCall) (res weft.ToolResult, resultID, parked string, ok bool) {
	var meta subPromptMeta
	if len(rec.Meta) == 0 || json.Unmarshal(rec.Meta, &meta) != nil || meta.ResultID == "" {
		return weft.ToolResult{}, "", "", false
	}
	o, found := caller.offered[c.Name]
	if !found || o.target.Prompt == nil {
		return weft.ToolResult{}, "", "", false
	}
	p, e := o.target.Prompt, o.entry
	fail := func(err error) (weft.ToolResult, string, string, bool) {
		return weft.Failure(fmt.Sprintf("Sub-prompt %q failed: %s", p.Name, r.red.Error(err))), meta.ResultID, "", true
	}
	r.tools.decided(caller, m, &c) // with the arguments a person approved, if the call itself needed approval
	_, args, _, errText := r.tools.prepareCall(caller, c, false)
	if errText != "" {
		return weft.Failure(errText), meta.ResultID, "", true
	}
	s, err := r.newScope(p, caller.depth+1, caller.side, args)
	if err != nil {
		return fail(err)
	}
	s.parentID, s.fx, s.resumed = meta.ResultID, caller.fx, caller.resumed
	s.via = &subCall{scope: caller, msgID: m.ID, call: c, resultID: meta.ResultID}
	n := nestedRun{r: r, caller: caller, s: s, e: e}
	rows, err := r.e.store.Messages(r.ctx, r.thread.ID, weft.MessageQuery{Limit: -1, MaxDepth: s.depth, AfterSeq: m.Seq})
	if err != nil {
		return fail(err)
	}
	var replies []*weft.Message
	answered := map[string]bool{}
	for i := range rows {
		row := &rows[i]
		if row.Depth != s.depth || row.ParentID != s.parentID {
			continue
		}
		r.noteRow(row)
		s.nested = append(s.nested, *row)
		switch {
		case row.Role == weft.RoleTool:
			answered[row.ToolCallID] = true
		case row.Prompt != "":
			replies = append(replies, row)
		}
	}
	if len(replies) > 0 {
		last := replies[len(replies)-1]
		var pending []weft.ToolCall
		for _, lc := range last.ToolCalls {
			if !answered[lc.ID] {
				pending = append(pending, lc)
			}
		}
		if len(last.ToolCalls) == 0 {
			// The nested run had ended; its caller had not stored the result yet.
			if v, ok := last.Metadata["structured"]; ok {
				return weft.Success(dispatch.CanonicalJSON(v)), meta.ResultID, "", true
			}
			return subPromptResult(p.Name, e, last.Content, n.calls(), nil, r.red), meta.ResultID, "", true
		}
		if len(pending) > 0 {
			s.toolCalled = true
			status := map[string]weft.ToolCallRecord{}
			for _, rec := range r.tools.calls.All() {
				status[rec.CallID] = *rec
			}
			err := r.tools.resumeCalls(s, last, pending, status)
			if errors.Is(err, errAwaitApproval) {
				return weft.ToolResult{}, meta.ResultID, s.parentID, true
			}
			if err != nil {
				return subPromptResult(p.Name, e, "", n.calls(), err, r.red), meta.ResultID, "", true
			}
		}
	}
	res, parked = n.loop(len(replies)+1, n.calls())
	return res, meta.ResultID, parked, true
}

// calls rebuilds, from the nested run's stored rows, the calls it ran for its result's tool and
// error sections: the answered local calls of its replies, in order, with the arguments a person
// approved.
func (n nestedRun) calls() []callResult {
	r, rows := n.r, n.s.nested
	edited := map[string]string{}
	if recs, err := r.e.store.ToolCalls(r.ctx, r.thread.ID); err == nil {
		for i := range recs {
			if a := ApprovalOf(&recs[i]); a.Status == dispatch.Approved && len(a.Arguments) > 0 {
				edited[recs[i].CallID] = string(a.Arguments)
			}
		}
	}
	results := map[string]*weft.Message{}
	for i := range rows {
		if rows[i].Role == weft.RoleTool {
			results[rows[i].ToolCallID] = &rows[i]
		}
	}
	var calls []callResult
	for _, reply := range rows {
		if reply.Role == weft.RoleTool || reply.Prompt == "" || reply.Metadata["empty_reply"] == true {
			continue
		}
		for _, c := range reply.ToolCalls {
			tm, ok := results[c.ID]
			if !ok || tm.Metadata["provider_executed"] == true {
				continue
			}
			if args, ok := edited[c.ID]; ok {
				c.Arguments = args
			}
			cr := callResult{call: c, msg: tm, result: weft.ToolResult{Status: tm.ToolStatus, Result: tm.Content}}
			if tm.ToolStatus == weft.ToolError {
				cr.result.Error = strings.TrimPrefix(tm.Content, "Failed to execute tool: ")
			}
			calls = append(calls, cr)
		}
	}
	return calls
}

// history is the nested run's context: the caller's top-level history when the callee has
// includeChat (its includePastTools applies), then its own rows.
func (n nestedRun) history() []*weft.Message {
	s := n.s
	var rows []*weft.Message
	if s.prompt.IncludeChat {
		top := &scope{prompt: s.prompt, side: n.caller.side}
		rows = n.r.requests.history(top)
	}
	for i := range s.nested {
		rows = append(rows, &s.nested[i])
	}
	return rows
}

// initMessage builds the nested run's first user message: the initUserMessageProperty
// value (string as is, else JSON) with the initAttachmentsProperty files attached; without an init
// property, a non-templated callee with arguments gets them as JSON.
func (n nestedRun) initMessage(args map[string]any) (*weft.Message, error) {
	r, s, e := n.r, n.s, n.e
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
		var err error
		if atts, err = children.Attachments(r.ctx, r.e.store, r.thread.ID, children.AttachmentPaths(args[e.InitAttachmentsProperty])); err != nil {
			return nil, err
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

// subPromptResult shapes the nested run's outcome into one string: the final text, and the calls'
// results and errors as the entry's include* keys ask.
func subPromptResult(name string, e weft.ToolEntry, final string, calls []callResult, failure error, red *redact.Redactor) weft.ToolResult {
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
