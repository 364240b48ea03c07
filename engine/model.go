package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/dispatch"
	"github.com/weft-agents/weft/engine/redact"
	"github.com/weft-agents/weft/engine/window"
)

// requiredNote is appended when a reply ignores toolChoice required.
const requiredNote = "You must respond by calling one of the available tools."

// modelResult is the outcome of a step's model call.
type modelResult struct {
	resp  *weft.Response
	model *weft.Model
	log   *weft.LogEntry
	// structured is the parsed final answer of a prompt with an output schema.
	structured any
	// logs are the log rows of every attempt, the successful one last.
	logs []*weft.LogEntry
}

// callModel performs the step's model call: retries, fallbacks and the toolChoice required loop.
// Every attempt gets a log row; the rows are returned for the step's transaction.
func (r *run) callModel(s *scope, req *weft.Request, messageID string) (*modelResult, error) {
	enforce := req.ToolChoice == weft.ToolChoiceRequired && len(req.Tools) > 0
	res := &modelResult{}
	if err := r.checkBudget(); err != nil {
		return res, err
	}
	for attempt := 1; ; attempt++ {
		resp, model, logs, err := r.callWithFallbacks(s, req, messageID)
		if res.logs == nil {
			res.logs = logs // the first attempt's rows: the usual case needs no copy
		} else {
			res.logs = append(res.logs, logs...)
		}
		if err != nil {
			return res, err
		}
		if enforce && len(resp.ToolCalls) == 0 {
			last := logs[len(logs)-1]
			last.Error = "reply discarded: no tool call although toolChoice is required"
			if attempt == 3 {
				return res, fmt.Errorf(`model did not call a tool although toolChoice is "required" (3 attempts)`)
			}
			req = withNote(req, requiredNote)
			continue
		}
		if req.Output != nil && len(resp.ToolCalls) == 0 {
			// The final answer of a structured prompt: parsed and validated, else retried with
			// the validation error, twice at most.
			v, err := dispatch.ParseStructured(r.e.validator, s.prompt.OutputSchema, resp.Text)
			if err != nil {
				last := logs[len(logs)-1]
				last.Error = "reply discarded: " + err.Error()
				if attempt >= dispatch.StructuredAttempts {
					return res, fmt.Errorf("no valid structured answer after %d attempts: %w", attempt, err)
				}
				req = withNote(req, dispatch.StructuredNote(err))
				continue
			}
			res.structured = v
		}
		res.resp, res.model, res.log = resp, model, logs[len(logs)-1]
		return res, nil
	}
}

func withNote(req *weft.Request, note string) *weft.Request {
	c := *req
	c.Messages = append(append([]weft.LLMMessage(nil), req.Messages...), weft.LLMMessage{Role: weft.RoleSystem, Content: note})
	return &c
}

