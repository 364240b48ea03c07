package engine

import (
	"encoding/json"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/dispatch"
	"github.com/weft-agents/weft/engine/modelcall"
	"github.com/weft-agents/weft/engine/redact"
	"github.com/weft-agents/weft/engine/runstate"
)

// modelStep is one model step of a run: the model called in a scope, and its reply stored with
// its calls, logs and run state (S9–S10). A top-level step and each step of a sub-prompt hold
// one, on the stack, for as long as the step lasts; parentID places a sub-prompt's rows under
// the caller's tool message.
type modelStep struct {
	r        *run
	s        *scope
	parentID string

	// The reply as it is stored: its result, its row, the calls left to run, the rows of
	// provider-executed calls, the failing result of an empty reply.
	res         *modelcall.Result
	msg         *weft.Message
	calls       []weft.ToolCall
	provided    []*weft.Message
	emptyResult *weft.Message
	empty       bool
	// startNow is the one call whose tool_started the reply's transaction recorded (nil when none).
	startNow *weft.ToolCall
}

// call calls the model and persists the reply with its calls, logs and run state in one
// transaction. final is the stop the transaction stored with a reply that completed the turn ("" when
// none).
func (ms *modelStep) call(req *weft.Request) (_ *weft.Message, _ []weft.ToolCall, final weft.StopReason, _ error) {
	r, s := ms.r, ms.s
	msgID := weft.NewID("msg_")
	var res *modelcall.Result
	err := r.checkBudget()
	if err == nil {
		res, err = r.model.Call(s.call(), req, msgID)
	}
	if err != nil {
		if res != nil && len(res.Logs) > 0 {
			if r.tx(func(tx weft.Tx) error { return putLogs(tx, res.Logs) }) == nil && r.obs != nil {
				r.obs.ModelCall(r.model.Record(s.call(), req, res.Logs, nil, err))
			}
		}
		return nil, nil, "", err
	}
	ms.build(res, msgID)
	if final, err = ms.commit(); err != nil {
		return nil, nil, "", err
	}
	msg, calls := ms.replied(req)
	return msg, calls, final, nil
}

// build builds the rows of the model's reply res (S9), redacted, through the before-insert hooks.
func (ms *modelStep) build(res *modelcall.Result, msgID string) {
	r, s, parentID := ms.r, ms.s, ms.parentID
	resp := res.Resp
	calls := ms.uniqueCallIDs(resp.ToolCalls)
	msg := &weft.Message{ID: msgID, Role: weft.RoleAssistant, Side: s.side, Content: r.red.String(resp.Text),
		ToolCalls: redact.Calls(calls, r.red.String), Status: weft.MessageCompleted, Depth: s.depth, ParentID: parentID, Prompt: s.prompt.Name,
		LogID: res.Log.ID, RunID: r.id}
	if s.prompt.Reasoning == nil || !s.prompt.Reasoning.Exclude {
		msg.Reasoning = r.red.String(resp.Reasoning)
	}
	if s.side == weft.SideB {
		// Side B's replies are stored as user rows.
		msg.Role = weft.RoleUser
	}
	if ids := providerIDs(resp.ToolCalls, calls); ids != nil {
		msg.Metadata = map[string]any{"provider_call_ids": ids}
	}
	if res.Structured != nil {
		if msg.Metadata == nil {
			msg.Metadata = map[string]any{}
		}
		msg.Metadata["structured"] = dispatch.RedactValue(r.red, res.Structured)
	}
	if len(resp.ReasoningBlocks) > 0 && (s.prompt.Reasoning == nil || !s.prompt.Reasoning.Exclude) {
		// Provider reasoning blocks (thinking with signatures) are kept verbatim for replay.
		var blocks any
		if json.Unmarshal(resp.ReasoningBlocks, &blocks) == nil {
			if msg.Metadata == nil {
				msg.Metadata = map[string]any{}
			}
			msg.Metadata["reasoning_blocks"] = blocks
		}
	}
	empty := strings.TrimSpace(resp.Text) == "" && len(calls) == 0
	if len(calls) > 0 && s.depth == 0 {
		r.state.ToolCalled = true
	}
	// Provider-executed calls arrive answered: their results are stored with the reply and only
	// the local calls remain to run.
	provided, calls := ms.providerResults(res, calls)
	var emptyResult *weft.Message
	if empty {
		// Stored with a synthetic failing call so the model sees its mistake.
		call := weft.ToolCall{ID: ms.freshCallID(), Name: emptyReplyTool, Arguments: "{}"}
		msg.ToolCalls = []weft.ToolCall{call}
		msg.Metadata = map[string]any{"empty_reply": true}
		emptyResult = &weft.Message{Role: weft.RoleTool, Side: s.side, Name: emptyReplyTool, ToolCallID: call.ID,
			ToolStatus: weft.ToolError, Content: "Failed to execute tool: " + emptyReplyError, Status: weft.MessageCompleted,
			Depth: s.depth, ParentID: parentID, RunID: r.id}
	}
	r.hooks.BeforeInsert(r.scopeHooks(s, weft.HookBeforeCreateMessage), msg, r.red)
	if emptyResult != nil {
		r.hooks.BeforeInsert(r.scopeHooks(s, weft.HookBeforeCreateMessage), emptyResult, r.red)
	}
	ms.res, ms.msg, ms.calls, ms.provided, ms.emptyResult, ms.empty = res, msg, calls, provided, emptyResult, empty
}

