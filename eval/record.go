package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/weft-agents/weft"
)

// Recording keeps every model response of an eval run, keyed by where it was asked: the case
// run, the prompt, and the position of the call among that prompt's calls in that case run. A
// replayed run asks the same questions in the same places, so it gets the same answers without a
// network, and reaches the same verdicts. Safe for concurrent use.
type Recording struct {
	mu    sync.Mutex
	calls map[string]RecordedCall
}

// RecordedCall is one model call of a recording.
type RecordedCall struct {
	// Key is "EVAL/CASE#REPETITION/PROMPT#N".
	Key string `json:"key"`
	// Model is the model definition that was called.
	Model string `json:"model"`
	// Response is the reply (nil when the call failed).
	Response *RecordedResponse `json:"response,omitempty"`
	// Error is the failure (nil when it succeeded).
	Error *RecordedError `json:"error,omitempty"`
}

// RecordedResponse is a recorded model reply.
type RecordedResponse struct {
	Text         string          `json:"text,omitempty"`
	Reasoning    string          `json:"reasoning,omitempty"`
	ToolCalls    []weft.ToolCall `json:"tool_calls,omitempty"`
	FinishReason string          `json:"finish_reason,omitempty"`
	Usage        weft.Usage      `json:"usage"`
	ModelID      string          `json:"model_id,omitempty"`
}

// RecordedError is a recorded provider failure.
type RecordedError struct {
	Type    weft.ErrorType `json:"type"`
	Status  int            `json:"status,omitempty"`
	Message string         `json:"message"`
}

type recordingFile struct {
	Version int            `json:"version"`
	Calls   []RecordedCall `json:"calls"`
}

// NewRecording returns an empty recording.
func NewRecording() *Recording { return &Recording{calls: map[string]RecordedCall{}} }

// LoadRecording reads a recording written by Save.
func LoadRecording(path string) (*Recording, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPath(err))
	}
	var f recordingFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: not a recording: %v", path, err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("%s: version: want 1, not %d", path, f.Version)
	}
	r := NewRecording()
	for i, c := range f.Calls {
		if c.Key == "" || (c.Response == nil) == (c.Error == nil) {
			return nil, fmt.Errorf("%s: calls[%d]: want a key and exactly one of response and error", path, i)
		}
		r.calls[c.Key] = c
	}
	return r, nil
}

// Save writes the recording as JSON, calls sorted by key.
func (r *Recording) Save(path string) error {
	r.mu.Lock()
	f := recordingFile{Version: 1, Calls: make([]RecordedCall, 0, len(r.calls))}
	for _, c := range r.calls {
		f.Calls = append(f.Calls, c)
	}
	r.mu.Unlock()
	slices.SortFunc(f.Calls, func(a, b RecordedCall) int {
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o600)
}

// Len is the number of calls recorded.
func (r *Recording) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// callCounter numbers the calls of one case run per prompt.
type callCounter struct {
	run string
	mu  sync.Mutex
	n   map[string]int
	// redact, once the case's thread exists, hides its secrets in what is recorded.
	redact func(string) string
}

func (c *callCounter) setRedact(fn func(string) string) {
	c.mu.Lock()
	c.redact = fn
	c.mu.Unlock()
}

// redacted passes a recorded call's JSON form through the case's redaction: a secret the model
// repeated is not written to the recording file.
func (c *callCounter) redacted(rc RecordedCall) RecordedCall {
	c.mu.Lock()
	fn := c.redact
	c.mu.Unlock()
	if fn == nil {
		return rc
	}
	doc, err := json.Marshal(rc)
	if err != nil {
		return rc
	}
	var out RecordedCall
	if json.Unmarshal([]byte(fn(string(doc))), &out) != nil {
		return rc
	}
	return out
}

func newCallCounter(run string) *callCounter { return &callCounter{run: run, n: map[string]int{}} }

func (c *callCounter) next(prompt string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[prompt]++
	return c.run + "/" + prompt + "#" + strconv.Itoa(c.n[prompt])
}

// recorder calls p and keeps each answer in rec.
func (r *Recording) recorder(p weft.Provider, keys *callCounter) weft.Provider {
	return weft.ProviderFunc(func(ctx context.Context, req *weft.Request, onChunk func(weft.Chunk)) (*weft.Response, error) {
		key := keys.next(req.Prompt)
		resp, err := p.Call(ctx, req, onChunk)
		c := RecordedCall{Key: key, Model: req.Model.Name}
		if err != nil {
			pe := &weft.ProviderError{Type: weft.ErrUnknown, Message: err.Error()}
			if e, ok := err.(*weft.ProviderError); ok {
				pe = e
			}
			c.Error = &RecordedError{Type: pe.Type, Status: pe.Status, Message: pe.Message}
		} else {
			c.Response = &RecordedResponse{Text: resp.Text, Reasoning: resp.Reasoning, ToolCalls: resp.ToolCalls,
				FinishReason: resp.FinishReason, Usage: resp.Usage, ModelID: resp.ModelID}
		}
		c = keys.redacted(c)
		r.mu.Lock()
		r.calls[key] = c
		r.mu.Unlock()
		return resp, err
	})
}

// replayer answers each call from the recording; a call it does not hold fails, naming its key.
func (r *Recording) replayer(keys *callCounter) weft.Provider {
	return weft.ProviderFunc(func(ctx context.Context, req *weft.Request, onChunk func(weft.Chunk)) (*weft.Response, error) {
		key := keys.next(req.Prompt)
		r.mu.Lock()
		c, ok := r.calls[key]
		r.mu.Unlock()
		if !ok {
			return nil, &weft.ProviderError{Type: weft.ErrScriptExhausted, Message: fmt.Sprintf("the recording holds no answer for call %s", key)}
		}
		if c.Error != nil {
			return nil, &weft.ProviderError{Type: c.Error.Type, Status: c.Error.Status, Message: c.Error.Message}
		}
		rr := c.Response
		if onChunk != nil && rr.Text != "" {
			onChunk(weft.Chunk{Text: rr.Text})
		}
		usage := rr.Usage
		if usage.Cost != nil {
			v := *usage.Cost
			usage.Cost = &v
		}
		return &weft.Response{Text: rr.Text, Reasoning: rr.Reasoning, ToolCalls: slices.Clone(rr.ToolCalls), FinishReason: rr.FinishReason,
			Usage: usage, ModelID: rr.ModelID}, nil
	})
}
