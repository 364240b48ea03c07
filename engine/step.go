package engine

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
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
	s.final = finalPlanOf(r.agent, &def, side)
	if err := (parentRun{r, s}).startImmediate(p, side); err != nil {
		return stepOutcome{}, err
	}
	if r.e.commit.Observed() {
		r.journal.Emit("step_started", StepStarted{RunID: r.id, Step: r.steps, Side: side, Prompt: p.Name})
	}
	req, err := r.stepRequest(s)
	if err != nil {
		var be *weft.BlockedError
		if !asBlocked(err, &be) {
			return stepOutcome{}, err
		}
		// prefilter_llm_history blocked the run; the reason becomes the assistant message.
		if err := r.insertAssistant(side, p.Name, be.Reason); err != nil {
			return stepOutcome{}, err
		}
		return stepOutcome{stop: weft.StopHookBlocked, stopText: be.Reason}, nil
	}
	ms := modelStep{r: r, s: s}
	msg, calls, final, err := ms.call(req)
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
	if out, ended := sessionEnd(def, results, s.fx); ended {
		return out, nil
	}
	r.sync()
	if reason := repeatedError(r.cache.Rows); reason != "" {
		if err := r.insertAssistant(side, p.Name, reason); err != nil {
			return stepOutcome{}, err
		}
		return stepOutcome{stop: weft.StopRepeatedError, stopText: reason}, nil
	}
	return ms.turnCompletion(def, results)
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
func sessionEnd(def weft.AgentSide, results []callResult, fx *toolEffects) (stepOutcome, bool) {
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

// finalPlanOf returns the finalPlan of side of agent, acting as def.
func finalPlanOf(agent *weft.Agent, def *weft.AgentSide, side weft.Side) finalPlan {
	next := agent.Side(side.Other())
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

// turnCompletion decides whether the step, its calls run with results, completed the side's turn.
func (ms *modelStep) turnCompletion(def weft.AgentSide, results []callResult) (stepOutcome, error) {
	msg, calls := ms.msg, ms.calls
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
					if err := ms.updateContent(text); err != nil {
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

// updateContent replaces the text of the reply, a stored row, and streams the row again.
func (ms *modelStep) updateContent(text string) error {
	r, msg := ms.r, ms.msg
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

var (
	errorIDs     = regexp.MustCompile(`[A-Za-z]+_[0-9A-Za-z]{6,}|[0-9]+`)
	errorSpacing = regexp.MustCompile(`\s+`)
)

// repeatedError reports a repeated_tool_error stop text when the 8 latest tool messages of rows
// (the run's top-level rows) are errors with the same text, ids and numbers masked.
func repeatedError(rows []*weft.Message) string {
	const n = 8
	var texts []string
	for i := len(rows) - 1; i >= 0 && len(texts) < n; i-- {
		m := rows[i]
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
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].Role == weft.RoleTool {
			last = rows[i].Content
			break
		}
	}
	return fmt.Sprintf("I stopped because the same tool error repeated %d times: %s", n, strings.TrimPrefix(last, "Failed to execute tool: "))
}
