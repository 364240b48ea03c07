package engine

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
	"github.com/weft-agents/weft/engine/dispatch"
	"github.com/weft-agents/weft/engine/modelcall"
	"github.com/weft-agents/weft/engine/observe"
	"github.com/weft-agents/weft/engine/runstate"
)

// stepOutcome is what a step decided.
type stepOutcome struct {
	turnDone   bool
	byStopTool bool
	stop       weft.StopReason
	// session ends the session with this reason (session_stop, session_fail, state_stop_session).
	session  weft.StopReason
	stopText string
	// stored: the step's reply completed the turn and its transaction stored the stop with it.
	stored bool
	// effects are the effects the loop has yet to apply: those it handed the step, with what the
	// step's tools and hooks added.
	effects toolEffects
}

// toolEffects are what tools and hooks asked of the run through their State or Execution, or by
// calling a handoff. They are collected in the step's scope and come back with its outcome; the
// loop applies them, and hands what it did not apply to the next step.
type toolEffects struct {
	// forced is the side Execution.ForceTurn chose to act after the step.
	forced weft.Side
	// stopSession is set by State.StopSession: the session ends after the step.
	stopSession *weft.StopSessionOptions
	// terminate is set by State.Terminate: the run stops after the step, the thread terminated.
	terminate bool
	// handoff is a handoff called in the step, applied after it.
	handoff *children.AgentHandoff
}

// takeForced returns and clears the side ForceTurn chose.
func (fx *toolEffects) takeForced() weft.Side {
	f := fx.forced
	fx.forced = ""
	return f
}

// emptyReply is the synthetic call stored for a reply with nothing in it.
const (
	emptyReplyTool  = "invalid_assistant_response"
	emptyReplyError = "Your response was empty. Reply with text or call a tool."
)

// step runs one top-level step of side with prompt p.
// carried are the effects the loop has not applied yet; the outcome returns them with the step's
// own, also when the step fails.
func (r *run) step(p *weft.Prompt, side weft.Side, def weft.AgentSide, carried toolEffects) (stepOutcome, error) {
	if r.obs == nil {
		return r.runStep(p, side, def, carried)
	}
	r.obs.StartStep(observe.StepInfo{Step: r.steps + 1, Side: side, Prompt: p.Name})
	out, err := r.runStep(p, side, def, carried)
	r.obs.EndStep(err)
	return out, err
}

func (r *run) runStep(p *weft.Prompt, side weft.Side, def weft.AgentSide, carried toolEffects) (out stepOutcome, err error) {
	r.steps++
	r.sideSteps[runstate.SideIndex(side)]++
	s, err := r.newScope(p, 0, side, r.thread.Arguments)
	if err != nil {
		return stepOutcome{effects: carried}, err
	}
	s.effects = carried
	defer func() { out.effects = s.effects }()
	s.toolCalled = r.state.ToolCalled
	s.final = r.finalPlanOf(&def, side)
	if err := (parentRun{r, s}).startImmediate(p, side); err != nil {
		return stepOutcome{}, err
	}
	if r.e.commit.Observed() {
		r.journal.Emit("step_started", StepStarted{RunID: r.id, Step: r.steps, Side: side, Prompt: p.Name})
	}
	req, err := r.stepRequest(s)
	if err != nil {
		var be *weft.BlockedError
		if asBlocked(err, &be) {
			return r.blocked(side, p, be.Reason)
		}
		return stepOutcome{}, err
	}
	msg, calls, final, err := r.modelStep(s, req, "")
	if err != nil {
		return stepOutcome{}, err
	}
	if final != "" {
		// The reply completed the turn and its transaction persisted the stop.
		return stepOutcome{stop: final, stored: true}, nil
	}
	results, err := r.tools.Execute(s, msg, calls)
	if err != nil {
		return stepOutcome{}, err
	}
	if err := r.tools.RunQueued(s); err != nil {
		return stepOutcome{}, err
	}
	if r.e.commit.Observed() {
		r.journal.Emit("step_completed", StepCompleted{RunID: r.id, Step: r.steps, Side: side, Prompt: p.Name, ToolCalls: len(calls)})
	}
	if out, ended := r.sessionEnd(def, results, s.fx); ended {
		return out, nil
	}
	if reason := r.repeatedError(); reason != "" {
		if err := r.insertAssistant(side, p.Name, reason); err != nil {
			return stepOutcome{}, err
		}
		return stepOutcome{stop: weft.StopRepeatedError, stopText: reason}, nil
	}
	return r.turnCompletion(def, msg, calls, results)
}

