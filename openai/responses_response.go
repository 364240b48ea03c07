package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/weft-agents/weft"
)

// respEnvelope is a Responses response object, as returned whole or carried by the terminal stream
// events. Output items stay raw: they are decoded one by one and kept verbatim for replay.
type respEnvelope struct {
	ID                string          `json:"id"`
	Model             string          `json:"model"`
	Status            string          `json:"status"`
	Error             json.RawMessage `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Output []json.RawMessage `json:"output"`
	Usage  *respUsage        `json:"usage"`
}

type respUsage struct {
	InputTokens        int `json:"input_tokens"`
	OutputTokens       int `json:"output_tokens"`
	InputTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	// Cost is reported by OpenRouter's Responses endpoint.
	Cost *float64 `json:"cost"`
}

func (u *respUsage) weft() weft.Usage {
	out := weft.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Cost: u.Cost}
	if u.InputTokensDetails != nil {
		out.CachedTokens = u.InputTokensDetails.CachedTokens
	}
	if u.OutputTokensDetails != nil {
		out.ReasoningTokens = u.OutputTokensDetails.ReasoningTokens
	}
	return out
}

// respItem is the part of an output item the adapter reads. Fields whose JSON type varies between
// item types are raw.
type respItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Status    string          `json:"status"`
	Content   json.RawMessage `json:"content"`
	Summary   json.RawMessage `json:"summary"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// respPart is a part of a message's content or of a reasoning item's summary or content.
type respPart struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Refusal string `json:"refusal"`
}

// rawText returns a raw JSON value as text: a string's value, nothing for null, else the JSON itself
// (arguments a server sent as an object are passed through as their JSON text).
func rawText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// parts decodes a list of parts; anything else yields none.
func parts(raw json.RawMessage) []respPart {
	var ps []respPart
	if len(raw) == 0 || json.Unmarshal(raw, &ps) != nil {
		return nil
	}
	return ps
}

// output is what the output items of a reply say.
type output struct {
	text, refusal, reasoning string
	calls                    []weft.ToolCall
	results                  []weft.ProviderToolResult
	blocks                   []json.RawMessage
	functionCalls            bool
}

// readOutput reads output items in order: message text (refusals when there is no text), reasoning
// summaries (else reasoning text) joined by blank lines and the reasoning items themselves, function
// calls, and the calls of hosted tools with their results. Unknown items are skipped.
func readOutput(items []json.RawMessage, rt responsesTools) output {
	var o output
	var txt, refusal strings.Builder
	var reasoning []string
	for _, raw := range items {
		var it respItem
		if json.Unmarshal(raw, &it) != nil {
			continue
		}
		switch it.Type {
		case "message":
			for _, pt := range parts(it.Content) {
				switch pt.Type {
				case "output_text":
					txt.WriteString(pt.Text)
				case "refusal":
					refusal.WriteString(pt.Refusal)
				}
			}
		case "reasoning":
			o.blocks = append(o.blocks, raw)
			var summary []string
			for _, pt := range parts(it.Summary) {
				if pt.Text != "" {
					summary = append(summary, pt.Text)
				}
			}
			if len(summary) == 0 {
				for _, pt := range parts(it.Content) {
					if pt.Text != "" {
						summary = append(summary, pt.Text)
					}
				}
			}
			reasoning = append(reasoning, summary...)
		case "function_call":
			id := it.CallID
			if id == "" {
				id = it.ID
			}
			o.calls = append(o.calls, weft.ToolCall{ID: id, Name: rt.names.original(it.Name), Arguments: rawText(it.Arguments)})
			o.functionCalls = true
		default:
			name, offered := rt.hosted[it.Type]
			if !offered {
				if !hostedCallTypes[it.Type] {
					continue
				}
				name = strings.TrimSuffix(it.Type, "_call")
			}
			call, result := hostedCall(it, raw, name)
			o.calls = append(o.calls, call)
			o.results = append(o.results, result)
		}
	}
	o.text, o.refusal = txt.String(), refusal.String()
	o.reasoning = strings.Join(reasoning, "\n\n")
	return o
}