// commit stores the reply with its call records, logs and run state in one transaction (S10); a
// reply that ends the turn with a human next stores the stop with it, and returns its reason.
func (ms *modelStep) commit() (weft.StopReason, error) {
	r, s := ms.r, ms.s
	state := r.state.Encode()
	final := weft.StopReason("")
	// The transaction's function reads copies, not ms, which stays on the stack: what it sets is
	// out, its one allocation.
	msg, calls, provided, emptyResult, empty, res := ms.msg, ms.calls, ms.provided, ms.emptyResult, ms.empty, ms.res
	var out struct {
		// staged: the transaction recorded startNow's tool_started.
		staged bool
		// finalState is the run state stored with the stop the transaction stored, encoded, and
		// stopped that state.
		finalState []byte
		stopped    runstate.State
	}
	r.sync()
	if s.final.human && len(calls) == 0 && !empty && !r.tools.Queued() {
		final = s.final.stop(msg.Content)
	}
	last := final != "" && r.stopIsLast(s)
	// A reply whose one call starts at once records its message event and the call's
	// tool_started in this transaction (startsAtOnce), which the tool would otherwise wait for
	// a commit of their own to record.
	var startNow *weft.ToolCall
	if final == "" && len(provided) == 0 && emptyResult == nil && len(calls) == 1 && r.tools.StartsAtOnce(s, msg, calls[0]) {
		startNow = &calls[0]
	}
	// next is the run state a stop in this transaction stores; the run's state changes only once
	// the transaction has committed.
	next := r.state
	if final != "" {
		// The reply completes the turn and a human is next: the stop goes into this transaction.
		next.CompleteTurn(s.side, 0)
		next.Side = s.side.Other()
	}
	err := r.tx(func(tx weft.Tx) error {
		out.staged = false
		if err := tx.InsertMessage(msg); err != nil {
			return err
		}
		for _, tm := range provided {
			if err := tx.InsertMessage(tm); err != nil {
				return err
			}
			var args string
			for _, c := range msg.ToolCalls {
				if c.ID == tm.ToolCallID {
					args = c.Arguments
				}
			}
			now := r.now()
			if err := tx.PutToolCall(&weft.ToolCallRecord{CallID: tm.ToolCallID, MessageID: msg.ID, Name: tm.Name, Arguments: args,
				Status: weft.CallDone, ResultMessageID: tm.ID, FinishedAt: &now}); err != nil {
				return err
			}
		}
		for i, c := range calls {
			rec := &weft.ToolCallRecord{CallID: c.ID, MessageID: msg.ID, Name: c.Name, Arguments: r.red.String(c.Arguments),
				Status: weft.CallPending, Idempotent: s.Idempotent(c.Name)}
			if i == 0 {
				r.tools.MarkRunning(s, rec)
			}
			if err := tx.PutToolCall(rec); err != nil {
				return err
			}
			r.tools.Calls.Note(rec)
		}
		if emptyResult != nil {
			if err := tx.InsertMessage(emptyResult); err != nil {
				return err
			}
		}
		if err := putLogs(tx, res.Logs); err != nil {
			return err
		}
		// A run that records its events records the rows' events here, in the order they were
		// emitted after the commit before.
		var buf [4]*weft.Message
		rows := append(append(buf[:0], msg), provided...)
		if emptyResult != nil {
			rows = append(rows, emptyResult)
		}
		if final != "" {
			var err error
			out.stopped = next // this attempt's copy
			out.stopped.Of(s.side).Window = msg.Seq
			out.finalState, err = runStop{r, final, ""}.persist(tx, &out.stopped, weft.ThreadAwaitingHuman, last, rows...)
			return err
		}
		for _, m := range rows {
			r.journal.StageMessage(m)
		}
		if startNow != nil {
			r.journal.Stage(r.journal.Event("tool_started", ToolStarted{CallID: startNow.ID, Name: startNow.Name, Depth: s.depth}))
			out.staged = true
		}
		return tx.SetExecState(runstate.Key, state)
	})
	if err != nil {
		r.model.ForgetEnds()
		if len(calls) > 0 {
			// The transaction may have committed with the first call marked running (its answer
			// lost with the connection): its tool has not run, and runs when the run resumes here.
			r.e.sched.KeepNotRun(r.thread.ID, calls[0].ID)
		}
		return "", err
	}
	r.journal.NoteSaved(state)
	if final != "" {
		r.state = out.stopped
		r.journal.NoteSaved(out.finalState)
	}
	if out.staged {
		ms.startNow = startNow
	}
	return final, nil
}