// stepRequest builds a top-level step's request; under context.strategy summarize, once what
// fell out of the window is folded into the summary, it is built again around the new summary
// (the request hooks see the rebuilt request too).
func (r *run) stepRequest(s *scope) (*weft.Request, error) {
	rows := r.requests.history(s)
	req, err := r.requests.build(s, rows)
	if err != nil || s.prompt.StrategyOf() != weft.ContextSummarize || s.depth != 0 {
		return req, err
	}
	folded, err := r.foldHistory(s, req, rows)
	if err != nil || !folded {
		return req, err
	}
	return r.requests.build(s, r.requests.history(s))
}

// sessionEnd checks the session tools of the side: a successful sessionFail
// call ends the session with session_fail, else a successful sessionStop with session_stop; a
// failed call ends nothing. State.StopSession ends it with state_stop_session.
func (r *run) sessionEnd(def weft.AgentSide, results []callResult, fx *toolEffects) (stepOutcome, bool) {
	for _, bound := range []struct {
		tool   *weft.SessionTool
		reason weft.StopReason
	}{{def.SessionFail, weft.StopSessionFail}, {def.SessionStop, weft.StopSession}} {
		if bound.tool == nil {
			continue
		}
		for _, res := range results {
			if res.Call.Name == bound.tool.Name && res.Result.Status == weft.ToolSuccess && !res.Removed {
				return stepOutcome{session: bound.reason, stopText: sessionText(bound.tool, res)}, true
			}
		}
	}
	if o := fx.stopSession; o != nil {
		fx.stopSession = nil
		reason := weft.StopStateSession
		if o.Failed {
			reason = weft.StopSessionFail
		}
		return stepOutcome{session: reason, stopText: o.Result}, true
	}
	return stepOutcome{}, false
}

// sessionText is the result text of a session tool call: its messageProperty argument, else the
// tool's result.
func sessionText(t *weft.SessionTool, res callResult) string {
	if t.MessageProperty != "" {
		if v, ok := res.Arg(t.MessageProperty).(string); ok {
			return v
		}
	}
	return res.Result.Result
}

// finalPlan tells, for a side whose completed turn hands over to a human, whether a reply
// without tool calls completes the turn, and with which stop reason. The zero finalPlan, of a side
// after which the run goes on, tells none does.
type finalPlan struct {
	// human: the other side, next, is a human (or no AI).
	human bool
	// onResponse: the side stops on a response; stopTool: it has a stop tool.
	onResponse, stopTool bool
}

// finalPlanOf returns the finalPlan of side, acting as def.
func (r *run) finalPlanOf(def *weft.AgentSide, side weft.Side) finalPlan {
	next := r.agent.Side(side.Other())
	if !(next.Human || !next.IsAI()) {
		return finalPlan{}
	}
	return finalPlan{human: true, onResponse: def.StopsOnResponse(), stopTool: def.StopTool != ""}
}

// stop returns the stop reason of a reply of text without tool calls ("" when it does not complete
// the turn, or the run goes on after it).
func (f finalPlan) stop(text string) weft.StopReason {
	switch {
	case !f.human:
		return ""
	case f.onResponse && strings.TrimSpace(text) != "":
		return weft.StopOnResponse
	case !f.onResponse && !f.stopTool:
		return weft.StopOnResponse
	}
	return ""
}

// turnCompletion decides whether the step completed the side's turn.
func (r *run) turnCompletion(def weft.AgentSide, msg *weft.Message, calls []weft.ToolCall, results []callResult) (stepOutcome, error) {
	if msg.Metadata != nil && msg.Metadata["empty_reply"] == true {
		return stepOutcome{}, nil
	}
	if def.StopTool != "" {
		for _, res := range results {
			if res.Call.Name != def.StopTool || res.Result.Status != weft.ToolSuccess || res.Removed {
				continue
			}
			if prop := def.StopToolResponseProperty; prop != "" {
				if text, ok := res.Arg(prop).(string); ok {
					if err := r.updateContent(msg, text); err != nil {
						return stepOutcome{}, err
					}
				}
			}
			return stepOutcome{turnDone: true, byStopTool: true}, nil
		}
	}
	if def.StopsOnResponse() {
		if len(calls) == 0 && strings.TrimSpace(msg.Content) != "" {
			return stepOutcome{turnDone: true}, nil
		}
		return stepOutcome{}, nil
	}
	if def.StopTool == "" {
		// Neither configured: every step completes the turn.
		return stepOutcome{turnDone: true}, nil
	}
	return stepOutcome{}, nil
}