// hostedDetail is what the hosted tools' call items carry besides respItem.
type hostedDetail struct {
	Action      json.RawMessage `json:"action"`
	Code        json.RawMessage `json:"code"`
	ContainerID string          `json:"container_id"`
	Outputs     []struct {
		Type string `json:"type"`
		Logs string `json:"logs"`
		URL  string `json:"url"`
	} `json:"outputs"`
	Queries []string `json:"queries"`
	Results []struct {
		Filename string `json:"filename"`
		Text     string `json:"text"`
	} `json:"results"`
	RevisedPrompt string          `json:"revised_prompt"`
	ServerLabel   string          `json:"server_label"`
	Output        json.RawMessage `json:"output"`
	Error         json.RawMessage `json:"error"`
}

// webAction is a web_search_call's action.
type webAction struct {
	Type    string   `json:"type"`
	Query   string   `json:"query"`
	Queries []string `json:"queries"`
	URL     string   `json:"url"`
	Pattern string   `json:"pattern"`
	Sources []struct {
		URL string `json:"url"`
	} `json:"sources"`
}

// hostedCall turns a hosted tool's call item into the call the model made (named as offered, its
// arguments the action or query as JSON) and its result: the status, a readable summary for the
// tool message and the item verbatim for replay.
func hostedCall(it respItem, raw json.RawMessage, name string) (weft.ToolCall, weft.ProviderToolResult) {
	var d hostedDetail
	_ = json.Unmarshal(raw, &d) // a detail of an unexpected shape only thins the summary
	failed := it.Status == "failed" || it.Status == "incomplete" || len(d.Error) > 0 && string(d.Error) != "null"
	args := "{}"
	var sum strings.Builder
	switch it.Type {
	case "web_search_call":
		if a := bytes.TrimSpace(d.Action); len(a) > 0 && a[0] == '{' {
			args = string(a)
		}
		var a webAction
		_ = json.Unmarshal(d.Action, &a)
		switch a.Type {
		case "open_page":
			fmt.Fprintf(&sum, "Opened the web page %s", a.URL)
		case "find_in_page":
			fmt.Fprintf(&sum, "Searched the web page %s for %q", a.URL, a.Pattern)
		default:
			qs := a.Queries
			if a.Query != "" && !contains(qs, a.Query) {
				qs = append([]string{a.Query}, qs...)
			}
			if len(qs) > 0 {
				fmt.Fprintf(&sum, "Searched the web for: %s", strings.Join(qs, "; "))
			} else {
				sum.WriteString("Searched the web")
			}
		}
		if len(a.Sources) > 0 {
			sum.WriteString("\nSources:")
			for _, s := range a.Sources {
				sum.WriteString("\n- " + s.URL)
			}
		}
	case "code_interpreter_call":
		code := rawText(d.Code)
		args = mustJSON(map[string]any{"code": code, "container_id": d.ContainerID})
		sum.WriteString("Ran code:\n" + code)
		for _, o := range d.Outputs {
			switch o.Type {
			case "logs":
				sum.WriteString("\nOutput:\n" + o.Logs)
			case "image":
				sum.WriteString("\nImage: " + o.URL)
			}
		}
	case "file_search_call":
		args = mustJSON(map[string]any{"queries": d.Queries})
		fmt.Fprintf(&sum, "Searched files for: %s", strings.Join(d.Queries, "; "))
		for _, r := range d.Results {
			snippet := r.Text
			if len(snippet) > 300 {
				snippet = snippet[:300] + "…"
			}
			fmt.Fprintf(&sum, "\n- %s: %s", r.Filename, snippet)
		}
	case "image_generation_call":
		a := map[string]any{}
		if s := rawText(d.Action); s != "" {
			a["action"] = s
		}
		if d.RevisedPrompt != "" {
			a["prompt"] = d.RevisedPrompt
		}
		args = mustJSON(a)
		sum.WriteString("Generated an image")
		if d.RevisedPrompt != "" {
			sum.WriteString(" for the prompt: " + d.RevisedPrompt)
		}
	default:
		if s := rawText(it.Arguments); s != "" {
			args = s
		} else if a := bytes.TrimSpace(d.Action); len(a) > 0 && a[0] == '{' {
			args = string(a)
		}
		fmt.Fprintf(&sum, "%s %s", name, it.Status)
		if s := rawText(d.Output); s != "" {
			sum.WriteString(":\n" + s)
		}
	}
	status := weft.ToolSuccess
	if failed {
		status = weft.ToolError
		msg := name + " failed"
		if e := rawText(d.Error); e != "" {
			msg += ": " + e
		}
		sum.WriteString("\n" + msg)
	}
	return weft.ToolCall{ID: it.ID, Name: name, Arguments: args},
		weft.ProviderToolResult{CallID: it.ID, Status: status, Content: strings.TrimSpace(sum.String()), Raw: raw}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// respFinish maps a reply's status to weft's finish reasons: an incomplete reply says why (length
// for max_output_tokens, content_filter, else OpenAI's word), a reply with function calls is
// tool_calls, anything else stop. Hosted calls ran on OpenAI's side and do not wait for Weft.
func respFinish(env *respEnvelope, functionCalls bool) string {
	reason := ""
	if env.IncompleteDetails != nil {
		reason = env.IncompleteDetails.Reason
	}
	if env.Status == "incomplete" || reason != "" {
		switch reason {
		case "max_output_tokens":
			return "length"
		case "content_filter":
			return "content_filter"
		case "":
			return "incomplete"
		}
		return reason
	}
	if functionCalls {
		return "tool_calls"
	}
	return "stop"
}

// respErrorType classifies the code of an error a Responses reply or stream carries: HTTP statuses
// as such, OpenAI's codes by meaning; no code is a server error.
func respErrorType(code string) (weft.ErrorType, int) {
	if n, err := strconv.Atoi(code); err == nil && n >= 400 && n < 600 {
		return weft.ErrorTypeForStatus(n), n
	}
	switch code {
	case "", "server_error", "internal_error", "api_error", "overloaded", "overloaded_error", "service_unavailable", "vector_store_timeout":
		return weft.ErrServer, 0
	case "rate_limit_exceeded", "rate_limit_error", "insufficient_quota", "too_many_requests":
		return weft.ErrRateLimit, 0
	case "invalid_api_key", "authentication_error", "permission_denied", "permission_error", "unauthorized":
		return weft.ErrAuth, 0
	case "timeout", "request_timeout":
		return weft.ErrTimeout, 0
	}
	switch {
	case strings.Contains(code, "context_length"):
		return weft.ErrContextLength, 0
	case strings.HasPrefix(code, "invalid"), strings.HasPrefix(code, "unsupported"), strings.Contains(code, "image"),
		strings.Contains(code, "policy"), code == "data_residency_mismatch",
		code == "not_found_error", code == "model_not_found":
		return weft.ErrInvalidRequest, 0
	}
	return weft.ErrUnknown, 0
}

// respError classifies an error object ({code, message, type}) of a reply or stream; fallback
// is the message when the object has none.
func (p *Provider) respError(req *weft.Request, raw json.RawMessage, fallback string) error {
	var e struct {
		Code    json.RawMessage `json:"code"`
		Type    string          `json:"type"`
		Message string          `json:"message"`
	}
	_ = json.Unmarshal(raw, &e)
	code := rawText(e.Code)
	if code == "" && e.Type != "error" {
		code = e.Type
	}
	t, status := respErrorType(code)
	msg := e.Message
	if msg == "" {
		msg = fallback
	}
	if msg == "" {
		msg = string(raw)
	}
	if code != "" && !strings.Contains(msg, code) {
		msg += " (" + code + ")"
	}
	return p.fail(t, status, redact(msg, req.APIKey), nil)
}

// present reports whether a raw JSON value is there and not null.
func present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && string(raw) != "null"
}

