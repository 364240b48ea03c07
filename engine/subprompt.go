package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
	"github.com/weft-agents/weft/engine/dispatch"
)

// subCall is a call of a prompt listed as a tool (a sub-prompt): it runs a nested run in the
// caller's thread at depth+1 whose rows hang under the call's tool message and stay invisible to
// the caller, and answers with one string shaped by the entry's include* keys (engine/children's
// sub-prompt rules). A call inside the nested run that waits for approval marks the calls running
// it (SubPromptMeta) in the transaction that parks the run, so that a resumed run goes on with the
// nested run instead of answering the call as interrupted.
type subCall struct {
	r *run
	// scope is the caller's scope, msgID the caller's reply holding call.
	scope *scope
	msgID string
	call  weft.ToolCall
	// resultID is the call's pre-allocated tool message id, the nested rows' parent.
	resultID string
}

// start runs the nested run of the call to o's prompt with args until a reply without tool calls.
// When a call inside waits for a person's approval, the nested run parks with the caller's run
// (parked is the nested rows' parent id, and there is no result) and resume goes on from its
// stored rows once it is decided.
func (v *subCall) start(o *offered, args map[string]any) (res weft.ToolResult, parked string) {
	r, p := v.r, o.target.Prompt
	n, err := v.nested(o, args)
	if err != nil {
		return weft.Failure(fmt.Sprintf("Sub-prompt %q failed: %v", p.Name, err)), ""
	}
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
		n.s.nested = append(n.s.nested, *init)
	}
	return n.loop(1, nil)
}

// nested is the call's nested run in a new scope of o's prompt, its rows under the call's tool
// message and its effects the caller's step's.
func (v *subCall) nested(o *offered, args map[string]any) (nestedRun, error) {
	caller := v.scope
	s, err := v.r.newScope(o.target.Prompt, caller.depth+1, caller.side, args)
	if err != nil {
		return nestedRun{}, err
	}
	s.parentID, s.fx, s.resumed, s.via = v.resultID, caller.fx, caller.resumed, v
	return nestedRun{r: v.r, caller: caller, s: s, e: o.entry}, nil
}

// nestedRun is a sub-prompt's nested run: the prompt a call of the caller's scope runs in scope s
// at depth+1 in the same thread, its rows under the call's tool message, for entry e.
type nestedRun struct {
	r         *run
	caller, s *scope
	e         weft.ToolEntry
}

