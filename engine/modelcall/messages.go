package modelcall

import "github.com/weft-agents/weft"

// MergeOptions returns a model's provider options with the prompt's model options over them.
func MergeOptions(provider, prompt map[string]any) map[string]any {
	if len(prompt) == 0 {
		return provider
	}
	out := make(map[string]any, len(provider)+len(prompt))
	for k, v := range provider {
		out[k] = v
	}
	for k, v := range prompt {
		out[k] = v
	}
	return out
}

// withoutImages removes image parts for models without vision.
func withoutImages(msgs []weft.LLMMessage) []weft.LLMMessage {
	out := make([]weft.LLMMessage, len(msgs))
	for i, m := range msgs {
		if len(m.Parts) > 0 {
			var parts []weft.ContentPart
			for _, p := range m.Parts {
				if p.Type != weft.PartImage {
					parts = append(parts, p)
				}
			}
			m.Parts = parts
			if len(parts) == 0 && m.Role == weft.RoleUser {
				m.Content = "[Image omitted: model does not support vision]"
			}
		}
		out[i] = m
	}
	return out
}

// lastLineRedact counts the secrets left in the request's messages and, with apply, replaces them.
func (c *Caller) lastLineRedact(req *weft.Request, apply bool) {
	red := *c.red
	if red.Empty() {
		return
	}
	var msgs []weft.LLMMessage
	for i, m := range req.Messages {
		n := red.Count(m.Content)
		for _, p := range m.Parts {
			n += red.Count(p.Text)
		}
		for _, tc := range m.ToolCalls {
			n += red.Count(tc.Arguments)
		}
		if n == 0 {
			continue
		}
		c.lastLine += n
		if !apply {
			continue
		}
		if msgs == nil {
			msgs = append([]weft.LLMMessage(nil), req.Messages...)
		}
		m.Content = red.String(m.Content)
		if len(m.Parts) > 0 {
			parts := append([]weft.ContentPart(nil), m.Parts...)
			for j := range parts {
				parts[j].Text = red.String(parts[j].Text)
			}
			m.Parts = parts
		}
		if len(m.ToolCalls) > 0 {
			calls := append([]weft.ToolCall(nil), m.ToolCalls...)
			for j := range calls {
				calls[j].Arguments = red.String(calls[j].Arguments)
			}
			m.ToolCalls = calls
		}
		msgs[i] = m
	}
	if msgs != nil {
		req.Messages = msgs
	}
}

// withoutProviderBlocks returns msgs without the provider-specific verbatim metadata (reasoning
// blocks, provider-executed results), copying only what changes.
func withoutProviderBlocks(msgs []weft.LLMMessage) []weft.LLMMessage {
	var out []weft.LLMMessage
	for i, m := range msgs {
		_, rb := m.Metadata["reasoning_blocks"]
		_, pr := m.Metadata["provider_raw"]
		if !rb && !pr {
			continue
		}
		if out == nil {
			out = append([]weft.LLMMessage(nil), msgs...)
		}
		meta := make(map[string]any, len(m.Metadata))
		for k, v := range m.Metadata {
			if k != "reasoning_blocks" && k != "provider_raw" && k != "provider_executed" {
				meta[k] = v
			}
		}
		out[i].Metadata = meta
	}
	if out == nil {
		return msgs
	}
	return out
}

// Redact replaces the secrets left in a request's messages, as the last-line pass of a call does
// (a rendered request that is shown, not sent).
func (c *Caller) Redact(req *weft.Request) { c.lastLineRedact(req, true) }