// callWithFallbacks tries the prompt's model with its retries, then each fallback in order.
func (r *run) callWithFallbacks(s *scope, base *weft.Request, messageID string) (*weft.Response, *weft.Model, []*weft.LogEntry, error) {
	primary, ok := r.e.reg.Model(s.prompt.Model)
	if !ok {
		return nil, nil, nil, fmt.Errorf("model %q is not defined", s.prompt.Model)
	}
	models := []*weft.Model{primary}
	for _, f := range primary.Fallbacks {
		if m, ok := r.e.reg.Model(f); ok {
			models = append(models, m)
		}
	}
	var logs []*weft.LogEntry
	var lastErr error
	var retryOf string
	retried := false
	for mi, m := range models {
		if mi > 0 {
			if r.e.observed() {
				r.emit("fallback_triggered", Fields{"from_model": models[mi-1].Name, "to_model": m.Name, "error_type": errorType(lastErr)})
			}
		}
		policy := m.Retry.WithDefaults()
		// limit, once the model refused a request as too long, is the tokens its next request may
		// take; it is made smaller once.
		limit := 0
	attempts:
		for n := 1; n <= policy.Attempts; n++ {
			var fit window.Fitted
			resp, log, err := r.attempt(s, base, m, messageID, retryOf, n, limit, &fit)
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
			if r.ctx.Err() != nil || errors.Is(err, errInterrupted) {
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
				if limit > 0 || s.prompt.StrategyOf() == weft.ContextNone {
					break attempts // made smaller once already, or the prompt wants the error
				}
				// Once more, with the older messages that made it too long left out.
				limit = max(1, fit.After*6/10)
				if m.Capabilities.MaxContextTokens == 0 {
					r.e.learnLimit(m.Name, limit)
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
			if err := r.backoff(s, delay); err != nil {
				return nil, m, logs, err
			}
		}
	}
	var pe *weft.ProviderError
	if errors.As(lastErr, &pe) && pe.Type == weft.ErrContextLength {
		return nil, nil, logs, &contextError{text: window.TooLong(s.prompt, models[len(models)-1], errors.New(r.red.Error(lastErr)))}
	}
	if !retried {
		return nil, nil, logs, fmt.Errorf("Model %s failed (%s is not retried) and %d fallbacks: %s", primary.Name, errorType(lastErr), len(models)-1, r.red.Error(lastErr))
	}
	return nil, nil, logs, fmt.Errorf("All retry attempts exhausted for model %s and %d fallbacks: %s", primary.Name, len(models)-1, r.red.Error(lastErr))
}

// backoff waits before a retry. At the top level a message with weft.IfBusyInterrupt ends the
// wait as it cancels a model call (errInterrupted).
func (r *run) backoff(s *scope, delay time.Duration) error {
	if s.depth > 0 {
		return r.e.clock.Sleep(r.ctx, delay)
	}
	ctx, cancel := context.WithCancelCause(r.ctx)
	defer cancel(nil)
	if !r.ar.modelCall(cancel) {
		return errInterrupted
	}
	err := r.e.clock.Sleep(ctx, delay)
	r.ar.modelCall(nil)
	if r.interrupting() {
		return errInterrupted
	}
	return err
}

// contextError ends a run whose request did not fit the model's window (context_too_long).
type contextError struct{ text string }

func (e *contextError) Error() string { return e.text }

// storeError is a store failure met while making a model call (recording its events).
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

func errorType(err error) string {
	var pe *weft.ProviderError
	if errors.As(err, &pe) {
		return string(pe.Type)
	}
	return string(weft.ErrUnknown)
}

// attempt makes one provider call and returns its log row.
// limit > 0 is the tokens the request may take (window.Fit); fit is set to what was left out.
func (r *run) attempt(s *scope, base *weft.Request, m *weft.Model, messageID, retryOf string, n, limit int, fit *window.Fitted) (*weft.Response, *weft.LogEntry, error) {
	req := *base
	req.Model = m
	if m.Provider != s.provider {
		// A fallback of another provider cannot read the primary's verbatim blocks.
		req.Messages = withoutProviderBlocks(req.Messages)
	}
	req.Timeouts = r.e.timeoutsOf(m)
	req.Options = mergeOptions(m.ProviderOptions, s.prompt.ModelOptions)
	if !m.Capabilities.ToolCalls() {
		req.Tools, req.ToolChoice, req.ParallelToolCalls = nil, weft.ToolChoiceNone, false
	}
	if !m.Capabilities.Images() {
		req.Messages = withoutImages(req.Messages)
	}
	*fit = window.Fit(&r.e.tokens, s.prompt, &req, m, limit)
	if fit.Omitted > 0 && r.e.observed() {
		r.emit("context_trimmed", Fields{"model": m.Name, "strategy": string(s.prompt.StrategyOf()), "omitted_messages": fit.Omitted, "tokens_before": fit.Before,
			"tokens_after": fit.After, "budget": fit.Budget})
	}
	start := r.now()
	log := &weft.LogEntry{ID: weft.NewID("log_"), ThreadID: r.thread.ID, RunID: r.id, MessageID: messageID,
		RetryOfLogID: retryOf, Kind: "llm", Provider: m.Provider, Model: m.Name, ModelID: m.Model, Prompt: s.prompt.Name,
		Side: s.side, Depth: s.depth, ToolChoice: string(req.ToolChoice), CreatedAt: start}
	for _, t := range req.Tools {
		log.ToolsOffered = append(log.ToolsOffered, t.Name)
	}
	if r.e.observed() {
		r.emit("llm_request", ModelRequest{LogID: log.ID, Model: m.Name, Provider: m.Provider, Attempt: n})
	}
	if err := r.flushEvents(); err != nil {
		// The store failed, not the model: no retry or fallback helps.
		return nil, log, &storeError{err}
	}
	p, key, err := r.provider(m)
	if err == nil {
		req.APIKey = key
		if r.e.opt.OnRequest != nil {
			r.e.opt.OnRequest(&req)
		}
		// Last line of defence: no secret leaves in a request. A model script sees the
		// request before this pass so its expectations catch what earlier rules missed; its hits are
		// counted (weft run exits 5 on them) instead.
		r.lastLineRedact(&req, r.e.opt.Override == nil)
		if r.e.opt.OnTrace != nil {
			r.e.opt.OnTrace([]byte(r.red.String(string(req.TraceJSON()))))
		}
		var resp *weft.Response
		resp, err = r.callProvider(p, &req, log, start)
		// A tool's goroutine may have set a secret meanwhile: the reply is redacted with it.
		r.sync()
		if err == nil {
			r.finishLog(log, m, resp, start)
			if r.obs != nil {
				r.attemptEnded(log)
			}
			return resp, log, nil
		}
	}
	log.Error = r.red.Error(err)
	log.ErrorType = errorType(err)
	log.ErrorOrigin = "provider:" + m.Provider
	var pe *weft.ProviderError
	if errors.As(err, &pe) {
		log.StatusCode = pe.Status
	} else if errors.Is(err, errInterrupted) {
		log.ErrorOrigin = "runtime"
	} else if r.ctx.Err() == nil {
		log.ErrorOrigin = "runtime"
		err = &weft.ProviderError{Type: weft.ErrAuth, Message: err.Error(), Err: err}
	}
	log.LatencyMS = r.now().Sub(start).Milliseconds()
	if r.obs != nil {
		r.attemptEnded(log)
	}
	if r.e.observed() {
		r.emit("llm_response", ModelResponse{LogID: log.ID, Status: "error", Error: log.Error})
	}
	return nil, log, err
}

// callProvider runs the call under the first-chunk and stall timeouts.
func (r *run) callProvider(p weft.Provider, req *weft.Request, log *weft.LogEntry, start time.Time) (*weft.Response, error) {
	// One allocation holds the call's state; its methods are the timer's and the chunks' callbacks.
	c := &providerCall{r: r, log: log, depth: req.Depth, to: req.Timeouts}
	// Deltas are redacted as a stream: a secret split across deltas is replaced as well.
	c.text, c.reasoning = redact.NewStream(r.red), redact.NewStream(r.red)
	ctx, cancel := context.WithCancelCause(r.ctx)
	defer cancel(nil)
	c.cancel = cancel
	if req.Depth == 0 {
		// A message with weft.IfBusyInterrupt cancels the run's top-level model call (a
		// sub-prompt's belongs to a tool call that started, which completes).
		if !r.ar.modelCall(cancel) {
			return nil, errInterrupted
		}
		defer r.ar.modelCall(nil)
	}
	if c.to.FirstChunk > 0 {
		c.timer = time.AfterFunc(c.to.FirstChunk.D(), c.expire)
		defer c.timer.Stop()
	}
	if c.to.Total > 0 {
		var cc context.CancelFunc
		ctx, cc = context.WithTimeoutCause(ctx, c.to.Total.D(), &weft.ProviderError{Type: weft.ErrTimeout, Message: fmt.Sprintf("no complete reply within %s", c.to.Total)})
		defer cc()
	}
	defer c.flush()
	resp, err := p.Call(ctx, req, c.onChunk)
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, errInterrupted) && r.ctx.Err() == nil {
			return nil, errInterrupted // its output is discarded: nothing of it is stored
		}
		if cause := context.Cause(ctx); cause != nil && r.ctx.Err() == nil {
			var pe *weft.ProviderError
			if errors.As(cause, &pe) {
				return nil, pe
			}
		}
		return nil, err
	}
	if resp == nil {
		return nil, &weft.ProviderError{Type: weft.ErrUnknown, Message: "provider returned no response"}
	}
	c.mu.Lock()
	if !c.first.IsZero() {
		log.TimeToFirstTokenMS = c.first.Sub(start).Milliseconds()
	}
	c.mu.Unlock()
	return resp, nil
}

