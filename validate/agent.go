package validate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weft-agents/weft"
)

func (v *validator) agent(a *weft.Agent) {
	src := v.r.Source("agent", a.Name)
	if strings.TrimSpace(a.Name) == "" {
		v.errf(src, "name", "name is required (a non-empty string)")
	}
	switch a.Type {
	case "", weft.AIHuman, weft.DualAI:
	default:
		v.errf(src, "type", "type must be ai_human or dual_ai, got %q", a.Type)
	}
	if a.Budget != nil {
		for _, p := range a.Budget.Problems() {
			v.errf(src, "budget."+p[0], "%s", p[1])
		}
	}
	kind := a.Kind()
	if a.SideA.Human {
		v.errf(src, "sideA", "sideA is the AI side; a human side can only be sideB of an ai_human agent")
	} else {
		v.side(src, "sideA", a.SideA)
	}
	switch kind {
	case weft.AIHuman:
		if a.SideB != nil && !a.SideB.Human {
			v.errf(src, "sideB", "sideB of an ai_human agent is the human side ({human: true}) or absent")
		}
		if a.SideB != nil && a.SideB.Human {
			v.humanSide(src, "sideB", *a.SideB)
		}
	case weft.DualAI:
		switch {
		case a.SideB == nil:
			v.errf(src, "sideB", "a dual_ai agent needs an AI sideB (a prompt or handler)")
		case a.SideB.Human:
			v.errf(src, "sideB", "sideB of a dual_ai agent must be an AI side, not human")
		default:
			v.side(src, "sideB", *a.SideB)
		}
		ends := a.MaxSessionTurns > 0
		for _, s := range []*weft.AgentSide{&a.SideA, a.SideB} {
			if s != nil && (s.SessionStop != nil || s.SessionFail != nil) {
				ends = true
			}
		}
		if !ends {
			v.warnf(src, "", "dual_ai agent %q has no session end (sessionStop, sessionFail or maxSessionTurns); it runs until a step cap", a.Name)
		}
	}
	if a.MaxSessionTurns < 0 {
		v.errf(src, "maxSessionTurns", "maxSessionTurns must be a positive integer")
	}
	if a.ExposeAsTool && strings.TrimSpace(a.ToolDescription) == "" {
		v.errf(src, "toolDescription", "toolDescription is required when exposeAsTool is true")
	}
	for i, h := range a.Hooks {
		if _, ok := v.r.Hook(h); !ok {
			v.errf(src, fmt.Sprintf("hooks[%d]", i), "no hook with id %q", h)
		}
	}
	v.env(src, "env", a.Env, v.agentDeclared(a))
}

func (v *validator) agentDeclared(a *weft.Agent) map[string]weft.VarType {
	m := map[string]weft.VarType{}
	for _, s := range []weft.AgentSide{a.SideA, a.Side(weft.SideB)} {
		if p, ok := v.r.Prompt(s.Prompt); ok {
			for k, t := range declaredTypes(p.Variables) {
				m[k] = t
			}
		}
	}
	return m
}

func (v *validator) humanSide(src, base string, s weft.AgentSide) {
	if s.Prompt != "" || s.Handler != "" || s.StopTool != "" || s.SessionStop != nil || s.SessionFail != nil || s.SessionStatus != nil || s.MaxSteps != 0 {
		v.errf(src, base, "a human side takes only label")
	}
}

