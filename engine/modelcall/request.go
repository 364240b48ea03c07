package modelcall

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/hooks"
	"github.com/weft-agents/weft/engine/runstate"
	"github.com/weft-agents/weft/engine/vars"
	"github.com/weft-agents/weft/engine/window"
)

// Requests builds a run's provider requests: the stored rows a step sees, turned to its side's
// perspective with their attachments, between the system prompt and the template's messages; the
// hooks of each stage's point see and may change it.
type Requests struct {
	// c is the run's caller: the models, the run and its context.
	c *Caller
	// store reads the attachments' files.
	store weft.Store
	// thread is the run's thread; rows and state are the run's: its cached rows and its run
	// state.
	thread *weft.Thread
	rows   *[]*weft.Message
	state  *runstate.State
	// hooks runs the run's hooks.
	hooks *hooks.Runner
	// buf is the message buffer of the run's requests, reused step after step (nil until the
	// first), and used how many of its messages the requests wrote: the rest are zero.
	buf  *[]weft.LLMMessage
	used int
}

// Init sets up q, in place (a run holds its builder), as the builder of the requests of c's run:
// rows and state point at the run's own.
func (q *Requests) Init(c *Caller, store weft.Store, thread *weft.Thread, rows *[]*weft.Message, state *runstate.State, hr *hooks.Runner) {
	q.c, q.store, q.thread, q.rows, q.state, q.hooks = c, store, thread, rows, state, hr
}

// Step is what a step's request is built from: its scope.
type Step struct {
	Scope
	// Rendered is the template's rendering of the step (system, prefix and suffix messages), nil
	// for a prompt without a template.
	Rendered *weft.RenderedPrompt
	// Args are the arguments the system prompt renders with; Env the variables.
	Args map[string]any
	Env  *vars.View
	// ToolCalled: a tool was called in the current turn (toolChoice required becomes auto).
	ToolCalled bool
	// Specs are the tools offered.
	Specs []weft.ToolSpec
	// Summary is the summary row the request carries (context.strategy summarize); History sets it.
	Summary *weft.Message
	// SystemHooks, FilterHooks and PrefilterHooks are the hooks of after_system_message,
	// filter_messages and prefilter_llm_history that apply (Build).
	SystemHooks, FilterHooks, PrefilterHooks hooks.Set
}

// envLookup adapts an env view to the EnvLookup prompts render with.
func envLookup(v *vars.View) weft.EnvLookup {
	return func(name string) (string, bool, bool) {
		x, ok := v.Lookup(name)
		return x.Value, x.Type == weft.VarSecret, ok
	}
}

// systemText renders the step's system prompt and runs after_system_message.
func (q *Requests) systemText(s *Step) (string, error) {
	var text string
	if s.Rendered != nil {
		text = s.Rendered.System
	} else {
		var err error
		text, err = q.c.m.Registry.RenderSystem(q.c.ctx, s.Prompt.Name, s.Args, envLookup(s.Env))
		if err != nil {
			return "", err
		}
	}
	return q.hooks.SystemMessage(s.SystemHooks, text), nil
}

