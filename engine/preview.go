package engine

import (
	"context"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/rowcache"
	"github.com/weft-agents/weft/engine/runstate"
	"github.com/weft-agents/weft/engine/vars"
	"github.com/weft-agents/weft/engine/window"
)

// PreviewInput names what to render.
type PreviewInput struct {
	// Prompt names the prompt.
	Prompt string
	// Args are the prompt's arguments, validated against its requiredSchema (defaults applied).
	// Missing inputs of a template prompt take their samples.
	Args map[string]any
	// Env holds thread-layer values (types as declared, else secret).
	Env map[string]string
	// ThreadID, when set, renders the next step of that thread: its history and acting side.
	ThreadID string
}

// previewKey marks the context of a preview (previewing).
type previewKey struct{}

// previewing reports whether ctx is a preview's: it renders requests and calls nothing.
func previewing(ctx context.Context) bool { return ctx.Value(previewKey{}) != nil }

// standalone reports whether ctx is a preview's without a thread: no message takes the place of
// a template's question slot, so it is shown.
func standalone(ctx context.Context) bool { b, _ := ctx.Value(previewKey{}).(bool); return b }

// Preview returns the request the prompt would send, without calling a model or storing anything.
// Secrets render as [redacted].
func (e *Engine) Preview(ctx context.Context, in PreviewInput) (*weft.Request, error) {
	out, err := e.Render(ctx, in)
	if err != nil {
		return nil, err
	}
	return out.Request, nil
}

// Rendered is a request Render built, with what it left out of the thread's history.
type Rendered struct {
	// Request is the request as the model would receive it, inside its window.
	Request *weft.Request
	// Context says what was left out of it, and why.
	Context ContextReport
}

// ContextReport says what a request left out of its thread's history under the prompt's context
// strategy, and why (window.Report).
type ContextReport = window.Report

// Render returns the request the prompt would send, kept inside the model's window as a run
// would keep it, and what was left out of it; it calls no model and stores nothing (`weft
// render`). Secrets render as [redacted].
func (e *Engine) Render(ctx context.Context, in PreviewInput) (*Rendered, error) {
	ctx = context.WithValue(ctx, previewKey{}, in.ThreadID == "")
	p, ok := e.reg.Prompt(in.Prompt)
	if !ok {
		return nil, weft.Errorf(weft.ENotFound, "no prompt named %q", in.Prompt)
	}
	var r *run
	if in.ThreadID != "" {
		start, err := runstate.Read(ctx, e.store, in.ThreadID, true)
		if err != nil {
			return nil, err
		}
		if r, err = e.newRun(ctx, nil, weft.Fence{}, start); err != nil {
			return nil, err
		}
		if len(in.Args) == 0 {
			in.Args = r.thread.Arguments
		}
		// The next step of the side this prompt drives.
		r.state.Side = runstate.RenderSide(r.agent, r.state.Side, p.Name)
	} else {
		a := &weft.Agent{Name: "render", SideA: weft.AgentSide{Prompt: p.Name}}
		r = &run{e: e, ctx: ctx, ar: &activeRun{}, thread: &weft.Thread{ID: "render", Agent: a.Name}, agent: a,
			state: runstate.State{Side: weft.SideA}, cache: rowcache.New()}
		r.journal.Init(ctx, &e.commit, (*journalHost)(r), r.thread, weft.Fence{}, nil)
		r.wire()
		env, decls, err := vars.RenderView(ctx, e.store, e.reg, a, in.Env)
		if err != nil {
			return nil, err
		}
		r.env = env
		// The prompt's own required variables are missing as weft run would find them (tools'
		// variables are read when a tool runs, not to render the prompt).
		if own := vars.MissingBy(decls, r.env, "prompt "+p.Name); len(own) > 0 {
			return nil, &MissingVariablesError{Missing: own}
		}
		r.red = e.secrets.For(r.env)
	}
	args, err := e.intake.RenderArguments(p, in.Args)
	if err != nil {
		return nil, err
	}
	s, err := r.newScope(p, 0, r.state.Side, args)
	if err != nil {
		return nil, err
	}
	var rows []*weft.Message
	if in.ThreadID != "" {
		rows = r.requests.history(s)
	}
	req, err := r.requests.build(s, rows)
	if err != nil {
		return nil, err
	}
	rep := ContextReport{Strategy: p.StrategyOf(), Model: p.Model}
	if m, ok := e.reg.Model(p.Model); ok {
		req.Model = m
		rep.Window = m.Capabilities.MaxContextTokens
		if s.summary != nil {
			rep.SummaryID, rep.Summarized = s.summary.ID, int(window.MetaInt(s.summary, window.MetaSummaryMessages))
		}
		if rep.Strategy == weft.ContextSummarize {
			rep.Pending = e.models.PlanFold(s.call(), s.summary, req, rows).N
		}
		fit := window.Fit(&e.tokens, p, req, m, 0)
		rep.Budget, rep.TokensBefore, rep.TokensAfter, rep.Omitted = fit.Budget, fit.Before, fit.After, fit.Omitted
	}
	rep.Explain()
	r.model.Redact(req)
	return &Rendered{Request: req, Context: rep}, nil
}
