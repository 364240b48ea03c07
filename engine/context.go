package engine

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

// scope is the prompt a step runs: the top-level side's prompt, or a sub-prompt at depth > 0.
type scope struct {
	prompt *weft.Prompt
	depth  int
	side   weft.Side
	// parentID is the caller's tool message id for sub-prompt rows.
	parentID string
	// args are the validated arguments the prompt renders with.
	args map[string]any
	// offered are the tools offered to the model, by name and in order.
	offered map[string]*offered
	specs   []weft.ToolSpec
	env     *envView
	// rendered holds the template rendering of this step (prefix/suffix messages), if any.
	rendered *weft.RenderedPrompt
	// nested are the rows of a sub-prompt's own run (its init message, calls and results).
	nested []weft.Message
	// toolCalled: a tool was called in the current turn (toolChoice required).
	toolCalled bool
	// final, at depth 0, tells whether a reply without calls ends the run (see finalPlan).
	final func(text string) weft.StopReason
	// provider is the provider of the prompt's model: provider-executed results and reasoning
	// blocks are replayed verbatim only to it.
	provider string
	// strict: tools are offered in strict form (option strictTools), so a null the model returns
	// for an optional property counts as absent (definitions.md §5.5).
	strict bool
	// fx collects what the scope's tools and hooks ask of the run: the step's own effects, which a
	// sub-prompt's scope shares with its caller.
	fx      *toolEffects
	effects toolEffects
}

// offered is a tool offered in a scope.
type offered struct {
	entry  weft.ToolEntry
	target weft.Target
	spec   weft.ToolSpec
	// lifecycle names an injected subagent lifecycle tool (subagent_create, …); entries are the
	// enabled resumable entries it serves.
	lifecycle string
	entries   []resumableEntry
	// check, when set, validates arguments instead of spec.Parameters (an unknown agent name gets
	// the lifecycle tool's own error rather than an enum mismatch).
	check *schema.Schema
}