// providerCall is one provider call's streaming state (callProvider).
type providerCall struct {
	r      *run
	log    *weft.LogEntry
	depth  int
	to     weft.Timeouts
	cancel context.CancelCauseFunc
	timer  *time.Timer // the first-chunk, then stall, timer (nil without a first-chunk timeout)

	mu              sync.Mutex // guards first and the redactors: chunks and the timer race
	first           time.Time  // the first chunk's arrival
	text, reasoning redact.Stream
}

// expire is the timer's: no chunk within the first-chunk timeout, or none since the last for the
// stall timeout.
func (c *providerCall) expire() {
	c.mu.Lock()
	started := !c.first.IsZero()
	c.mu.Unlock()
	if started {
		c.cancel(&weft.ProviderError{Type: weft.ErrTimeout, Message: fmt.Sprintf("stream stalled: no output for %s", c.to.Stall)})
		return
	}
	c.cancel(&weft.ProviderError{Type: weft.ErrTimeout, Message: fmt.Sprintf("no output within %s", c.to.FirstChunk)})
}

// onChunk takes a streamed chunk: it restarts the stall timer and emits the redacted deltas.
func (c *providerCall) onChunk(ch weft.Chunk) {
	c.mu.Lock()
	if c.first.IsZero() {
		c.first = c.r.now()
	}
	c.mu.Unlock()
	if c.timer != nil && c.to.Stall > 0 {
		c.timer.Reset(c.to.Stall.D())
	}
	if ch.Text == "" && ch.Reasoning == "" {
		return
	}
	c.mu.Lock()
	t, rs := c.text.Write(ch.Text), c.reasoning.Write(ch.Reasoning)
	c.mu.Unlock()
	c.emitDelta("message_chunk", t)
	c.emitDelta("reasoning_chunk", rs)
}

