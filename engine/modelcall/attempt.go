package modelcall

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/payload"
	"github.com/weft-agents/weft/engine/window"
)

// ContextError ends a run whose request did not fit the model's window (context_too_long).
type ContextError struct {
	// Text is the stop's text: what did not fit, and what to do.
	Text string
}

func (e *ContextError) Error() string { return e.Text }

// storeError is a store failure met while making a model call (recording its events).
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// ErrorType is the weft.ErrorType of a call's error, unknown when it is not a provider's.
func ErrorType(err error) string {
	var pe *weft.ProviderError
	if errors.As(err, &pe) {
		return string(pe.Type)
	}
	return string(weft.ErrUnknown)
}

// withFallbacks tries the prompt's model with its retries, then each fallback in order.
func (c *Caller) withFallbacks(s Scope, base *weft.Request, messageID string) (*weft.Response, *weft.Model, []*weft.LogEntry, error) {
	primary, ok := c.m.Registry.Model(s.Prompt.Model)
	if !ok {
		return nil, nil, nil, fmt.Errorf("model %q is not defined", s.Prompt.Model)
	}
	models := []*weft.Model{primary}
	for _, f := range primary.Fallbacks {
		if m, ok := c.m.Registry.Model(f); ok {
			models = append(models, m)
		}
	}
	var logs []*weft.LogEntry
	var lastErr error
	var retryOf string
	retried := false
	for mi, m := range models {
		if mi > 0 {
			if c.run.Observed() {
				c.run.Emit("fallback_triggered", payload.Fields{"from_model": models[mi-1].Name, "to_model": m.Name, "error_type": ErrorType(lastErr)})
			}
		}
		policy := m.Retry.WithDefaults()
		// limit, once the model refused a request as too long, is the tokens its next request may
		// take; it is made smaller once per step (shrunk). A model that declares no window starts
		// from the limit an earlier refusal taught: else every step of a long thread would be sent
		// whole first, to be refused again.
		limit, shrunk := 0, false
		if m.Capabilities.MaxContextTokens == 0 {
			limit = c.m.Learned(m.Name)
		}
	attempts:
		for n := 1; n <= policy.Attempts; n++ {
			var fit window.Fitted
			resp, log, err := c.attempt(s, base, m, messageID, retryOf, n, limit, &fit)
			logs = append(logs, log)
			retryOf = log.ID
			if err == nil {
				return resp, m, logs, nil
			}
			lastErr = err
			var se *storeError
			if errors.As(err, &se) {
				return nil, m, logs, se.err
			}
			if c.ctx.Err() != nil || errors.Is(err, ErrInterrupted) {
				return nil, m, logs, err
			}
			var pe *weft.ProviderError
			if !errors.As(err, &pe) {
				break attempts
			}
			if !pe.Fallible() {
				return nil, m, logs, err
			}
			if weft.ClassifyContextLength(pe).Type == weft.ErrContextLength {
				if shrunk || s.Prompt.StrategyOf() == weft.ContextNone {
					break attempts // made smaller once already, or the prompt wants the error
				}
				// Once more, with the older messages that made it too long left out.
				limit, shrunk = max(1, fit.After*6/10), true
				if m.Capabilities.MaxContextTokens == 0 {
					c.m.limits.learn(m.Name, limit)
				}
				n--
				retried = true
				continue
			}
			if !pe.Retryable() || n == policy.Attempts {
				break attempts
			}
			if pe.RetryAfter > policy.MaxRetryAfter.D() {
				break attempts
			}
			retried = true
			delay := min(time.Duration(float64(policy.BaseDelay.D())*math.Pow(2, float64(n-1))), policy.MaxDelay.D())
			delay = max(delay, pe.RetryAfter)
			if err := c.backoff(s, delay); err != nil {
				return nil, m, logs, err
			}
		}
	}
	red := *c.red
	var pe *weft.ProviderError
	if errors.As(lastErr, &pe) && pe.Type == weft.ErrContextLength {
		return nil, nil, logs, &ContextError{Text: window.TooLong(s.Prompt, models[len(models)-1], errors.New(red.Error(lastErr)))}
	}
	if !retried {
		return nil, nil, logs, fmt.Errorf("Model %s failed (%s is not retried) and %d fallbacks: %s", primary.Name, ErrorType(lastErr), len(models)-1, red.Error(lastErr))
	}
	return nil, nil, logs, fmt.Errorf("All retry attempts exhausted for model %s and %d fallbacks: %s", primary.Name, len(models)-1, red.Error(lastErr))
}

// backoff waits before a retry. At the top level a message with weft.IfBusyInterrupt ends the
// wait as it cancels a model call (ErrInterrupted).
func (c *Caller) backoff(s Scope, delay time.Duration) error {
	if s.Depth > 0 {
		return c.m.Clock.Sleep(c.ctx, delay)
	}
	ctx, cancel := context.WithCancelCause(c.ctx)
	defer cancel(nil)
	if !c.run.Interruptible(cancel) {
		return ErrInterrupted
	}
	err := c.m.Clock.Sleep(ctx, delay)
	c.run.Interruptible(nil)
	if c.run.Interrupting() {
		return ErrInterrupted
	}
	return err
}