// newScope resolves a prompt's enabled tool entries into offered tools.
func (r *run) newScope(p *weft.Prompt, depth int, side weft.Side, args map[string]any) (*scope, error) {
	s := &scope{prompt: p, depth: depth, side: side, args: args, offered: map[string]*offered{},
		env: r.env.with(p.Env, nil)}
	s.fx = &s.effects
	if p.Template != nil {
		out, err := p.Template.RenderPrompt(r.ctx, weft.TemplateInput{Args: args, Env: r.envLookup(s.env)})
		if err != nil {
			return nil, fmt.Errorf("rendering prompt %q: %w", p.Name, err)
		}
		s.rendered = out
	}
	entries := p.Tools
	if s.rendered != nil && len(s.rendered.Tools) > 0 {
		entries = append(append([]weft.ToolEntry(nil), entries...), s.rendered.Tools...)
	}
	model, _ := r.e.reg.Model(p.Model)
	if model != nil {
		s.provider = model.Provider
		strict := (&weft.Request{Model: model, Options: p.ModelOptions}).Option("strictTools")
		s.strict = strict == true
	}
	var resumable []resumableEntry
	for _, e := range entries {
		if e.Optional != "" {
			v, ok := s.env.lookup(e.Optional)
			if !ok || !flagOn(v.value) {
				continue
			}
		}
		t, ok := r.e.reg.Resolve(e)
		if !ok && (e.Kind == weft.EntryAny || e.Kind == weft.EntryTool) {
			t, ok = r.openMCPTool(s, e)
		}
		if !ok {
			return nil, fmt.Errorf("prompt %q: tool %q is not defined", p.Name, e.Name)
		}
		if t.MCP != nil {
			r.offerMCP(s, e, t)
			continue
		}
		o := &offered{entry: e, target: t}
		switch {
		case t.Tool != nil:
			o.spec = weft.ToolSpec{Name: t.Name, Description: t.Tool.Description, Parameters: unbound(argsSchema(t.Tool.Args), e.Bindings)}
			if t.Tool.ExecutionMode == weft.ExecProvider {
				if model == nil || model.Provider != t.Tool.ExecutionProvider {
					r.e.log.Warn("provider-executed tool omitted: the model's provider does not run it",
						"tool", t.Name, "provider", t.Tool.ExecutionProvider)
					continue
				}
				o.spec.Provider = t.Tool.ExecutionProvider
			}
		case t.Prompt != nil:
			o.spec = weft.ToolSpec{Name: t.Name, Description: t.Prompt.ToolDescription, Parameters: argsSchema(t.Prompt.RequiredSchema)}
		case t.Agent != nil && e.Resumable != nil && e.Resumable.Enabled:
			// Resumable agents are reached through the injected lifecycle tools (subagents.md §3).
			resumable = append(resumable, resumableEntry{entry: e, agent: t.Agent})
			continue
		case t.Agent != nil:
			desc := t.Agent.ToolDescription
			var params *schema.Schema
			if sp, ok := r.e.reg.Prompt(t.Agent.SideA.Prompt); ok && sp.RequiredSchema != nil {
				params = sp.RequiredSchema
			} else {
				params = schema.Object(schema.Field("message", schema.String()),
					schema.OptionalField("attachments", schema.Array(schema.String())))
			}
			o.spec = weft.ToolSpec{Name: t.Name, Description: desc, Parameters: params}
		}
		if _, dup := s.offered[o.spec.Name]; dup {
			continue
		}
		s.offered[o.spec.Name] = o
		s.specs = append(s.specs, o.spec)
	}
	if len(resumable) > 0 {
		if err := r.offerLifecycle(s, resumable); err != nil {
			return nil, err
		}
	}
	if row, ok := registryRow(r.thread); ok && row["parent_communication"] == "explicit" && depth == 0 {
		// A child that reports explicitly gets notify_parent (subagents.md §4.2).
		o := &offered{lifecycle: toolNotifyParent, spec: weft.ToolSpec{Name: toolNotifyParent, Description: "Send a message to the agent that created you.",
			Parameters: schema.Object(schema.Field("message", schema.String()), schema.OptionalField("attachments", schema.Array(schema.String())))}}
		if _, dup := s.offered[toolNotifyParent]; !dup {
			s.offered[toolNotifyParent] = o
			s.specs = append(s.specs, o.spec)
		}
	}
	return s, nil
}

// unbound returns the schema offered for a tool whose bound parameters are filled from the prompt's
// arguments: those parameters removed (a shallow copy; the tool's own schema is untouched).
func unbound(s *schema.Schema, bindings map[string]string) *schema.Schema {
	if len(bindings) == 0 {
		return s
	}
	c := *s
	c.Properties = map[string]*schema.Schema{}
	for k, v := range s.Properties {
		if _, bound := bindings[k]; !bound {
			c.Properties[k] = v
		}
	}
	c.Required = slices.DeleteFunc(slices.Clone(s.Required), func(k string) bool { _, b := bindings[k]; return b })
	c.PropertyOrder = slices.DeleteFunc(slices.Clone(s.PropertyOrder), func(k string) bool { _, b := bindings[k]; return b })
	return &c
}

func argsSchema(s *schema.Schema) *schema.Schema {
	if s == nil {
		return schema.NoArgs()
	}
	return s
}

// envLookup adapts an env view to the EnvLookup prompts render with.
func (r *run) envLookup(v *envView) weft.EnvLookup {
	return func(name string) (string, bool, bool) {
		x, ok := v.lookup(name)
		return x.value, x.typ == weft.VarSecret, ok
	}
}

// systemText renders the scope's system prompt and runs after_system_message.
func (r *run) systemText(s *scope) (string, error) {
	var text string
	if s.rendered != nil {
		text = s.rendered.System
	} else {
		var err error
		text, err = r.e.reg.RenderSystem(r.ctx, s.prompt.Name, s.args, r.envLookup(s.env))
		if err != nil {
			return "", err
		}
	}
	return r.hookSystemMessage(s, text), nil
}