// flush emits what the redactors still hold once the call ended.
func (c *providerCall) flush() {
	c.mu.Lock()
	t, rs := c.text.Flush(), c.reasoning.Flush()
	c.mu.Unlock()
	c.emitDelta("message_chunk", t)
	c.emitDelta("reasoning_chunk", rs)
}

func (c *providerCall) emitDelta(typ, delta string) {
	if delta != "" && c.r.e.observed() {
		c.r.emit(typ, Chunk{MessageID: c.log.MessageID, Depth: c.depth, Delta: delta})
	}
}

// finishLog fills a successful attempt's usage, cost and timing.
func (r *run) finishLog(log *weft.LogEntry, m *weft.Model, resp *weft.Response, start time.Time) {
	u := resp.Usage
	log.FinishReason = resp.FinishReason
	log.IsComplete = true
	log.InputTokens, log.OutputTokens, log.CachedTokens, log.ReasoningTokens = u.InputTokens, u.OutputTokens, u.CachedTokens, u.ReasoningTokens
	log.TotalTokens = u.InputTokens + u.OutputTokens
	if resp.ModelID != "" {
		log.ModelID = resp.ModelID
	}
	log.CostInput, log.CostCached, log.CostOutput, log.CostTotal = cost(m, u)
	log.LatencyMS = r.now().Sub(start).Milliseconds()
	log.GenerationMS = log.LatencyMS - log.TimeToFirstTokenMS
	for _, c := range resp.ToolCalls {
		log.ToolsCalled = append(log.ToolsCalled, c.Name)
	}
	if len(resp.RequestBody) > 0 {
		log.RequestBody = r.red.Bytes(resp.RequestBody)
	}
	if len(resp.ResponseBody) > 0 {
		log.ResponseBody = r.red.Bytes(resp.ResponseBody)
	}
	if r.e.observed() {
		r.emit("llm_response", ModelResponse{LogID: log.ID, Status: "ok", InputTokens: u.InputTokens,
			OutputTokens: u.OutputTokens, CostTotal: log.CostTotal, LatencyMS: log.LatencyMS})
	}
}

// cost prices an attempt: a provider-reported cost wins; without prices and
// without a reported cost it is unknown (nil).
func cost(m *weft.Model, u weft.Usage) (in, cached, out, total *float64) {
	if u.Cost != nil {
		c := *u.Cost
		return nil, nil, nil, &c
	}
	if m.InputPrice == nil && m.OutputPrice == nil {
		return nil, nil, nil, nil
	}
	ip, op := deref(m.InputPrice), deref(m.OutputPrice)
	cp := ip
	if m.CachedPrice != nil {
		cp = *m.CachedPrice
	}
	i := float64(u.InputTokens-u.CachedTokens) * ip / 1e6
	c := float64(u.CachedTokens) * cp / 1e6
	o := float64(u.OutputTokens+u.ReasoningTokens) * op / 1e6
	t := weft.RoundUSD(i + c + o)
	i, c, o = weft.RoundUSD(i), weft.RoundUSD(c), weft.RoundUSD(o)
	return &i, &c, &o, &t
}

func deref(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}

