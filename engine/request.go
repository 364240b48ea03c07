package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/runstate"
	"github.com/weft-agents/weft/engine/window"
)

// requests builds a run's provider requests: the stored rows a scope sees, turned to its side's
// perspective with their attachments, between the system prompt and the template's messages; the
// hooks of each stage's point see and may change it.
type requests struct {
	e      *Engine
	ctx    context.Context
	thread *weft.Thread
	// rows and state are the run's: its cached rows and its run state.
	rows  *[]*weft.Message
	state *runstate.State
	// r is the run whose hooks see the request.
	r *run
	// buf is the message buffer of the run's requests, reused step after step.
	buf []weft.LLMMessage
}

// systemText renders the scope's system prompt and runs after_system_message.
func (q *requests) systemText(s *scope) (string, error) {
	var text string
	if s.rendered != nil {
		text = s.rendered.System
	} else {
		var err error
		text, err = q.e.reg.RenderSystem(q.ctx, s.prompt.Name, s.args, envLookup(s.env))
		if err != nil {
			return "", err
		}
	}
	return q.r.hooks.SystemMessage(q.r.scopeHooks(s, weft.HookAfterSystemMessage), text), nil
}

// history selects the stored rows sent to the model for a top-level step of side, before
// conversion: the completed top-level rows not excluded from context; rows before the side's
// window only with includeChat, and without tool calls and results unless includePastTools.
// Rows are shared with the run's cache, not copied; only rows whose earlier tool calls are hidden
// are copies.
func (q *requests) history(s *scope) []*weft.Message {
	p := s.prompt
	chatFrom := q.state.Of(s.side).Window
	q.r.sync()
	// Under summarize the rows the newest summary covers are sent as that summary (build).
	through, kept := int64(-1<<62), ""
	s.summary = nil
	if p.StrategyOf() == weft.ContextSummarize {
		if s.summary = window.SummaryOf(*q.rows, p.Name, s.side); s.summary != nil {
			through = window.MetaInt(s.summary, window.MetaSummaryThrough)
			kept, _ = s.summary.Metadata[window.MetaSummaryKept].(string)
			if !p.IncludeChat && through <= chatFrom {
				// It stands for earlier turns, which the prompt does not see.
				s.summary, through, kept = nil, -1<<62, ""
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

// build assembles a step's provider request: system → template prefix → history → template
// suffix.
func (q *requests) build(s *scope, rows []*weft.Message) (*weft.Request, error) {
	sys, err := q.systemText(s)
	if err != nil {
		return nil, err
	}
	rows = q.r.hooks.FilterMessages(q.r.scopeHooks(s, weft.HookFilterMessages), rows)
	extra := 2
	if s.rendered != nil {
		extra += len(s.rendered.Prefix) + len(s.rendered.Suffix)
	}
	// A request is dead once its step is stored (providers and OnRequest must not keep it), so its
	// message buffer is reused by the run's next step and then by other runs (reqBufs).
	msgs := q.buf[:0]
	if need := len(rows) + extra + 1; cap(msgs) < need {
		msgs = getReqBuf(need)
	}
	msgs = append(msgs, weft.LLMMessage{Role: weft.RoleSystem, Content: sys})
	if s.summary != nil && s.depth == 0 {
		msgs = append(msgs, window.SummaryMessage(s.summary))
	}
	if s.rendered != nil {
		msgs = append(msgs, s.rendered.Prefix...)
	}
	start := len(msgs)
	msgs = q.convert(s, rows, msgs)
	if s.rendered != nil && s.rendered.HistoryLimit > 0 && len(msgs)-start > s.rendered.HistoryLimit {
		hist := pair(msgs[len(msgs)-s.rendered.HistoryLimit:])
		msgs = append(msgs[:start], hist...)
	}
	if s.rendered != nil {
		msgs = append(msgs, s.rendered.Suffix...)
	}
	q.buf = msgs[:0]
	msgs, err = q.r.hooks.Prefilter(q.r.scopeHooks(s, weft.HookPrefilterLLMHistory), msgs)
	if err != nil {
		return nil, err
	}
	p := s.prompt
	req := &weft.Request{Messages: msgs, ToolChoice: p.ToolChoice, ParallelToolCalls: p.ParallelToolCalls,
		Reasoning: p.Reasoning, Prompt: p.Name, Agent: q.thread.Agent, Side: s.side, Depth: s.depth}
	if req.ToolChoice == "" {
		req.ToolChoice = weft.ToolChoiceAuto
	}
	if p.OutputSchema != nil {
		req.Output = &weft.OutputSpec{Name: p.Name, Schema: p.OutputSchema}
	}
	switch {
	case req.ToolChoice == weft.ToolChoiceNone:
		// No tool definitions are sent.
	case req.ToolChoice == weft.ToolChoiceRequired && s.toolCalled:
		req.ToolChoice = weft.ToolChoiceAuto
		req.Tools = s.specs
	default:
		req.Tools = s.specs
	}
	return req, nil
}

// convert appends stored rows to out as provider-neutral messages: perspective, attachments and
// images, then pairing.
func (q *requests) convert(s *scope, rows []*weft.Message, out []weft.LLMMessage) []weft.LLMMessage {
	threshold := s.prompt.ImageThreshold()
	start := len(out)
	for i, m := range rows {
		if m.Role == weft.RoleTool && m.WrittenBy() != s.side {
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
			if m.WrittenBy() == s.side {
				lm.Role = weft.RoleAssistant
				lm.ToolCalls = m.ToolCalls
				if rs := s.prompt.Reasoning; rs != nil && rs.Include && m.Prompt == s.prompt.Name && m.Reasoning != "" {
					lm.Metadata = map[string]any{"reasoning": m.Reasoning}
				}
				// Provider reasoning blocks go back to the prompt that produced them: always within
				// the current turn (providers require them to continue after tool use), for earlier
				// turns only with reasoning.include.
				if blocks, ok := m.Metadata["reasoning_blocks"]; ok && m.Prompt == s.prompt.Name {
					inTurn := m.Seq > q.state.Of(s.side).Window || s.depth > 0
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
			// others see the call and its text like any tool result.
			if raw, ok := m.Metadata["provider_raw"]; ok && m.Metadata["provider"] == s.provider {
				if b, err := json.Marshal(raw); err == nil {
					lm.Metadata = map[string]any{"provider_executed": true, "provider_raw": json.RawMessage(b)}
				}
			}
		}
		q.attach(lm, m, recent)
	}
	if !needsPairing(out[start:]) {
		return out
	}
	return append(out[:start], pair(out[start:])...)
}

// attach adds a row's attachments: recent images as image parts (inlined as data: URIs), older
// ones as text, other files as a listing.
func (q *requests) attach(lm *weft.LLMMessage, m *weft.Message, recent bool) {
	if len(m.Attachments) == 0 {
		return
	}
	var parts []weft.ContentPart
	var texts, files []string
	for _, a := range m.Attachments {
		isImage := weft.IsModelImage(a.MimeType)
		switch {
		case isImage && recent:
			data, err := q.e.store.Files().ReadFile(q.ctx, q.thread.ID, a.Path)
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
var reqBufs sync.Pool // of *[]weft.LLMMessage

// maxPooledReqBuf bounds the buffers kept, so that one very long thread does not pin its buffer.
const maxPooledReqBuf = 1024

func getReqBuf(need int) []weft.LLMMessage {
	if p, ok := reqBufs.Get().(*[]weft.LLMMessage); ok && cap(*p) >= need {
		return (*p)[:0]
	}
	return make([]weft.LLMMessage, 0, max(need+need/2, 32))
}

func putReqBuf(b []weft.LLMMessage) {
	if b == nil || cap(b) > maxPooledReqBuf {
		return
	}
	b = b[:cap(b)]
	clear(b) // drop the references to the run's messages
	b = b[:0]
	reqBufs.Put(&b)
}