// history selects the stored rows sent to the model for a top-level step of side (execution.md
// §3.2–3.4), before conversion. Rows are shared with the run's cache, not copied; only rows whose
// earlier tool calls are hidden are copies.
func (r *run) history(s *scope) []*weft.Message {
	p := s.prompt
	window := r.state.of(s.side).Window
	out := make([]*weft.Message, 0, len(r.rows))
	for _, m := range r.rows {
		if m.Status != weft.MessageCompleted || m.Depth != 0 {
			continue
		}
		if len(m.Metadata) > 0 {
			if ex, _ := m.Metadata["exclude_from_context"].(bool); ex {
				continue
			}
		}
		if m.Seq <= window {
			if !p.IncludeChat {
				continue
			}
			if !p.IncludePastTools {
				if m.Role == weft.RoleTool {
					continue
				}
				if len(m.ToolCalls) > 0 {
					if strings.TrimSpace(m.Content) == "" && len(m.Attachments) == 0 {
						continue
					}
					c := *m
					c.ToolCalls = nil
					m = &c
				}
			}
		}
		out = append(out, m)
	}
	return out
}

// buildRequest assembles a step's provider request: system → template prefix → history → template
// suffix (execution.md §3).
func (r *run) buildRequest(s *scope, rows []*weft.Message) (*weft.Request, error) {
	sys, err := r.systemText(s)
	if err != nil {
		return nil, err
	}
	rows = r.hookFilterMessages(s, rows)
	extra := 1
	if s.rendered != nil {
		extra += len(s.rendered.Prefix) + len(s.rendered.Suffix)
	}
	// A request is dead once its step is stored (providers and OnRequest must not keep it), so its
	// message buffer is reused by the run's next step and then by other runs (reqBufs).
	msgs := r.reqBuf[:0]
	if need := len(rows) + extra + 1; cap(msgs) < need {
		msgs = getReqBuf(need)
	}
	msgs = append(msgs, weft.LLMMessage{Role: weft.RoleSystem, Content: sys})
	if s.rendered != nil {
		msgs = append(msgs, s.rendered.Prefix...)
	}
	start := len(msgs)
	msgs = r.convert(s, rows, msgs)
	if s.rendered != nil && s.rendered.HistoryLimit > 0 && len(msgs)-start > s.rendered.HistoryLimit {
		hist := pair(msgs[len(msgs)-s.rendered.HistoryLimit:])
		msgs = append(msgs[:start], hist...)
	}
	if s.rendered != nil {
		msgs = append(msgs, s.rendered.Suffix...)
	}
	r.reqBuf = msgs[:0]
	msgs, err = r.hookPrefilter(s, msgs)
	if err != nil {
		return nil, err
	}
	p := s.prompt
	req := &weft.Request{Messages: msgs, ToolChoice: p.ToolChoice, ParallelToolCalls: p.ParallelToolCalls,
		Reasoning: p.Reasoning, Prompt: p.Name, Agent: r.thread.Agent, Side: s.side, Depth: s.depth}
	if req.ToolChoice == "" {
		req.ToolChoice = weft.ToolChoiceAuto
	}
	if p.OutputSchema != nil {
		req.Output = &weft.OutputSpec{Name: p.Name, Schema: p.OutputSchema}
	}
	switch {
	case req.ToolChoice == weft.ToolChoiceNone:
		// seed 000 §4.2: no tool definitions are sent.
	case req.ToolChoice == weft.ToolChoiceRequired && s.toolCalled:
		req.ToolChoice = weft.ToolChoiceAuto
		req.Tools = s.specs
	default:
		req.Tools = s.specs
	}
	return req, nil
}