// readResponsesJSON reads a non-streamed Responses reply.
func (p *Provider) readResponsesJSON(ctx context.Context, req *weft.Request, res *http.Response, rt responsesTools, onChunk func(weft.Chunk)) (*weft.Response, error) {
	b, err := io.ReadAll(res.Body)
	if err != nil {
		if ce := ctx.Err(); ce != nil {
			return nil, p.ctxError(ce)
		}
		return nil, p.fail(weft.ErrUnknown, res.StatusCode, "reading response: "+err.Error(), err)
	}
	var env respEnvelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, p.fail(weft.ErrUnknown, res.StatusCode, "malformed response JSON: "+err.Error(), err)
	}
	if present(env.Error) {
		return nil, p.respError(req, env.Error, "response failed")
	}
	if env.Status == "failed" {
		return nil, p.fail(weft.ErrServer, 0, "response failed without an error", nil)
	}
	out, err := p.respResponse(&env, env.Output, rt, res.StatusCode, false)
	if err != nil {
		return nil, err
	}
	out.ResponseBody = b
	if onChunk != nil {
		if out.Reasoning != "" {
			onChunk(weft.Chunk{Reasoning: out.Reasoning})
		}
		if out.Text != "" {
			onChunk(weft.Chunk{Text: out.Text})
		}
	}
	return out, nil
}

