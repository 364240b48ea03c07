package openaiapi

import (
	"github.com/weft-agents/weft/internal/turn"
)

// response is a Response object of the Responses API.
type response struct {
	ID                 string         `json:"id"`
	Object             string         `json:"object"`
	CreatedAt          int64          `json:"created_at"`
	Status             string         `json:"status"`
	Model              string         `json:"model"`
	Output             []*outputItem  `json:"output"`
	Usage              *responseUsage `json:"usage"`
	Error              *responseError `json:"error"`
	IncompleteDetails  any            `json:"incomplete_details"`
	PreviousResponseID *string        `json:"previous_response_id"`
	Conversation       map[string]any `json:"conversation"`
	Instructions       any            `json:"instructions"`
	Metadata           map[string]any `json:"metadata"`
	ParallelToolCalls  bool           `json:"parallel_tool_calls"`
	ToolChoice         string         `json:"tool_choice"`
	Tools              []any          `json:"tools"`
	// WeftStopReason is why the run stopped (Weft's stop reason), once it did.
	WeftStopReason string `json:"weft_stop_reason,omitempty"`
	weftInterrupt
}

// weftInterrupt says, on a response or a chat completion's choice whose run a new message
// stopped (if_busy interrupt or rollback), which message did and what a rollback removed.
type weftInterrupt struct {
	// InterruptedBy is the id of the message that stopped the run.
	InterruptedBy string `json:"weft_interrupted_by,omitempty"`
	// RolledBack is set when the stop also removed what the run had added to the thread.
	RolledBack bool `json:"weft_rolled_back,omitempty"`
	// RemovedMessageIDs are the thread's rows the rollback deleted.
	RemovedMessageIDs []string `json:"weft_removed_message_ids,omitempty"`
}

// interruptOf is the weftInterrupt of a turn's End (zero when no message interrupted it).
func interruptOf(p turn.Part) weftInterrupt {
	if p.Interrupt == nil {
		return weftInterrupt{}
	}
	return weftInterrupt{InterruptedBy: p.Interrupt.By, RolledBack: p.Interrupt.Rollback, RemovedMessageIDs: p.Interrupt.Removed}
}

func newResponse(id, model, threadID string, created int64) *response {
	return &response{ID: id, Object: "response", CreatedAt: created, Status: "in_progress", Model: model,
		Output: []*outputItem{}, Conversation: map[string]any{"id": threadID}, Metadata: map[string]any{},
		ToolChoice: "auto", Tools: []any{}}
}

// outputItem is a message (the assistant's text) or an mcp_call (a tool the agent ran).
type outputItem struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Status string `json:"status"`
	// message
	Role    string        `json:"role,omitempty"`
	Content []*outputText `json:"content,omitzero"`
	// mcp_call
	ServerLabel string  `json:"server_label,omitempty"`
	Name        string  `json:"name,omitempty"`
	Arguments   *string `json:"arguments,omitempty"`
	Output      *string `json:"output,omitempty"`
	Error       *string `json:"error,omitempty"`
}

// outputText is a message's output_text part.
type outputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

type responseUsage struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  map[string]int `json:"input_tokens_details"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails map[string]int `json:"output_tokens_details"`
	TotalTokens         int            `json:"total_tokens"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// serverLabel is the server_label of the mcp_call items: the agent's tools are Weft's.
const serverLabel = "weft"

// responseBuilder builds a response from a turn's parts and, when emit is set, streams the
// Responses events that build it.
type responseBuilder struct {
	resp *response
	emit func(typ string, v any) error
	seq  int
	open *outputItem // the message item whose text is streaming
	at   map[string]int
}

// send emits one event with its sequence number.
func (rb *responseBuilder) send(typ string, fields map[string]any) error {
	if rb.emit == nil {
		return nil
	}
	fields["type"] = typ
	fields["sequence_number"] = rb.seq
	rb.seq++
	return rb.emit(typ, fields)
}

// readAll reads every part (a response that does not stream, or one read back).
func (rb *responseBuilder) readAll(parts []turn.Part, u turn.Usage) {
	for _, p := range parts {
		_ = rb.read(p, u)
	}
}

