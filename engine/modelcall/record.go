package modelcall

import (
	"time"

	"github.com/weft-agents/weft"
)

// Record is a model call whose outcome is stored: its attempts (retries, fallbacks, replies
// discarded for ignoring toolChoice required or for an invalid structured answer) and its reply.
type Record struct {
	// Prompt, Side and Depth say who called (Depth > 0: a sub-prompt).
	Prompt string
	Side   weft.Side
	Depth  int
	// Attempts are the provider calls in order; the last one answered unless Err is set.
	Attempts []Attempt
	// Input are the messages sent (system first), not yet redacted; valid only during the call.
	Input []weft.LLMMessage
	// Reply is the stored reply (redacted); nil when the call failed.
	Reply *weft.Message
	// Err is why the call failed (not yet redacted); nil when it answered.
	Err error
	// Structured: the prompt asked for a structured (JSON) answer.
	Structured bool
}

// Attempt is one provider call: its log row (provider, model, usage, cost, finish reason,
// error type, start time) and when it ended.
type Attempt struct {
	// Log is the attempt's log row.
	Log *weft.LogEntry
	// End is when the attempt ended.
	End time.Time
	// RequestModel is the provider's model id the attempt asked for (Log.ModelID is the one that
	// answered).
	RequestModel string
	// Stream: the attempt asked for a streamed reply (the model's streaming capability).
	Stream bool
	// Options are the attempt's model options (temperature, maxOutputTokens, topP, seed, stop).
	Options map[string]any
	// ServerURL is the provider's API root the attempt was sent to ("" when unknown).
	ServerURL string
}

// Record returns the record of a call of s whose outcome is stored, for an observer (KeepEnds):
// req is its request, logs its attempts' log rows, reply the stored reply or err why it failed.
func (c *Caller) Record(s Scope, req *weft.Request, logs []*weft.LogEntry, reply *weft.Message, err error) Record {
	call := Record{Prompt: s.Prompt.Name, Side: s.Side, Depth: s.Depth, Input: req.Messages, Reply: reply, Err: err,
		Attempts: make([]Attempt, len(logs)), Structured: req.Output != nil}
	for i, l := range logs {
		end := c.ends[l]
		delete(c.ends, l)
		if end.IsZero() {
			end = l.CreatedAt.Add(time.Duration(l.LatencyMS) * time.Millisecond)
		}
		call.Attempts[i] = Attempt{Log: l, End: end, RequestModel: l.ModelID}
		if m, ok := c.m.Registry.Model(l.Model); ok {
			if m.Model != "" {
				call.Attempts[i].RequestModel = m.Model
			}
			call.Attempts[i].Stream = m.Capabilities.Streaming()
			call.Attempts[i].Options = MergeOptions(m.ProviderOptions, s.Prompt.ModelOptions)
			call.Attempts[i].ServerURL, _ = m.ProviderOptions["baseUrl"].(string)
		}
		if call.Attempts[i].ServerURL == "" {
			call.Attempts[i].ServerURL = c.m.providerURL(l.Provider)
		}
	}
	return call
}

// providerURL is a provider's API root: its definition's baseUrl, else the built-in provider's
// (its base URL variable when set, else its default).
func (ms *Models) providerURL(name string) string {
	builtin := name
	if def, ok := ms.Registry.Provider(name); ok {
		if def.BaseURL != "" {
			return def.BaseURL
		}
		if def.Base != "" {
			builtin = def.Base
		}
	}
	if info, ok := weft.LookupProvider(builtin); ok {
		return info.BaseURL(ms.LookupEnv)
	}
	return ""
}

// AgentProvider is the provider of the model the agent's first AI side's prompt uses ("" when
// none is known).
func (ms *Models) AgentProvider(a *weft.Agent) string {
	sides := []weft.AgentSide{a.SideA}
	if a.SideB != nil {
		sides = append(sides, *a.SideB)
	}
	for _, side := range sides {
		if !side.IsAI() {
			continue
		}
		if p, ok := ms.Registry.Prompt(side.Prompt); ok {
			if m, ok := ms.Registry.Model(p.Model); ok {
				return m.Provider
			}
		}
	}
	return ""
}