// convert appends stored rows to out as provider-neutral messages: perspective, attachments and
// images, then pairing (execution.md §3.6–3.8).
func (r *run) convert(s *scope, rows []*weft.Message, out []weft.LLMMessage) []weft.LLMMessage {
	threshold := s.prompt.ImageThreshold()
	start := len(out)
	for i, m := range rows {
		if m.Role == weft.RoleTool && rowSide(m) != s.side {
			continue // the other side's tool messages are dropped
		}
		recent := len(rows)-i <= threshold
		// Built in place: the struct is large, and copying it in costs write barriers while the GC
		// marks.
		out = append(out, weft.LLMMessage{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID, ToolStatus: m.ToolStatus})
		lm := &out[len(out)-1]
		// Perspective: the acting side's rows are its own (assistant, calls kept); the other side's
		// are user messages without calls, and its tool messages are dropped.
		switch m.Role {
		case weft.RoleAssistant, weft.RoleUser:
			if rowSide(m) == s.side {
				lm.Role = weft.RoleAssistant
				lm.ToolCalls = m.ToolCalls
				if rs := s.prompt.Reasoning; rs != nil && rs.Include && m.Prompt == s.prompt.Name && m.Reasoning != "" {
					lm.Metadata = map[string]any{"reasoning": m.Reasoning}
				}
				// Provider reasoning blocks go back to the prompt that produced them: always within
				// the current turn (providers require them to continue after tool use), for earlier
				// turns only with reasoning.include (execution.md §3.9).
				if blocks, ok := m.Metadata["reasoning_blocks"]; ok && m.Prompt == s.prompt.Name {
					inTurn := m.Seq > r.state.of(s.side).Window || s.depth > 0
					if rs := s.prompt.Reasoning; inTurn || (rs != nil && rs.Include) {
						if raw, err := json.Marshal(blocks); err == nil {
							if lm.Metadata == nil {
								lm.Metadata = map[string]any{}
							}
							lm.Metadata["reasoning_blocks"] = json.RawMessage(raw)
						}
					}
				}
			} else {
				lm.Role = weft.RoleUser
				lm.ToolCalls = nil
			}
			lm.Name = ""
		case weft.RoleTool:
			// A provider-executed result goes back verbatim to the provider that produced it;
			// others see the call and its text like any tool result (definitions.md §6.5).
			if raw, ok := m.Metadata["provider_raw"]; ok && m.Metadata["provider"] == s.provider {
				if b, err := json.Marshal(raw); err == nil {
					lm.Metadata = map[string]any{"provider_executed": true, "provider_raw": json.RawMessage(b)}
				}
			}
		}
		r.attach(lm, m, recent)
	}
	if !needsPairing(out[start:]) {
		return out
	}
	return append(out[:start], pair(out[start:])...)
}

// rowSide is the side a stored row belongs to: its side, else assistant → A and user → B.
func rowSide(m *weft.Message) weft.Side {
	switch {
	case m.Side != "":
		return m.Side
	case m.Role == weft.RoleUser:
		return weft.SideB
	}
	return weft.SideA
}

// attach adds a row's attachments: recent images as image parts (inlined as data: URIs), older
// ones as text, other files as a listing (execution.md §3.8, seed 000 §7).
func (r *run) attach(lm *weft.LLMMessage, m *weft.Message, recent bool) {
	if len(m.Attachments) == 0 {
		return
	}
	var parts []weft.ContentPart
	var texts, files []string
	for _, a := range m.Attachments {
		isImage := modelImage(a.MimeType)
		switch {
		case isImage && recent:
			data, err := r.e.store.Files().ReadFile(r.ctx, r.thread.ID, a.Path)
			if err != nil {
				texts = append(texts, fmt.Sprintf("[Image: %s (unavailable)]", a.Name))
				continue
			}
			parts = append(parts, weft.ContentPart{Type: weft.PartImage, MimeType: a.MimeType, Description: a.Description,
				URL: "data:" + a.MimeType + ";base64," + base64.StdEncoding.EncodeToString(data)})
		case isImage:
			switch {
			case a.Description != "":
				texts = append(texts, fmt.Sprintf("[Image: %s] %s", a.Name, a.Description))
			case a.Width > 0 && a.Height > 0:
				texts = append(texts, fmt.Sprintf("[Image: %s (%dx%d)]", a.Name, a.Width, a.Height))
			default:
				texts = append(texts, fmt.Sprintf("[Image: %s]", a.Name))
			}
		default:
			files = append(files, fmt.Sprintf("%s (%s)", a.Name, a.Path))
		}
	}
	text := lm.Content
	for _, t := range texts {
		text = joinNonEmpty(text, t, "\n")
	}
	if len(files) > 0 {
		text = joinNonEmpty(text, "[Attached files: "+strings.Join(files, ", ")+"]", "\n")
	}
	if len(parts) == 0 {
		lm.Content = text
		return
	}
	if lm.Role == weft.RoleTool {
		// Tool-result images go in a user message after the results block (adapters that allow
		// images in tool results may move them back).
		lm.Content = text
		lm.Metadata = map[string]any{"images": parts}
		return
	}
	lm.Parts = append([]weft.ContentPart{{Type: weft.PartText, Text: text}}, parts...)
	if text == "" {
		lm.Parts = parts
	}
	lm.Content = ""
}