// respResponse assembles a weft.Response from a reply's envelope and output items. A completed
// reply without output is an error unless streamed deltas carried it.
func (p *Provider) respResponse(env *respEnvelope, items []json.RawMessage, rt responsesTools, status int, streamed bool) (*weft.Response, error) {
	if len(items) == 0 && env.Status != "incomplete" && !streamed {
		return nil, p.fail(weft.ErrUnknown, status, "response has no output", nil)
	}
	o := readOutput(items, rt)
	out := &weft.Response{Text: o.text, Reasoning: o.reasoning, ToolCalls: o.calls, ProviderResults: o.results,
		ModelID: env.Model, FinishReason: respFinish(env, o.functionCalls)}
	if out.Text == "" {
		out.Text = o.refusal
	}
	if len(o.blocks) > 0 {
		if b, err := json.Marshal(o.blocks); err == nil {
			out.ReasoningBlocks = b
		}
	}
	if env.Usage != nil {
		out.Usage = env.Usage.weft()
	}
	return out, nil
}

// respEvent is one server-sent event of a Responses stream; fields whose JSON type varies are raw.
type respEvent struct {
	Type         string          `json:"type"`
	ItemID       string          `json:"item_id"`
	OutputIndex  int             `json:"output_index"`
	ContentIndex int             `json:"content_index"`
	SummaryIndex int             `json:"summary_index"`
	Delta        json.RawMessage `json:"delta"`
	Arguments    json.RawMessage `json:"arguments"`
	Item         json.RawMessage `json:"item"`
	Response     json.RawMessage `json:"response"`
	Code         json.RawMessage `json:"code"`
	Message      json.RawMessage `json:"message"`
	Error        json.RawMessage `json:"error"`
}

// respStreamCall is a function call being assembled from stream events.
type respStreamCall struct {
	index        int
	itemID, id   string
	name         string
	args         strings.Builder
	argsComplete bool
}