// History selects the stored rows sent to the model for a top-level step of side, before
// conversion: the completed top-level rows not excluded from context; rows before the side's
// window only with includeChat, and without tool calls and results unless includePastTools.
// Rows are shared with the run's cache, not copied; only rows whose earlier tool calls are hidden
// are copies.
func (q *Requests) History(s *Step) []*weft.Message {
	p := s.Prompt
	chatFrom := q.state.Of(s.Side).Window
	q.c.run.Sync()
	// Under summarize the rows the newest summary covers are sent as that summary (build).
	through, kept := int64(-1<<62), ""
	s.Summary = nil
	if p.StrategyOf() == weft.ContextSummarize {
		if s.Summary = window.SummaryOf(*q.rows, p.Name, s.Side); s.Summary != nil {
			through = window.MetaInt(s.Summary, window.MetaSummaryThrough)
			kept, _ = s.Summary.Metadata[window.MetaSummaryKept].(string)
			if !p.IncludeChat && through <= chatFrom {
				// It stands for earlier turns, which the prompt does not see.
				s.Summary, through, kept = nil, -1<<62, ""
			}
		}
	}
	out := make([]*weft.Message, 0, len(*q.rows))
	for _, m := range *q.rows {
		if m.Status != weft.MessageCompleted || m.Depth != 0 || (m.Seq <= through && m.ID != kept) {
			continue
		}
		if len(m.Metadata) > 0 {
			if ex, _ := m.Metadata["exclude_from_context"].(bool); ex || window.IsSummary(m) {
				continue
			}
		}
		if m.Seq <= chatFrom {
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

// Build assembles a step's provider request: system → template prefix → history → template
// suffix.
func (q *Requests) Build(s *Step, rows []*weft.Message) (*weft.Request, error) {
	sys, err := q.systemText(s)
	if err != nil {
		return nil, err
	}
	rows = q.hooks.FilterMessages(s.FilterHooks, rows)
	extra := 2
	if s.Rendered != nil {
		extra += len(s.Rendered.Prefix) + len(s.Rendered.Suffix)
	}
	// A request is dead once its step is stored (providers and OnRequest must not keep it), so its
	// message buffer is reused by the run's next step and then by other runs (reqBufs).
	if need := len(rows) + extra + 1; q.buf == nil || cap(*q.buf) < need {
		q.buf, q.used = getReqBuf(need), 0
	}
	msgs := (*q.buf)[:0]
	msgs = append(msgs, weft.LLMMessage{Role: weft.RoleSystem, Content: sys})
	if s.Summary != nil && s.Depth == 0 {
		msgs = append(msgs, window.SummaryMessage(s.Summary))
	}
	if s.Rendered != nil {
		msgs = append(msgs, s.Rendered.Prefix...)
	}
	start := len(msgs)
	msgs = q.convert(s, rows, msgs)
	if s.Rendered != nil && s.Rendered.HistoryLimit > 0 && len(msgs)-start > s.Rendered.HistoryLimit {
		hist := pair(msgs[len(msgs)-s.Rendered.HistoryLimit:])
		msgs = append(msgs[:start], hist...)
	}
	if s.Rendered != nil {
		msgs = append(msgs, s.Rendered.Suffix...)
	}
	*q.buf = msgs[:0] // msgs may have outgrown the buffer: the larger array is kept
	q.use(len(msgs))
	// The request's messages have no room past their end: whoever appends to them (a hook, a
	// provider) gets a copy, and what the buffer holds past used stays zero.
	msgs, err = q.hooks.Prefilter(s.PrefilterHooks, msgs[:len(msgs):len(msgs)])
	if err != nil {
		return nil, err
	}
	p := s.Prompt
	req := &weft.Request{Messages: msgs, ToolChoice: p.ToolChoice, ParallelToolCalls: p.ParallelToolCalls,
		Reasoning: p.Reasoning, Prompt: p.Name, Agent: q.thread.Agent, Side: s.Side, Depth: s.Depth}
	if req.ToolChoice == "" {
		req.ToolChoice = weft.ToolChoiceAuto
	}
	if p.OutputSchema != nil {
		req.Output = &weft.OutputSpec{Name: p.Name, Schema: p.OutputSchema}
	}
	switch {
	case req.ToolChoice == weft.ToolChoiceNone:
		// No tool definitions are sent.
	case req.ToolChoice == weft.ToolChoiceRequired && s.ToolCalled:
		req.ToolChoice = weft.ToolChoiceAuto
		req.Tools = s.Specs
	default:
		req.Tools = s.Specs
	}
	return req, nil
}

// convert appends stored rows to out as provider-neutral messages: perspective, attachments and
// images, then pairing.
func (q *Requests) convert(s *Step, rows []*weft.Message, out []weft.LLMMessage) []weft.LLMMessage {
	threshold := s.Prompt.ImageThreshold()
	start := len(out)
	for i, m := range rows {
		if m.Role == weft.RoleTool && m.WrittenBy() != s.Side {
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
			if m.WrittenBy() == s.Side {
				lm.Role = weft.RoleAssistant
				lm.ToolCalls = m.ToolCalls
				if rs := s.Prompt.Reasoning; rs != nil && rs.Include && m.Prompt == s.Prompt.Name && m.Reasoning != "" {
					lm.Metadata = map[string]any{"reasoning": m.Reasoning}
				}
				// Provider reasoning blocks go back to the prompt that produced them: always within
				// the current turn (providers require them to continue after tool use), for earlier
				// turns only with reasoning.include.
				if blocks, ok := m.Metadata["reasoning_blocks"]; ok && m.Prompt == s.Prompt.Name {
					inTurn := m.Seq > q.state.Of(s.Side).Window || s.Depth > 0
					if rs := s.Prompt.Reasoning; inTurn || (rs != nil && rs.Include) {
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
			// others see the call and its text like any tool result.
			if raw, ok := m.Metadata["provider_raw"]; ok && m.Metadata["provider"] == s.Provider {
				if b, err := json.Marshal(raw); err == nil {
					lm.Metadata = map[string]any{"provider_executed": true, "provider_raw": json.RawMessage(b)}
				}
			}
		}
		q.attach(lm, m, recent)
	}
	q.use(len(out)) // before pairing, which may leave fewer
	if !needsPairing(out[start:]) {
		return out
	}
	return append(out[:start], pair(out[start:])...)
}

// attach adds a row's attachments: recent images as image parts (inlined as data: URIs), older
// ones as text, other files as a listing.
func (q *Requests) attach(lm *weft.LLMMessage, m *weft.Message, recent bool) {
	if len(m.Attachments) == 0 {
		return
	}
	var parts []weft.ContentPart
	var texts, files []string
	for _, a := range m.Attachments {
		isImage := weft.IsModelImage(a.MimeType)
		switch {
		case isImage && recent:
			data, err := q.store.Files().ReadFile(q.c.ctx, q.thread.ID, a.Path)
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

// Request message buffers outlive their run in a pool: a request is dead once its step is stored.
// A pooled buffer is all zero (Release clears what its run wrote).
var reqBufs sync.Pool // of *[]weft.LLMMessage

// maxPooledReqBuf bounds the buffers kept, so that one very long thread does not pin its buffer.
const maxPooledReqBuf = 1024

func getReqBuf(need int) *[]weft.LLMMessage {
	if p, ok := reqBufs.Get().(*[]weft.LLMMessage); ok && cap(*p) >= need {
		return p
	}
	b := make([]weft.LLMMessage, 0, max(need+need/2, 32))
	return &b
}

// use notes that the requests wrote the first n messages of the buffer.
func (q *Requests) use(n int) { q.used = max(q.used, n) }

// Release gives the run's message buffer back to the requests of later runs, once the run's last
// request is dead (its step stored).
func (q *Requests) Release() {
	p, used := q.buf, q.used
	q.buf, q.used = nil, 0
	if p == nil || cap(*p) > maxPooledReqBuf {
		return
	}
	b := (*p)[:cap(*p)]
	clear(b[:min(used, len(b))]) // drop the references to the run's messages
	*p = b[:0]
	reqBufs.Put(p)
}