// modelImage reports the image types models accept as image input; other images (SVG, TIFF, …)
// are listed as files.
func modelImage(mimeType string) bool {
	switch mimeType {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

func joinNonEmpty(a, b, sep string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + sep + b
}

// missingResult is the synthetic result of a call whose result was never stored.
const missingResult = "Tool result missing (execution was interrupted)"

// blank reports whether s is empty or only white space. It checks the ends first: context
// assembly asks it of every message, and almost none are blank.
func blank(s string) bool {
	if s == "" {
		return true
	}
	if c, d := s[0], s[len(s)-1]; c > ' ' && c < utf8.RuneSelf || d > ' ' && d < utf8.RuneSelf {
		return false
	}
	return strings.TrimSpace(s) == ""
}

// needsPairing reports whether pair would change the list: an assistant message whose calls are
// not followed by exactly their results in order, an orphan tool message, an empty message, or
// tool-result images to move.
func needsPairing(in []weft.LLMMessage) bool {
	for i := 0; i < len(in); i++ {
		m := &in[i]
		switch {
		case m.Role == weft.RoleTool:
			return true
		case (m.Role == weft.RoleAssistant || m.Role == weft.RoleUser) && len(m.ToolCalls) == 0 && len(m.Parts) == 0 && blank(m.Content):
			return true
		case m.Role == weft.RoleAssistant && len(m.ToolCalls) > 0:
			for _, c := range m.ToolCalls {
				i++
				if i >= len(in) || in[i].Role != weft.RoleTool || in[i].ToolCallID != c.ID || in[i].Metadata != nil {
					return true
				}
			}
		}
	}
	return false
}

// pair makes every assistant message with calls be followed by exactly its results in call order,
// wherever those results were stored (a message injected while a tool ran sits between them),
// synthesises missing results, drops orphan tool messages and empty messages, and moves
// tool-result images into a user message after the results block (execution.md §3.7).
func pair(in []weft.LLMMessage) []weft.LLMMessage {
	out := make([]weft.LLMMessage, 0, len(in))
	used := make([]bool, len(in))
	for i, m := range in {
		if used[i] {
			continue
		}
		switch {
		case m.Role == weft.RoleTool:
			continue // orphan: results are placed with their calls
		case m.Role == weft.RoleAssistant && len(m.ToolCalls) > 0:
			out = append(out, m)
			var images []weft.ContentPart
			for _, c := range m.ToolCalls {
				res, found := weft.LLMMessage{}, false
				for j := i + 1; j < len(in); j++ {
					if !used[j] && in[j].Role == weft.RoleTool && in[j].ToolCallID == c.ID {
						res, found, used[j] = in[j], true, true
						break
					}
				}
				if !found {
					res = weft.LLMMessage{Role: weft.RoleTool, Name: c.Name, ToolCallID: c.ID, ToolStatus: weft.ToolError,
						Content: "Failed to execute tool: " + missingResult}
				}
				if imgs, ok := res.Metadata["images"].([]weft.ContentPart); ok {
					images = append(images, imgs...)
					res.Metadata = nil
				}
				out = append(out, res)
			}
			if len(images) > 0 {
				out = append(out, weft.LLMMessage{Role: weft.RoleUser, Parts: append([]weft.ContentPart{{Type: weft.PartText, Text: "Images from the tool results above:"}}, images...)})
			}
		case (m.Role == weft.RoleAssistant || m.Role == weft.RoleUser) && blank(m.Content) && len(m.Parts) == 0:
			continue // empty message (an empty reply, or the other side's calls stripped)
		default:
			out = append(out, m)
		}
	}
	return out
}