// updateContent replaces the text of msg, a stored row, and streams the row again.
func (r *run) updateContent(msg *weft.Message, text string) error {
	updated := *msg
	updated.Content = text
	err := r.tx(func(tx weft.Tx) error {
		if err := tx.UpdateMessage(msg.ID, weft.MessageChange{Content: &text}); err != nil {
			return err
		}
		r.journal.StageMessage(&updated)
		return nil
	})
	if err == nil {
		*msg = updated
		r.replaceRow(*msg)
		r.journal.Stored(*msg)
	}
	return err
}

// modelStep calls the model and persists the reply with its calls, logs and run state in one
// transaction (S9–S10). parentID places sub-prompt rows under the caller's tool message. final is
// the stop the transaction stored with a reply that completed the turn ("" when none).
func (r *run) modelStep(s *scope, req *weft.Request, parentID string) (_ *weft.Message, _ []weft.ToolCall, final weft.StopReason, _ error) {
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
	w := r.replyOf(s, res, msgID, parentID)
	if final, err = r.commitReply(s, w); err != nil {
		return nil, nil, "", err
	}
	msg, calls := r.replied(s, req, w)
	return msg, calls, final, nil
}

// reply is a model step's reply as it is stored: its row, the calls left to run, the rows of
// provider-executed calls, the failing result of an empty reply.
type reply struct {
	res         *modelcall.Result
	msg         *weft.Message
	calls       []weft.ToolCall
	provided    []*weft.Message
	emptyResult *weft.Message
	empty       bool
	// staged: the transaction recorded startNow's tool_started.
	staged   bool
	startNow *weft.ToolCall
	// finalState is the run state stored with a stop the reply's transaction stored. It and
	// staged are set by the transaction's function, here rather than in variables it captures:
	// each of those would be an allocation of its own.
	finalState []byte
}

