package engine

import (
	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/hooks"
	"github.com/weft-agents/weft/engine/modelcall"
)

// requests builds the run's provider requests for its scopes (modelcall.Requests builds them from
// a scope's modelcall.Step).
type requests struct {
	modelcall.Requests
	// r is the run whose scopes' hooks see the requests.
	r *run
}

// step is what the request of s is built from (withHooks: with the hooks of the request's points):
// s.req, filled at the scope's first request and kept for its next ones; what the scope changes
// between them (the tools called, its tools, its summary) is copied in each time.
func (q *requests) step(s *scope, withHooks bool) *modelcall.Step {
	st := &s.req
	if st.Prompt == nil {
		st.Scope, st.Rendered, st.Args, st.Env = s.call(), s.rendered, s.args, s.env
	}
	st.ToolCalled, st.Specs, st.Summary = s.toolCalled, s.specs, s.summary
	if withHooks && !s.reqHooks {
		if len(hooks.Applying(s.prompt.Hooks, q.r.agent.Hooks)) > 0 {
			st.SystemHooks = q.r.scopeHooks(s, weft.HookAfterSystemMessage)
			st.FilterHooks = q.r.scopeHooks(s, weft.HookFilterMessages)
			st.PrefilterHooks = q.r.scopeHooks(s, weft.HookPrefilterLLMHistory)
		}
		s.reqHooks = true
	}
	return st
}

// history selects the stored rows sent to the model for a top-level step of s (Requests.History);
// under summarize it sets s.summary.
func (q *requests) history(s *scope) []*weft.Message {
	st := q.step(s, false)
	rows := q.History(st)
	s.summary = st.Summary
	return rows
}

// build assembles the request of s from rows (Requests.Build).
func (q *requests) build(s *scope, rows []*weft.Message) (*weft.Request, error) {
	return q.Build(q.step(s, true), rows)
}