// read takes one part, updating the response and emitting its events.
func (rb *responseBuilder) read(p turn.Part, u turn.Usage) error {
	if rb.at == nil {
		rb.at = map[string]int{}
	}
	switch p.Kind {
	case turn.TextDelta:
		if rb.open == nil || rb.open.ID != p.MessageID {
			if err := rb.closeMessage("completed"); err != nil {
				return err
			}
			item := &outputItem{ID: p.MessageID, Type: "message", Role: "assistant", Status: "in_progress", Content: []*outputText{}}
			if err := rb.add(item); err != nil {
				return err
			}
			part := &outputText{Type: "output_text", Annotations: []any{}, Logprobs: []any{}}
			item.Content = append(item.Content, part)
			rb.open = item
			if err := rb.send("response.content_part.added", map[string]any{"item_id": item.ID, "output_index": rb.at[item.ID],
				"content_index": 0, "part": part}); err != nil {
				return err
			}
		}
		rb.open.Content[0].Text += p.Text
		return rb.send("response.output_text.delta", map[string]any{"item_id": p.MessageID, "output_index": rb.at[p.MessageID],
			"content_index": 0, "delta": p.Text, "logprobs": []any{}})
	case turn.TextEnd:
		if rb.open != nil && rb.open.ID == p.MessageID {
			return rb.closeMessage("completed")
		}
	case turn.ToolCall:
		if err := rb.closeMessage("completed"); err != nil {
			return err
		}
		args := p.Text
		return rb.add(&outputItem{ID: p.CallID, Type: "mcp_call", Status: "in_progress", ServerLabel: serverLabel, Name: p.Name, Arguments: &args})
	case turn.ToolResult:
		i, ok := rb.at[p.CallID]
		if !ok {
			return nil
		}
		item := rb.resp.Output[i]
		out := p.Text
		item.Output, item.Status = &out, "completed"
		if p.Failed {
			item.Status, item.Error = "failed", &out
		}
		return rb.send("response.output_item.done", map[string]any{"output_index": i, "item": item})
	case turn.End:
		// A message still open when a new message stopped the run is the text of the model call
		// the interrupt cut short: never stored, so incomplete.
		status := "completed"
		if p.Interrupt != nil {
			status = "incomplete"
		}
		if err := rb.closeMessage(status); err != nil {
			return err
		}
		rb.resp.WeftStopReason = string(p.Reason)
		rb.resp.Usage = &responseUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens,
			InputTokensDetails: map[string]int{"cached_tokens": u.CachedTokens}, OutputTokensDetails: map[string]int{"reasoning_tokens": u.ReasoningTokens}}
		finish, failure := outcome(p)
		switch {
		case failure != nil:
			rb.resp.Status = "failed"
			rb.resp.Error = &responseError{Code: failure.code, Message: failure.message}
			return rb.send("response.failed", map[string]any{"response": rb.resp})
		case p.Interrupt != nil:
			// Stopped by a new message before it finished: cancelled, the status the Responses
			// API gives a response stopped before its end. The stream has no event of that name:
			// response.incomplete is the one that ends a response that did not complete.
			rb.resp.Status = "cancelled"
			rb.resp.weftInterrupt = interruptOf(p)
			return rb.send("response.incomplete", map[string]any{"response": rb.resp})
		case finish == "length":
			rb.resp.Status = "incomplete"
			rb.resp.IncompleteDetails = map[string]any{"reason": "max_output_tokens"}
			return rb.send("response.incomplete", map[string]any{"response": rb.resp})
		}
		rb.resp.Status = "completed"
		return rb.send("response.completed", map[string]any{"response": rb.resp})
	}
	return nil
}

// add appends an output item.
func (rb *responseBuilder) add(item *outputItem) error {
	rb.at[item.ID] = len(rb.resp.Output)
	rb.resp.Output = append(rb.resp.Output, item)
	return rb.send("response.output_item.added", map[string]any{"output_index": rb.at[item.ID], "item": item})
}

// closeMessage ends the streaming message item with the status (completed, or incomplete).
func (rb *responseBuilder) closeMessage(status string) error {
	item := rb.open
	if item == nil {
		return nil
	}
	rb.open = nil
	item.Status = status
	i := rb.at[item.ID]
	part := item.Content[0]
	if err := rb.send("response.output_text.done", map[string]any{"item_id": item.ID, "output_index": i, "content_index": 0,
		"text": part.Text, "logprobs": []any{}}); err != nil {
		return err
	}
	if err := rb.send("response.content_part.done", map[string]any{"item_id": item.ID, "output_index": i, "content_index": 0,
		"part": part}); err != nil {
		return err
	}
	return rb.send("response.output_item.done", map[string]any{"output_index": i, "item": item})
}