// replied updates the run after the reply committed: hooks, the row cache, events, and the
// sub-prompt's nested rows. It returns the reply and the calls left to run.
func (ms *modelStep) replied(req *weft.Request) (*weft.Message, []weft.ToolCall) {
	r, s := ms.r, ms.s
	msg, calls, provided, emptyResult, res := ms.msg, ms.calls, ms.provided, ms.emptyResult, ms.res
	if r.obs != nil {
		r.obs.ModelCall(r.model.Record(s.call(), req, res.Logs, msg, nil))
	}
	r.hooks.AfterInsert(r.scopeHooks(s, weft.HookAfterCreateMessage), msg)
	if emptyResult != nil {
		r.hooks.AfterInsert(r.scopeHooks(s, weft.HookAfterCreateMessage), emptyResult)
	}
	r.addRow(*msg)
	if ms.startNow != nil {
		r.tools.Started(ms.startNow)
	}
	r.journal.Stored(*msg)
	for _, tm := range provided {
		r.hooks.AfterInsert(r.scopeHooks(s, weft.HookAfterCreateMessage), tm)
		r.addRow(*tm)
		r.journal.Stored(*tm)
	}
	if s.depth > 0 && len(provided) > 0 {
		s.nested = append(s.nested, *msg)
		for _, tm := range provided {
			s.nested = append(s.nested, *tm)
		}
		return msg, calls
	}
	if emptyResult != nil {
		r.addRow(*emptyResult)
		r.journal.Stored(*emptyResult)
		if s.depth > 0 {
			s.nested = append(s.nested, *msg, *emptyResult)
		}
		return msg, nil
	}
	if s.depth > 0 {
		s.nested = append(s.nested, *msg)
	}
	return msg, calls
}

// providerResults builds the tool messages of the reply's provider-executed calls and returns
// them with the calls left to run locally. A provider call the reply did not answer stays local
// (it then fails with "cannot run locally").
func (ms *modelStep) providerResults(res *modelcall.Result, calls []weft.ToolCall) ([]*weft.Message, []weft.ToolCall) {
	r, s, parentID := ms.r, ms.s, ms.parentID
	if len(res.Resp.ProviderResults) == 0 || len(calls) == 0 {
		return nil, calls
	}
	byID := make(map[string]weft.ProviderToolResult, len(res.Resp.ProviderResults))
	for _, pr := range res.Resp.ProviderResults {
		byID[pr.CallID] = pr
	}
	var provided []*weft.Message
	local := calls[:0:0]
	for i, c := range calls {
		pr, ok := byID[res.Resp.ToolCalls[i].ID]
		if !ok {
			local = append(local, c)
			continue
		}
		tm := &weft.Message{ID: weft.NewID("msg_"), Role: weft.RoleTool, Side: s.side, Name: c.Name, ToolCallID: c.ID,
			ToolStatus: weft.ToolSuccess, Status: weft.MessageCompleted, Depth: s.depth, ParentID: parentID, RunID: r.id}
		if s.depth > 0 {
			tm.ParentID = s.parentID
		}
		if pr.Status == weft.ToolError {
			tm.ToolStatus = weft.ToolError
		}
		tm.Content = dispatch.Content(tm.ToolStatus, r.red.String(pr.Content))
		tm.Metadata = map[string]any{"provider_executed": true, "provider": res.Model.Provider}
		if len(pr.Raw) > 0 {
			// Kept verbatim for replay, unless redaction had to change it.
			var raw any
			if red := r.red.String(string(pr.Raw)); red == string(pr.Raw) && json.Unmarshal(pr.Raw, &raw) == nil {
				tm.Metadata["provider_raw"] = raw
			}
		}
		r.hooks.BeforeInsert(r.scopeHooks(s, weft.HookBeforeCreateMessage), tm, r.red)
		provided = append(provided, tm)
	}
	return provided, local
}

func putLogs(tx weft.Tx, logs []*weft.LogEntry) error {
	for _, l := range logs {
		if err := tx.PutLog(l); err != nil {
			return err
		}
	}
	return nil
}

// uniqueCallIDs replaces missing or already used call ids by fresh ones.
func (ms *modelStep) uniqueCallIDs(in []weft.ToolCall) []weft.ToolCall {
	r := ms.r
	if len(in) == 0 {
		return nil
	}
	r.sync()
	out := make([]weft.ToolCall, len(in))
	for i, c := range in {
		if c.ID == "" || r.cache.CallIDs[c.ID] {
			c.ID = ms.freshCallID()
		}
		if c.Arguments == "" {
			c.Arguments = "{}"
		}
		r.cache.CallIDs[c.ID] = true
		out[i] = c
	}
	return out
}

// freshCallID returns a call id the run has not used.
func (ms *modelStep) freshCallID() string {
	r := ms.r
	r.sync()
	id := "call_" + strings.TrimPrefix(weft.NewID(""), "")
	r.cache.CallIDs[id] = true
	return id
}

// providerIDs maps fresh ids back to the provider's originals when any were replaced.
func providerIDs(orig, used []weft.ToolCall) map[string]any {
	var m map[string]any
	for i := range used {
		if orig[i].ID != used[i].ID {
			if m == nil {
				m = map[string]any{}
			}
			m[used[i].ID] = orig[i].ID
		}
	}
	return m
}
