package intake

import (
	"context"
	"fmt"
	"maps"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/budget"
	"github.com/weft-agents/weft/engine/vars"
)

// NewThread describes a thread to create.
type NewThread struct {
	// Agent names the agent; required.
	Agent string
	// UserID owns the thread ("" for local use).
	UserID string
	// Env holds thread-layer values; EnvTypes gives the type of values not declared anywhere
	// (undeclared, untyped values are stored as secret).
	Env      map[string]string
	EnvTypes map[string]weft.VarType
	// Arguments are validated against side A's requiredSchema.
	Arguments map[string]any
	// Tags, Properties and Label annotate the thread.
	Tags       []string
	Properties map[string]any
	Label      string
	// Budget caps the thread's spend (its descendants' included), replacing its agent's.
	Budget *weft.Budget
}

// Thread checks a thread to create and returns it, its agent and its thread-layer env as the
// store is to hold them (not yet stored): the agent must be defined, the arguments valid against
// side A's requiredSchema (defaults applied), the budget valid, and every variable the agent's
// graph requires must have a value (a *vars.MissingError lists those that do not).
func (in *Intake) Thread(ctx context.Context, nt NewThread) (*weft.Thread, *weft.Agent, []weft.EnvValue, error) {
	a, ok := in.Registry.Agent(nt.Agent)
	if !ok {
		return nil, nil, nil, weft.Errorf(weft.ENotFound, "no agent named %q", nt.Agent)
	}
	args, err := in.arguments(a, nt.Arguments)
	if err != nil {
		return nil, nil, nil, err
	}
	if nt.Budget != nil {
		if field, problem := nt.Budget.Check(); problem != "" {
			return nil, nil, nil, weft.Errorf(weft.EInvalid, "budget.%s: %s", field, problem)
		}
		nt.Properties = maps.Clone(nt.Properties)
		if nt.Properties == nil {
			nt.Properties = map[string]any{}
		}
		nt.Properties[budget.Property] = *nt.Budget
	}
	_, user, instance, err := vars.Load(ctx, in.Store, "", nt.UserID)
	if err != nil {
		return nil, nil, nil, err
	}
	g := vars.NewGraph(in.Registry, a, nil)
	decls := g.Declared()
	declared := vars.DeclaredTypes(decls)
	thread := vars.ThreadLayer(nt.Env, declared, nt.EnvTypes)
	view := &vars.View{Thread: thread, Agent: a.Env, User: vars.Layer(user), Instance: vars.Layer(instance), Declared: declared}
	// Optional entries count only when their flag resolves true.
	g = vars.NewGraph(in.Registry, a, func(flag string) bool {
		v, ok := view.Lookup(flag)
		return ok && vars.FlagOn(v.Value)
	})
	decls = g.Declared()
	if missing := vars.Missing(decls, view); len(missing) > 0 {
		return nil, nil, nil, &vars.MissingError{Missing: missing}
	}
	now := in.Clock.Now().UTC()
	t := &weft.Thread{ID: weft.NewID("thr_"), Agent: a.Name, OriginAgent: a.Name, UserID: nt.UserID,
		Label: nt.Label, Tags: nt.Tags, Properties: nt.Properties, Arguments: args, Status: weft.ThreadIdle,
		CreatedAt: now, UpdatedAt: now, LastActivityAt: now}
	t.RootID = t.ID
	if t.Tags == nil {
		t.Tags = []string{}
	}
	if t.Properties == nil {
		t.Properties = map[string]any{}
	}
	env := make([]weft.EnvValue, 0, len(thread))
	for _, v := range thread {
		env = append(env, v)
	}
	return t, a, env, nil
}

// arguments checks creation arguments against side A's requiredSchema, applying defaults.
func (in *Intake) arguments(a *weft.Agent, args map[string]any) (map[string]any, error) {
	if args == nil {
		args = map[string]any{}
	}
	p, ok := in.Registry.Prompt(a.SideA.Prompt)
	if !ok || p.RequiredSchema == nil {
		return args, nil
	}
	v, err := in.Validator(p.RequiredSchema)
	if err != nil {
		return nil, fmt.Errorf("prompt %q: requiredSchema: %w", p.Name, err)
	}
	out, err := v.Validate(args)
	if err != nil {
		return nil, &weft.Error{Code: weft.EInvalid, Message: "invalid arguments", Err: err}
	}
	m, _ := out.(map[string]any)
	return m, nil
}

// sampler is implemented by template prompts that have sample arguments.
type sampler interface{ SampleArgs() map[string]any }

// RenderArguments returns the arguments a render of prompt p uses (`weft render`): args, over the
// prompt's sample arguments when it has some (a template prompt's missing inputs take their
// samples), validated against its requiredSchema with defaults applied.
func (in *Intake) RenderArguments(p *weft.Prompt, args map[string]any) (map[string]any, error) {
	if sp, ok := p.Template.(sampler); ok {
		merged := maps.Clone(sp.SampleArgs())
		if merged == nil {
			merged = map[string]any{}
		}
		maps.Copy(merged, args)
		args = merged
	}
	if p.RequiredSchema == nil {
		return args, nil
	}
	v, err := in.Validator(p.RequiredSchema)
	if err != nil {
		return nil, err
	}
	out, err := v.Validate(args)
	if err != nil {
		return nil, &weft.Error{Code: weft.EInvalid, Message: fmt.Sprintf("arguments of prompt %q", p.Name), Err: err}
	}
	args, _ = out.(map[string]any)
	return args, nil
}