// readResponsesStream reads a Responses event stream: text and reasoning deltas are passed to
// onChunk as they come, output items are collected as they complete, and the terminal event
// (response.completed or response.incomplete) supplies status, usage and the output list. A stream
// that ends without one, response.failed and error events are errors.
func (p *Provider) readResponsesStream(ctx context.Context, req *weft.Request, res *http.Response, rt responsesTools, onChunk func(weft.Chunk)) (*weft.Response, error) {
	dec := ssestream.NewDecoder(res)
	defer dec.Close()
	var (
		text, reasoning strings.Builder
		lastPart        string // the reasoning part the last reasoning delta belonged to
		items           = map[int]json.RawMessage{}
		calls           []*respStreamCall
		final           json.RawMessage
		model, id       string
	)
	call := func(ev *respEvent) *respStreamCall {
		for _, c := range calls {
			if ev.ItemID != "" && c.itemID == ev.ItemID || ev.ItemID == "" && c.index == ev.OutputIndex {
				return c
			}
		}
		c := &respStreamCall{index: ev.OutputIndex, itemID: ev.ItemID}
		calls = append(calls, c)
		return c
	}
	emit := func(c weft.Chunk) {
		if onChunk != nil {
			onChunk(c)
		}
	}
loop:
	for dec.Next() {
		data := bytes.TrimSpace(dec.Event().Data)
		if len(data) == 0 || bytes.Equal(data, []byte("[DONE]")) {
			continue
		}
		var ev respEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, p.fail(weft.ErrUnknown, res.StatusCode, "malformed stream event: "+err.Error(), err)
		}
		if ev.Type == "" {
			ev.Type = dec.Event().Type
		}
		switch ev.Type {
		case "response.created", "response.in_progress", "response.queued":
			var env respEnvelope
			if json.Unmarshal(ev.Response, &env) == nil {
				model, id = env.Model, env.ID
			}
		case "response.output_text.delta", "response.refusal.delta":
			if d := asText(ev.Delta); d != "" {
				text.WriteString(d)
				emit(weft.Chunk{Text: d})
			}
		case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
			d := asText(ev.Delta)
			if d == "" {
				continue
			}
			part := fmt.Sprintf("%s/%s/%d/%d", ev.ItemID, ev.Type, ev.SummaryIndex, ev.ContentIndex)
			if lastPart != "" && part != lastPart && reasoning.Len() > 0 {
				// A new summary part: separated as readOutput joins them.
				reasoning.WriteString("\n\n")
				emit(weft.Chunk{Reasoning: "\n\n"})
			}
			lastPart = part
			reasoning.WriteString(d)
			emit(weft.Chunk{Reasoning: d})
		case "response.output_item.added":
			var it respItem
			if json.Unmarshal(ev.Item, &it) == nil && it.Type == "function_call" {
				c := call(&respEvent{ItemID: it.ID, OutputIndex: ev.OutputIndex})
				c.id, c.name = it.CallID, it.Name
				c.args.WriteString(rawText(it.Arguments))
			}
		case "response.function_call_arguments.delta":
			call(&ev).args.WriteString(asText(ev.Delta))
			emit(weft.Chunk{}) // progress: resets the engine's stall timer
		case "response.function_call_arguments.done":
			if present(ev.Arguments) {
				c := call(&ev)
				c.args.Reset()
				c.args.WriteString(rawText(ev.Arguments))
				c.argsComplete = true
			}
		case "response.output_item.done":
			if present(ev.Item) {
				items[ev.OutputIndex] = ev.Item
			}
		case "response.completed", "response.incomplete":
			final = ev.Response
			break loop
		case "response.failed":
			var env respEnvelope
			_ = json.Unmarshal(ev.Response, &env)
			if present(env.Error) {
				return nil, p.respError(req, env.Error, "response failed")
			}
			return nil, p.fail(weft.ErrServer, 0, "response failed without an error", nil)
		case "error":
			if present(ev.Error) && bytes.TrimSpace(ev.Error)[0] == '{' {
				return nil, p.respError(req, ev.Error, "stream error")
			}
			msg := rawText(ev.Message)
			if msg == "" {
				msg = rawText(ev.Error)
			}
			b, _ := json.Marshal(map[string]string{"code": rawText(ev.Code), "message": msg})
			return nil, p.respError(req, b, "stream error")
		}
	}
	if final == nil {
		if ce := ctx.Err(); ce != nil {
			return nil, p.ctxError(ce)
		}
		if err := dec.Err(); err != nil {
			return nil, p.fail(weft.ErrUnknown, res.StatusCode, "stream interrupted: "+redact(err.Error(), req.APIKey), err)
		}
		return nil, p.fail(weft.ErrUnknown, res.StatusCode, "stream ended before the reply was complete", io.ErrUnexpectedEOF)
	}

	var env respEnvelope
	if err := json.Unmarshal(final, &env); err != nil {
		return nil, p.fail(weft.ErrUnknown, res.StatusCode, "malformed final stream event: "+err.Error(), err)
	}
	if present(env.Error) {
		return nil, p.respError(req, env.Error, "response failed")
	}
	if env.Model == "" {
		env.Model = model
	}
	if env.ID == "" {
		env.ID = id
	}
	// The terminal event's output list is authoritative; servers that leave it empty have sent each
	// item in output_item.done, and function calls also in their own events.
	outputs := env.Output
	if len(outputs) == 0 {
		idx := make([]int, 0, len(items))
		for i := range items {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		for _, i := range idx {
			outputs = append(outputs, items[i])
		}
		outputs = append(outputs, missingCalls(outputs, calls)...)
	}
	out, err := p.respResponse(&env, outputs, rt, res.StatusCode, text.Len() > 0 || reasoning.Len() > 0)
	if err != nil {
		return nil, err
	}
	for i := range out.ToolCalls {
		tc := &out.ToolCalls[i]
		if tc.Arguments != "" {
			continue
		}
		for _, c := range calls {
			if c.id == tc.ID && c.args.Len() > 0 {
				tc.Arguments = c.args.String()
			}
		}
	}
	// What was streamed is the reply's text; a server that sent no deltas gets them now.
	if text.Len() > 0 {
		out.Text = text.String()
	} else if out.Text != "" {
		emit(weft.Chunk{Text: out.Text})
	}
	if reasoning.Len() > 0 {
		out.Reasoning = reasoning.String()
	} else if out.Reasoning != "" {
		emit(weft.Chunk{Reasoning: out.Reasoning})
	}
	out.ResponseBody = respAssembled(final, outputs, len(env.Output) == 0)
	return out, nil
}