// attempt makes one provider call and returns its log row.
// limit > 0 is the tokens the request may take (window.Fit); fit is set to what was left out.
func (c *Caller) attempt(s Scope, base *weft.Request, m *weft.Model, messageID, retryOf string, n, limit int, fit *window.Fitted) (*weft.Response, *weft.LogEntry, error) {
	req := *base
	req.Model = m
	if m.Provider != s.Provider {
		// A fallback of another provider cannot read the primary's verbatim blocks.
		req.Messages = withoutProviderBlocks(req.Messages)
	}
	req.Timeouts = c.m.Timeouts(m)
	req.Options = MergeOptions(m.ProviderOptions, s.Prompt.ModelOptions)
	if !m.Capabilities.ToolCalls() {
		req.Tools, req.ToolChoice, req.ParallelToolCalls = nil, weft.ToolChoiceNone, false
	}
	if !m.Capabilities.Images() {
		req.Messages = withoutImages(req.Messages)
	}
	*fit = window.Fit(c.m.Tokens, s.Prompt, &req, m, limit)
	if fit.Omitted > 0 && c.run.Observed() {
		c.run.Emit("context_trimmed", payload.Fields{"model": m.Name, "strategy": string(s.Prompt.StrategyOf()), "omitted_messages": fit.Omitted, "tokens_before": fit.Before,
			"tokens_after": fit.After, "budget": fit.Budget})
	}
	start := c.now()
	log := &weft.LogEntry{ID: weft.NewID("log_"), ThreadID: c.threadID, RunID: c.runID, MessageID: messageID,
		RetryOfLogID: retryOf, Kind: "llm", Provider: m.Provider, Model: m.Name, ModelID: m.Model, Prompt: s.Prompt.Name,
		Side: s.Side, Depth: s.Depth, ToolChoice: string(req.ToolChoice), CreatedAt: start}
	for _, t := range req.Tools {
		log.ToolsOffered = append(log.ToolsOffered, t.Name)
	}
	if c.run.Observed() {
		c.run.Emit("llm_request", payload.ModelRequest{LogID: log.ID, Model: m.Name, Provider: m.Provider, Attempt: n})
	}
	if err := c.run.FlushEvents(); err != nil {
		// The store failed, not the model: no retry or fallback helps.
		return nil, log, &storeError{err}
	}
	p, key, err := c.m.provider(*c.env, m)
	if err == nil {
		req.APIKey = key
		if c.m.OnRequest != nil {
			c.m.OnRequest(&req)
		}
		// Last line of defence: no secret leaves in a request. A model script sees the
		// request before this pass so its expectations catch what earlier rules missed; its hits are
		// counted (weft run exits 5 on them) instead.
		c.lastLineRedact(&req, c.m.Override == nil)
		if c.m.OnTrace != nil {
			c.m.OnTrace([]byte((*c.red).String(string(req.TraceJSON()))))
		}
		var resp *weft.Response
		resp, err = c.callProvider(p, &req, log, start)
		// A tool's goroutine may have set a secret meanwhile: the reply is redacted with it.
		c.run.Sync()
		if err == nil {
			c.finishLog(log, m, resp, start)
			c.attemptEnded(log)
			return resp, log, nil
		}
	}
	log.Error = (*c.red).Error(err)
	log.ErrorType = ErrorType(err)
	log.ErrorOrigin = "provider:" + m.Provider
	var pe *weft.ProviderError
	if errors.As(err, &pe) {
		log.StatusCode = pe.Status
	} else if errors.Is(err, ErrInterrupted) {
		log.ErrorOrigin = "runtime"
	} else if c.ctx.Err() == nil {
		log.ErrorOrigin = "runtime"
		err = &weft.ProviderError{Type: weft.ErrAuth, Message: err.Error(), Err: err}
	}
	log.LatencyMS = c.now().Sub(start).Milliseconds()
	c.attemptEnded(log)
	if c.run.Observed() {
		c.run.Emit("llm_response", payload.ModelResponse{LogID: log.ID, Status: "error", Error: log.Error})
	}
	return nil, log, err
}

// finishLog fills a successful attempt's usage, cost and timing.
func (c *Caller) finishLog(log *weft.LogEntry, m *weft.Model, resp *weft.Response, start time.Time) {
	u := resp.Usage
	log.FinishReason = resp.FinishReason
	log.IsComplete = true
	log.InputTokens, log.OutputTokens, log.CachedTokens, log.ReasoningTokens = u.InputTokens, u.OutputTokens, u.CachedTokens, u.ReasoningTokens
	log.TotalTokens = u.InputTokens + u.OutputTokens
	if resp.ModelID != "" {
		log.ModelID = resp.ModelID
	}
	log.CostInput, log.CostCached, log.CostOutput, log.CostTotal = cost(m, u)
	log.LatencyMS = c.now().Sub(start).Milliseconds()
	log.GenerationMS = log.LatencyMS - log.TimeToFirstTokenMS
	for _, tc := range resp.ToolCalls {
		log.ToolsCalled = append(log.ToolsCalled, tc.Name)
	}
	red := *c.red
	if len(resp.RequestBody) > 0 {
		log.RequestBody = red.Bytes(resp.RequestBody)
	}
	if len(resp.ResponseBody) > 0 {
		log.ResponseBody = red.Bytes(resp.ResponseBody)
	}
	if c.run.Observed() {
		c.run.Emit("llm_response", payload.ModelResponse{LogID: log.ID, Status: "ok", InputTokens: u.InputTokens,
			OutputTokens: u.OutputTokens, CostTotal: log.CostTotal, LatencyMS: log.LatencyMS})
	}
}