func (v *validator) side(src, base string, s weft.AgentSide) {
	if s == (weft.AgentSide{}) {
		v.errf(src, base, "%s is required ({prompt: NAME} or {handler: NAME})", base)
		return
	}
	switch {
	case s.Prompt != "" && s.Handler != "":
		v.errf(src, base, "a side has exactly one of prompt or handler")
	case s.Prompt == "" && s.Handler == "":
		v.errf(src, base+".prompt", "an AI side needs a prompt (or a Go handler)")
	}
	var p *weft.Prompt
	if s.Prompt != "" {
		if pp, ok := v.r.Prompt(s.Prompt); ok {
			p = pp
		} else {
			v.errf(src, base+".prompt", "no prompt named %q", s.Prompt)
		}
	}
	if s.Handler != "" {
		if _, ok := v.r.Handler(s.Handler); !ok {
			v.errf(src, base+".handler", "no handler named %q (handlers are registered in Go)", s.Handler)
		}
	}
	if s.MaxSteps < 0 {
		v.errf(src, base+".maxSteps", "maxSteps must be a positive integer")
	}
	if s.StopToolResponseProperty != "" && s.StopTool == "" {
		v.errf(src, base+".stopToolResponseProperty", "stopToolResponseProperty needs stopTool")
	}
	if s.StopTool != "" {
		if t := v.sideTool(src, base+".stopTool", p, s.StopTool); t != nil && s.StopToolResponseProperty != "" {
			v.stringArg(src, base+".stopToolResponseProperty", t, s.StopToolResponseProperty)
		}
	}
	for _, st := range []struct {
		key string
		t   *weft.SessionTool
	}{{"sessionStop", s.SessionStop}, {"sessionFail", s.SessionFail}, {"sessionStatus", s.SessionStatus}} {
		if st.t == nil {
			continue
		}
		if st.t.Name == "" {
			v.errf(src, base+"."+st.key+".name", "%s names a tool", st.key)
			continue
		}
		t := v.sideTool(src, base+"."+st.key, p, st.t.Name)
		if t != nil && st.t.MessageProperty != "" {
			v.stringArg(src, base+"."+st.key+".messageProperty", t, st.t.MessageProperty)
		}
		if t != nil && st.t.AttachmentsProperty != "" && (t.Args == nil || t.Args.Properties[st.t.AttachmentsProperty] == nil) {
			v.errf(src, base+"."+st.key+".attachmentsProperty", "%q is not an argument of tool %q", st.t.AttachmentsProperty, t.Name)
		}
	}
}

// sideTool checks that name is a tool offered by the side's prompt and returns it.
func (v *validator) sideTool(src, p string, pr *weft.Prompt, name string) *weft.Tool {
	if pr != nil && pr.Template == nil {
		listed := false
		for _, e := range pr.Tools {
			if e.Name == name {
				listed = true
			}
		}
		if !listed {
			v.errf(src, p, "%q is not among the tools of prompt %q", name, pr.Name)
		}
	}
	t, ok := v.r.Tool(name)
	if !ok {
		if v.r.MCPServerOf(name) == nil {
			v.errf(src, p, "no tool named %q", name)
		}
		return nil
	}
	return t
}

func (v *validator) stringArg(src, p string, t *weft.Tool, prop string) {
	if t.Args == nil || t.Args.Properties[prop] == nil {
		v.errf(src, p, "%q is not an argument of tool %q", prop, t.Name)
		return
	}
	ps := t.Args.Properties[prop]
	if ps.Type != "" && ps.Type != "string" || len(ps.Types) > 0 && !slices.Contains(ps.Types, "string") {
		v.errf(src, p, "argument %q of tool %q must be a string", prop, t.Name)
	}
}

// ---- Go-only definitions ----

func (v *validator) hook(h *weft.Hook) {
	src := v.r.Source("hook", h.ID)
	if h.ID == "" {
		v.errf(src, "ID", "hook id is required")
	}
	if err := h.CheckFn(); err != nil {
		v.errf(src, "Fn", "%v", err)
	}
}

func (v *validator) effect(e *weft.Effect) {
	src := v.r.Source("effect", e.Name)
	if e.Name == "" {
		v.errf(src, "Name", "effect name is required")
	}
	if e.Run == nil {
		v.errf(src, "Run", "effect %q has no Run function", e.Name)
	}
	if e.Args != nil {
		v.schema(src, "Args", e.Args)
	}
	if e.MaxAttempts < 0 {
		v.errf(src, "MaxAttempts", "MaxAttempts must not be negative")
	}
}

func (v *validator) handler(h *weft.Handler) {
	src := v.r.Source("handler", h.Name)
	if h.Name == "" {
		v.errf(src, "Name", "handler name is required")
	}
	if h.Fn == nil {
		v.errf(src, "Fn", "handler %q has no function", h.Name)
	}
}

// ambiguousNames warns where a bare tool entry resolves to a tool although a prompt or agent has the
// same name (a prefix such as `prompt:` forces the kind).
func (v *validator) ambiguousNames() {
	for _, p := range v.r.Prompts() {
		for i, e := range p.Tools {
			if e.Kind != weft.EntryAny {
				continue
			}
			var kinds []string
			if _, ok := v.r.Tool(e.Name); ok {
				kinds = append(kinds, "tool")
			}
			if _, ok := v.r.Prompt(e.Name); ok {
				kinds = append(kinds, "prompt")
			}
			if _, ok := v.r.Agent(e.Name); ok {
				kinds = append(kinds, "agent")
			}
			if len(kinds) > 1 {
				v.warnf(v.r.Source("prompt", p.Name), fmt.Sprintf("tools[%d]", i), "%q names both %s; the bare name resolves to the %s (write %s:%s for the other)", e.Name, strings.Join(kinds, " and "), kinds[0], kinds[1], e.Name)
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
