package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/weft-agents/weft"
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

// sampler is implemented by template prompts that have sample arguments.
type sampler interface{ SampleArgs() map[string]any }

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
// strategy, and why.
type ContextReport struct {
	// Strategy is the prompt's context strategy.
	Strategy weft.ContextStrategy `json:"strategy"`
	// Model is the prompt's model; Window its capabilities.maxContextTokens (0: unknown).
	Model  string `json:"model,omitempty"`
	Window int    `json:"window,omitempty"`
	// Budget is the tokens the request may take; TokensBefore and TokensAfter its estimate before
	// and after messages were left out (0 when nothing needed counting).
	Budget       int `json:"budget,omitempty"`
	TokensBefore int `json:"tokens_before,omitempty"`
	TokensAfter  int `json:"tokens_after,omitempty"`
	// Omitted is the number of messages left out so that the request fits.
	Omitted int `json:"omitted_messages"`
	// SummaryID is the summary row the request carries; Summarized the rows it stands for.
	SummaryID  string `json:"summary_id,omitempty"`
	Summarized int    `json:"summarized_messages,omitempty"`
	// Pending is, under summarize, the rows the step folds into the summary (one summarizer call)
	// before it sends the request; the request shown leaves them out.
	Pending int `json:"pending_fold,omitempty"`
	// Reason says all of it in a sentence.
	Reason string `json:"reason"`
}

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
		var err error
		if r, err = e.loadRun(ctx, in.ThreadID); err != nil {
			return nil, err
		}
		if len(in.Args) == 0 {
			in.Args = r.thread.Arguments
		}
		// The next step of the side this prompt drives (a human side due next means the AI side
		// after the human's message).
		if def := r.agent.Side(r.state.Side); def.Prompt != p.Name {
			other := r.state.Side.Other()
			if r.agent.Side(other).Prompt == p.Name || !def.IsAI() {
				r.state.Side = other
			}
		}
	} else {
		a := &weft.Agent{Name: "render", SideA: weft.AgentSide{Prompt: p.Name}}
		r = &run{e: e, ctx: ctx, ar: &activeRun{}, thread: &weft.Thread{ID: "render", Agent: a.Name}, agent: a,
			state: runstate.State{Side: weft.SideA}, rowCache: rowCache{callIDs: map[string]bool{}}}
		r.journal.Init(ctx, &e.commit, (*journalHost)(r), r.thread, weft.Fence{}, nil)
		r.wire()
		_, user, instance, err := vars.Load(ctx, e.store, "", "")
		if err != nil {
			return nil, err
		}
		decls := vars.NewGraph(e.reg, a, nil).Declared()
		declared := vars.DeclaredTypes(decls)
		thread := map[string]weft.EnvValue{}
		for k, v := range in.Env {
			t, ok := declared[k]
			if !ok {
				t = weft.VarSecret
			}
			thread[k] = weft.EnvValue{Name: k, Value: v, Type: t}
		}
		r.env = &vars.View{Thread: thread, User: vars.Layer(user), Instance: vars.Layer(instance), Declared: declared}
		// The prompt's own required variables are missing as weft run would find them (tools'
		// variables are read when a tool runs, not to render the prompt).
		var own []vars.MissingVar
		for _, m := range vars.Missing(decls, r.env) {
			if slices.Contains(m.DeclaredBy, "prompt "+p.Name) {
				own = append(own, m)
			}
		}
		if len(own) > 0 {
			return nil, &MissingVariablesError{Missing: own}
		}
		r.red = e.secrets.For(r.env)
	}
	args := in.Args
	if sp, ok := p.Template.(sampler); ok {
		merged := map[string]any{}
		for k, v := range sp.SampleArgs() {
			merged[k] = v
		}
		for k, v := range args {
			merged[k] = v
		}
		args = merged
	}
	if p.RequiredSchema != nil {
		v, err := e.validator(p.RequiredSchema)
		if err != nil {
			return nil, err
		}
		out, err := v.Validate(args)
		if err != nil {
			return nil, &weft.Error{Code: weft.EInvalid, Message: fmt.Sprintf("arguments of prompt %q", p.Name), Err: err}
		}
		args, _ = out.(map[string]any)
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
	rep.Reason = rep.reason()
	r.model.Redact(req)
	return &Rendered{Request: req, Context: rep}, nil
}

// reason says in a sentence what the report holds.
func (c ContextReport) reason() string {
	var parts []string
	switch {
	case c.Strategy == weft.ContextNone:
		parts = append(parts, "context.strategy none: the whole history is sent; a request past the window gets the provider's error")
	case c.Window == 0:
		parts = append(parts, fmt.Sprintf("model %s declares no capabilities.maxContextTokens: nothing is left out until the provider refuses a request as too long", c.Model))
	case c.Omitted > 0:
		parts = append(parts, fmt.Sprintf("%d older messages are left out so that the request fits model %s's window (%d → %d tokens of a budget of %d)",
			c.Omitted, c.Model, c.TokensBefore, c.TokensAfter, c.Budget))
	default:
		parts = append(parts, fmt.Sprintf("nothing is left out: the request fits model %s's window (about %d tokens of a budget of %d)", c.Model, c.TokensAfter, c.Budget))
	}
	if c.SummaryID != "" {
		parts = append(parts, fmt.Sprintf("the summary %s stands for %d earlier messages, which are not sent", c.SummaryID, c.Summarized))
	}
	if c.Pending > 0 {
		parts = append(parts, fmt.Sprintf("%d more messages fell out of the window: the step folds them into the summary (one summarizer call) before it sends the request", c.Pending))
	}
	return strings.Join(parts, "; ")
}