// replyOf builds the rows of the model's reply (S9), redacted, through the before-insert hooks.
func (r *run) replyOf(s *scope, res *modelcall.Result, msgID, parentID string) *reply {
	resp := res.Resp
	calls := r.uniqueCallIDs(resp.ToolCalls)
	msg := &weft.Message{ID: msgID, Role: weft.RoleAssistant, Side: s.side, Content: r.red.String(resp.Text),
		ToolCalls: dispatch.RedactCalls(r.red, calls), Status: weft.MessageCompleted, Depth: s.depth, ParentID: parentID, Prompt: s.prompt.Name,
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
	provided, calls := r.providerResults(s, res, msg, calls, parentID)
	var emptyResult *weft.Message
	if empty {
		// Stored with a synthetic failing call so the model sees its mistake.
		call := weft.ToolCall{ID: r.freshCallID(), Name: emptyReplyTool, Arguments: "{}"}
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
	return &reply{res: res, msg: msg, calls: calls, provided: provided, emptyResult: emptyResult, empty: empty}
}

// commitReply stores the reply with its call records, logs and run state in one transaction
// (S10); a reply that ends the turn with a human next stores the stop with it, and returns its
// reason.
func (r *run) commitReply(s *scope, w *reply) (weft.StopReason, error) {
	state := r.state.Encode()
	final := weft.StopReason("")
	msg, calls, provided, emptyResult, empty, res := w.msg, w.calls, w.provided, w.emptyResult, w.empty, w.res
	r.sync()
	if s.final.human && len(calls) == 0 && !empty && !r.tools.Queued() {
		final = s.final.stop(msg.Content)
	}
	prev := r.state
	last := final != "" && r.stopIsLast(s)
	// A reply whose one call starts at once records its message event and the call's
	// tool_started in this transaction (startsAtOnce), which the tool would otherwise wait for
	// a commit of their own to record.
	var startNow *weft.ToolCall
	if final == "" && len(provided) == 0 && emptyResult == nil && len(calls) == 1 && r.tools.StartsAtOnce(s, msg, calls[0]) {
		startNow = &calls[0]
	}
	if final != "" {
		// The reply completes the turn and a human is next: the stop goes into this transaction.
		r.state.CompleteTurn(s.side, 0)
		r.state.Side = s.side.Other()
	}
	err := r.tx(func(tx weft.Tx) error {
		w.staged = false
		if err := tx.InsertMessage(msg); err != nil {
			return err
		}
		if final != "" {
			r.state.Of(s.side).Window = msg.Seq
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
			w.finalState, err = r.persistStop(tx, weft.ThreadAwaitingHuman, final, "", last, rows...)
			return err
		}
		for _, m := range rows {
			r.journal.StageMessage(m)
		}
		if startNow != nil {
			r.journal.Stage(r.journal.Event("tool_started", ToolStarted{CallID: startNow.ID, Name: startNow.Name, Depth: s.depth}))
			w.staged = true
		}
		return tx.SetExecState(runstate.Key, state)
	})
	if err != nil {
		r.state = prev
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
		r.journal.NoteSaved(w.finalState)
	}
	w.startNow = startNow
	return final, nil
}

// replied updates the run after the reply committed: hooks, the row cache, events, and the
// sub-prompt's nested rows. It returns the reply and the calls left to run.
func (r *run) replied(s *scope, req *weft.Request, w *reply) (*weft.Message, []weft.ToolCall) {
	msg, calls, provided, emptyResult, res := w.msg, w.calls, w.provided, w.emptyResult, w.res
	if r.obs != nil {
		r.obs.ModelCall(r.model.Record(s.call(), req, res.Logs, msg, nil))
	}
	r.hooks.AfterInsert(r.scopeHooks(s, weft.HookAfterCreateMessage), msg)
	if emptyResult != nil {
		r.hooks.AfterInsert(r.scopeHooks(s, weft.HookAfterCreateMessage), emptyResult)
	}
	r.addRow(*msg)
	if w.staged {
		r.tools.Started(w.startNow)
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
func (r *run) providerResults(s *scope, res *modelcall.Result, msg *weft.Message, calls []weft.ToolCall, parentID string) ([]*weft.Message, []weft.ToolCall) {
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
func (r *run) uniqueCallIDs(in []weft.ToolCall) []weft.ToolCall {
	if len(in) == 0 {
		return nil
	}
	r.sync()
	out := make([]weft.ToolCall, len(in))
	for i, c := range in {
		if c.ID == "" || r.cache.CallIDs[c.ID] {
			c.ID = r.freshCallID()
		}
		if c.Arguments == "" {
			c.Arguments = "{}"
		}
		r.cache.CallIDs[c.ID] = true
		out[i] = c
	}
	return out
}

func (r *run) freshCallID() string {
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

// insertAssistant stores an assistant note of the runtime (repeated errors, hook blocks).
func (r *run) insertAssistant(side weft.Side, prompt, text string) error {
	m := &weft.Message{Role: weft.RoleAssistant, Side: side, Content: text, Status: weft.MessageCompleted, Prompt: prompt, RunID: r.id}
	if side == weft.SideB {
		m.Role = weft.RoleUser
	}
	if err := r.tx(func(tx weft.Tx) error { return r.journal.Insert(tx, m) }); err != nil {
		return err
	}
	r.addRow(*m)
	r.journal.Stored(*m)
	return nil
}

// blocked stops the run because prefilter_llm_history blocked it; the reason becomes the assistant
// message.
func (r *run) blocked(side weft.Side, p *weft.Prompt, reason string) (stepOutcome, error) {
	if err := r.insertAssistant(side, p.Name, reason); err != nil {
		return stepOutcome{}, err
	}
	return stepOutcome{stop: weft.StopHookBlocked, stopText: reason}, nil
}

var (
	errorIDs     = regexp.MustCompile(`[A-Za-z]+_[0-9A-Za-z]{6,}|[0-9]+`)
	errorSpacing = regexp.MustCompile(`\s+`)
)

// repeatedError reports a repeated_tool_error stop text when the 8 latest top-level tool messages
// are errors with the same text, ids and numbers masked.
func (r *run) repeatedError() string {
	const n = 8
	r.sync()
	var texts []string
	for i := len(r.cache.Rows) - 1; i >= 0 && len(texts) < n; i-- {
		m := r.cache.Rows[i]
		if m.Role != weft.RoleTool {
			continue
		}
		if m.ToolStatus != weft.ToolError {
			return ""
		}
		texts = append(texts, errorSpacing.ReplaceAllString(errorIDs.ReplaceAllString(m.Content, "#"), " "))
	}
	if len(texts) < n {
		return ""
	}
	for _, t := range texts[1:] {
		if t != texts[0] {
			return ""
		}
	}
	var last string
	for i := len(r.cache.Rows) - 1; i >= 0; i-- {
		if r.cache.Rows[i].Role == weft.RoleTool {
			last = r.cache.Rows[i].Content
			break
		}
	}
	return fmt.Sprintf("I stopped because the same tool error repeated %d times: %s", n, strings.TrimPrefix(last, "Failed to execute tool: "))
}