// asText returns a delta's text; a delta that is not a string (an unexpected event) adds nothing.
func asText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// missingCalls returns function_call items for the streamed calls that no collected item carries.
func missingCalls(items []json.RawMessage, calls []*respStreamCall) []json.RawMessage {
	have := map[string]bool{}
	for _, raw := range items {
		var it respItem
		if json.Unmarshal(raw, &it) == nil && it.Type == "function_call" {
			have[it.CallID] = true
		}
	}
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].index < calls[j].index })
	var out []json.RawMessage
	for _, c := range calls {
		if c.id == "" || have[c.id] {
			continue
		}
		b, err := json.Marshal(functionCall{Type: "function_call", CallID: c.id, Name: c.name, Arguments: c.args.String()})
		if err == nil {
			out = append(out, b)
		}
	}
	return out
}

// respAssembled is the log's response body of a stream: the terminal event's response object,
// with the collected output items put in when it listed none.
func respAssembled(final json.RawMessage, outputs []json.RawMessage, fill bool) json.RawMessage {
	if !fill {
		return final
	}
	var v map[string]any
	if json.Unmarshal(final, &v) != nil || v == nil {
		v = map[string]any{"object": "response"}
	}
	if outputs == nil {
		outputs = []json.RawMessage{}
	}
	v["output"] = outputs
	b, err := json.Marshal(v)
	if err != nil {
		return final
	}
	return b
}