// loop runs the nested run from the given step on; calls are the calls its earlier steps ran.
// parked is subCall.start's.
func (n nestedRun) loop(first int, calls []children.SubCall) (res weft.ToolResult, parked string) {
	r, s := n.r, n.s
	p := s.prompt
	var final string
	var failure error
	for step := first; ; step++ {
		if step > children.SubPromptSteps {
			failure = fmt.Errorf("reached the step cap of %d", children.SubPromptSteps)
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
		ms := modelStep{r: r, s: s, parentID: s.parentID}
		msg, stepCalls, _, err := ms.call(req)
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
		ran, err := r.tools.Execute(s, msg, stepCalls)
		for _, c := range ran {
			sc := children.SubCall{Call: c.Call, Result: c.Result, Answered: c.Msg != nil}
			if c.Msg != nil {
				sc.Response = c.Msg.Content
			}
			calls = append(calls, sc)
		}
		if errors.Is(err, errAwaitApproval) {
			return weft.ToolResult{}, s.parentID
		}
		if err != nil {
			failure = err
			break
		}
	}
	return children.SubPromptResult(p.Name, n.e, final, calls, failure, r.red.Error), ""
}

// parkedRecords returns the records of the sub-prompt calls from v outwards, innermost first,
// marked running with their nested run's parent id: the transaction parking a call inside the
// nested run stores them. None when v is nil (a call at top level).
func (v *subCall) parkedRecords() []*weft.ToolCallRecord {
	var recs []*weft.ToolCallRecord
	for ; v != nil; v = v.scope.via {
		r := v.r
		rec := r.tools.Calls.Of(v.call, v.msgID)
		children.MarkParked(rec, v.resultID, r.now())
		recs = append(recs, rec)
	}
	return recs
}

// resume goes on, after a park or a restart, with the nested run of the call, of the caller's
// reply m, that parked (its record rec names the nested rows' parent): the nested rows come from
// the store, the open reply's calls are finished as resume finishes a top-level reply's, and the
// loop goes on from the next step. ok false: the call is no parked sub-prompt call. The result is
// to be stored under resultID, unless the nested run parks again (parked is then resultID, and
// there is no result).
func (v *subCall) resume(m *weft.Message, rec weft.ToolCallRecord) (res weft.ToolResult, resultID, parked string, ok bool) {
	r, caller, c := v.r, v.scope, v.call
	resultID = children.ParkedSubPrompt(&rec)
	if resultID == "" {
		return weft.ToolResult{}, "", "", false
	}
	o, found := caller.offered[c.Name]
	if !found || o.target.Prompt == nil {
		return weft.ToolResult{}, "", "", false
	}
	p, e := o.target.Prompt, o.entry
	fail := func(err error) (weft.ToolResult, string, string, bool) {
		return weft.Failure(fmt.Sprintf("Sub-prompt %q failed: %s", p.Name, r.red.Error(err))), resultID, "", true
	}
	r.tools.ApplyDecision(caller, m, &c) // with the arguments a person approved, if the call itself needed approval
	prep, errText := (*toolRun)(r).prepareCall(caller, c, false)
	if errText != "" {
		return weft.Failure(errText), resultID, "", true
	}
	v.call, v.resultID = c, resultID
	n, err := v.nested(o, prep.Args)
	if err != nil {
		return fail(err)
	}
	s := n.s
	rows, err := r.e.store.Messages(r.ctx, r.thread.ID, weft.MessageQuery{Limit: -1, MaxDepth: s.depth, AfterSeq: m.Seq})
	if err != nil {
		return fail(err)
	}
	nr := children.ReadNested(rows, s.depth, s.parentID)
	for i := range nr.Rows {
		r.cache.Note(&nr.Rows[i])
	}
	s.nested = append(s.nested, nr.Rows...)
	if last := nr.Last; last != nil {
		if len(last.ToolCalls) == 0 {
			// The nested run had ended; its caller had not stored the result yet.
			if v, ok := last.Metadata["structured"]; ok {
				return weft.Success(dispatch.CanonicalJSON(v)), resultID, "", true
			}
			return children.SubPromptResult(p.Name, e, last.Content, n.calls(), nil, r.red.Error), resultID, "", true
		}
		if len(nr.Pending) > 0 {
			s.toolCalled = true
			status := map[string]weft.ToolCallRecord{}
			for _, rec := range r.tools.Calls.All() {
				status[rec.CallID] = *rec
			}
			err := r.tools.ResumeCalls(s, last, nr.Pending, status)
			if errors.Is(err, errAwaitApproval) {
				return weft.ToolResult{}, resultID, s.parentID, true
			}
			if err != nil {
				return children.SubPromptResult(p.Name, e, "", n.calls(), err, r.red.Error), resultID, "", true
			}
		}
	}
	res, parked = n.loop(nr.Replies+1, n.calls())
	return res, resultID, parked, true
}

// calls rebuilds, from the nested run's stored rows, the calls it ran (children.SubCalls), with
// the arguments a person approved.
func (n nestedRun) calls() []children.SubCall {
	r := n.r
	approved := map[string]string{}
	if recs, err := r.e.store.ToolCalls(r.ctx, r.thread.ID); err == nil {
		for i := range recs {
			if a := ApprovalOf(&recs[i]); a.Status == dispatch.Approved && len(a.Arguments) > 0 {
				approved[recs[i].CallID] = string(a.Arguments)
			}
		}
	}
	return children.SubCalls(n.s.nested, approved)
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

// initMessage is the nested run's first message (children.SubPromptInit, SubPromptFirst); nil
// when it has neither content nor files.
func (n nestedRun) initMessage(args map[string]any) (*weft.Message, error) {
	r, s := n.r, n.s
	content, atts, err := children.SubPromptInit(r.ctx, r.e.store, r.thread.ID, n.e, args, s.prompt.Template != nil)
	if err != nil {
		return nil, err
	}
	return children.SubPromptFirst(content, atts, s.side, s.depth, s.parentID, r.id), nil
}