func mergeOptions(provider, prompt map[string]any) map[string]any {
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

// provider returns the provider of a model and its API key, looked up in the thread env, then the
// user env, the instance env and the process env.
func (r *run) provider(m *weft.Model) (weft.Provider, string, error) {
	if r.e.opt.Override != nil {
		return r.e.opt.Override, "", nil
	}
	p, err := r.e.opt.Providers(m)
	if err != nil {
		return nil, "", err
	}
	keyVar, base := r.keyVar(m.Provider)
	if keyVar == "" {
		return p, "", nil
	}
	if key, ok := r.lookupKey(keyVar); ok {
		return p, key, nil
	}
	if base.AltKeyEnv != "" {
		if key, ok := r.lookupKey(base.AltKeyEnv); ok {
			return p, key, nil
		}
	}
	if base.KeyOptional {
		// azure_openai without a key authenticates with a Microsoft Entra ID token when its
		// adapter has one, else its call fails auth_error naming both variables.
		return p, "", nil
	}
	return nil, "", fmt.Errorf("No API key found for provider %q (set %s)", m.Provider, keyVar)
}

// keyVar returns the variable holding a provider's key and the built-in provider it is, or that
// a custom provider is based on.
func (r *run) keyVar(provider string) (string, weft.ProviderInfo) {
	if info, ok := weft.LookupProvider(provider); ok {
		return info.KeyEnv, info
	}
	if cp, ok := r.e.reg.Provider(provider); ok {
		info, _ := weft.LookupProvider(cp.Base)
		return orDefault(cp.APIKeyEnv, info.KeyEnv), info
	}
	return "", weft.ProviderInfo{}
}

// lookupKey resolves a provider key: thread env → user env → instance env → process env. An
// empty value counts as unset.
func (r *run) lookupKey(name string) (string, bool) {
	if v, ok := r.env.Thread[name]; ok && v.Value != "" {
		return v.Value, true
	}
	if v, ok := r.env.User[name]; ok && v.Value != "" {
		return v.Value, true
	}
	if v, ok := r.env.Instance[name]; ok && v.Value != "" {
		return v.Value, true
	}
	if v, ok := r.e.procKeys[name]; ok && v != "" {
		return v, true
	}
	v, ok := r.e.opt.LookupEnv(name)
	return v, ok && v != ""
}

// providerKeys returns the keys of every provider the registry's models use, for redaction.
func (r *run) providerKeys() []string {
	e := r.e
	e.keysOnce.Do(func() {
		e.procKeys = map[string]string{}
		seen := map[string]bool{}
		for _, m := range e.reg.Models() {
			v, base := r.keyVar(m.Provider)
			if v == "" || seen[v] {
				continue
			}
			seen[v] = true
			vars := []string{v}
			if v == base.KeyEnv && base.AltKeyEnv != "" {
				vars = append(vars, base.AltKeyEnv)
			}
			for _, v := range vars {
				e.keyVars = append(e.keyVars, v)
				if k, ok := e.opt.LookupEnv(v); ok && k != "" {
					e.procKeys[v] = k
				}
			}
		}
	})
	var keys []string
	for _, v := range e.keyVars {
		if k, ok := r.lookupKey(v); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// lastLineRedact counts the secrets left in the request's messages and, with apply, replaces them.
func (r *run) lastLineRedact(req *weft.Request, apply bool) {
	if r.red.Empty() {
		return
	}
	var msgs []weft.LLMMessage
	for i, m := range req.Messages {
		n := r.red.Count(m.Content)
		for _, p := range m.Parts {
			n += r.red.Count(p.Text)
		}
		for _, c := range m.ToolCalls {
			n += r.red.Count(c.Arguments)
		}
		if n == 0 {
			continue
		}
		r.lastLine += n
		if !apply {
			continue
		}
		if msgs == nil {
			msgs = append([]weft.LLMMessage(nil), req.Messages...)
		}
		m.Content = r.red.String(m.Content)
		if len(m.Parts) > 0 {
			parts := append([]weft.ContentPart(nil), m.Parts...)
			for j := range parts {
				parts[j].Text = r.red.String(parts[j].Text)
			}
			m.Parts = parts
		}
		if len(m.ToolCalls) > 0 {
			calls := append([]weft.ToolCall(nil), m.ToolCalls...)
			for j := range calls {
				calls[j].Arguments = r.red.String(calls[j].Arguments)
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

// timeoutsOf returns a model's timeouts: its own, else WEFT_FIRST_CHUNK_TIMEOUT and
// WEFT_STALL_TIMEOUT from the environment (read once), else the defaults.
func (e *Engine) timeoutsOf(m *weft.Model) weft.Timeouts {
	e.envTimeoutsOnce.Do(func() {
		for name, dst := range map[string]*weft.Duration{"WEFT_FIRST_CHUNK_TIMEOUT": &e.envTimeouts.FirstChunk, "WEFT_STALL_TIMEOUT": &e.envTimeouts.Stall} {
			v, ok := e.opt.LookupEnv(name)
			if !ok || v == "" {
				continue
			}
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				e.log.Warn("ignoring an invalid timeout from the environment (want a positive duration such as 90s)", "variable", name, "value", v)
				continue
			}
			*dst = weft.Duration(d)
		}
	})
	t := m.Timeouts
	if t.FirstChunk == 0 {
		t.FirstChunk = e.envTimeouts.FirstChunk
	}
	if t.Stall == 0 {
		t.Stall = e.envTimeouts.Stall
	}
	return t.WithDefaults()
}
