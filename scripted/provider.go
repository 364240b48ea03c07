package scripted

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/weft-agents/weft"
)

// Provider answers model calls from a script. All calls share one cursor: each consumes the first
// unconsumed entry whose match fits, whichever thread, prompt or goroutine makes it. A Provider built
// from a nil script is the `test` provider, which answers every call with TestResponse. It is safe
// for concurrent use.
type Provider struct {
	scripted bool
	digest   string // identifies the script's content: digest(s)
	entries  []Entry
	opts     Options
	clock    weft.Clock
	calls    atomic.Int64 // tool calls emitted, for call_<k> ids

	mu       sync.Mutex
	consumed []bool
	first    int // index of the first unconsumed entry
	served   int // attempts answered from the script, repeats included
	used     int // distinct entries consumed
	last     int // index of the entry consumed last, -1 for none
	failures []string
}

var _ weft.Provider = (*Provider)(nil)

// New returns a provider playing s (not modified; entries with Index 0 are numbered by position).
// A nil s gives the test provider.
func New(s *Script) *Provider {
	p := &Provider{last: -1}
	if s != nil {
		p.scripted = true
		p.opts = s.Options
		p.digest = digest(s)
		p.entries = make([]Entry, len(s.Responses))
		copy(p.entries, s.Responses)
		for i := range p.entries {
			if p.entries[i].Index == 0 {
				p.entries[i].Index = i + 1
			}
		}
		p.consumed = make([]bool, len(p.entries))
	}
	if p.opts.RealTime {
		p.clock = weft.SystemClock{}
	} else {
		p.clock = &virtualClock{}
	}
	return p
}

// Clock returns the clock that delays and stalls wait on, for the engine's retries and backoff too:
// weft.SystemClock with real_time, else a virtual clock whose Sleep returns at once.
func (p *Provider) Clock() weft.Clock {
	if p.clock == nil {
		return weft.SystemClock{}
	}
	return p.clock
}

// Strict reports the script's strict option: responses left over are a mismatch.
func (p *Provider) Strict() bool { return p.opts.Strict }

// Consumed returns how many attempts were answered from the script (failed expectations and
// repeat_last repeats included; exhaustion errors excluded).
func (p *Provider) Consumed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.served
}

// Remaining returns how many entries were never consumed.
func (p *Provider) Remaining() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.entries) - p.used
}

// Failures returns every expectation failure and exhaustion message so far, in order; any of them
// makes `weft run` exit 5.
func (p *Provider) Failures() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.failures...)
}

// Resume continues the script of an earlier process: the entries numbered in answered count as
// consumed, and tool call ids go on after the ones those entries made. answered holds the
// ScriptEntry numbers of the model calls that process logged with this script (same Digest). A
// thread continued with the script that started it (`weft threads approve … --model-script S`)
// so gets the entries after the ones it used, not entry 1. Numbers that name no entry are
// ignored; an entry is consumed once however often it is named. An entry that answered with an
// error leaves no body, so it is not known here.
func (p *Provider) Resume(answered []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range answered {
		for i := range p.entries {
			if p.entries[i].Index != n || p.consumed[i] {
				continue
			}
			p.consumed[i] = true
			p.used++
			p.last = i
			p.calls.Add(int64(len(p.entries[i].ToolCalls)))
			break
		}
	}
	for p.first < len(p.entries) && p.consumed[p.first] {
		p.first++
	}
}

// Digest identifies the content of the script this provider plays (its options and entries, as
// parsed): two providers playing the same script have the same digest.
func (p *Provider) Digest() string { return p.digest }

func digest(s *Script) string {
	b, err := json.Marshal(struct {
		Options   Options
		Responses []Entry
	}{s.Options, s.Responses})
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// ScriptEntry returns the digest of the script and the number of its entry that answered a model
// call, read from the response body this provider logged for it; ok is false for bodies of other
// providers.
func ScriptEntry(responseBody []byte) (digest string, n int, ok bool) {
	var b struct {
		Entry  *int   `json:"script_entry"`
		Digest string `json:"script"`
	}
	if json.Unmarshal(responseBody, &b) != nil || b.Entry == nil {
		return "", 0, false
	}
	return b.Digest, *b.Entry, true
}

// Call answers req with the next fitting entry. Failures are *weft.ProviderError: the entry's
// error, a timeout (delay reaching the first-chunk timeout, stall_after), expectation_failed or
// script_exhausted. A cancelled ctx returns its error, wrapped.
func (p *Provider) Call(ctx context.Context, req *weft.Request, onChunk func(weft.Chunk)) (*weft.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, cancelled(err)
	}
	if req == nil {
		req = &weft.Request{}
	}
	if !p.scripted {
		e := Entry{Text: TestResponse}
		return p.reply(ctx, req, onChunk, &e)
	}
	e, err := p.take(req)
	if err != nil {
		return nil, err
	}
	if e.Expect != nil {
		if msg := e.Expect.check(req); msg != "" {
			msg = e.prefix() + ": " + msg
			p.recordFailure(msg)
			return nil, &weft.ProviderError{Type: weft.ErrExpectationFailed, Message: msg}
		}
	}
	return p.reply(ctx, req, onChunk, e)
}

// take consumes the first unconsumed entry that fits req (or repeats the last one).
func (p *Provider) take(req *weft.Request) (*Entry, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := p.first; i < len(p.entries); i++ {
		if p.consumed[i] || !p.entries[i].Match.fits(req) {
			continue
		}
		p.consumed[i] = true
		p.served++
		p.used++
		p.last = i
		for p.first < len(p.entries) && p.consumed[p.first] {
			p.first++
		}
		return &p.entries[i], nil
	}
	if p.opts.OnExhausted == ExhaustRepeatLast && p.last >= 0 {
		p.served++
		return &p.entries[p.last], nil
	}
	msg := "model script exhausted after " + strconv.Itoa(p.used) + " responses"
	if left := len(p.entries) - p.used; left > 0 {
		msg += fmt.Sprintf(" (%d left, none fits model %q, prompt %q, agent %q, side %q, depth %d)",
			left, modelName(req), req.Prompt, req.Agent, req.Side, req.Depth)
	}
	p.failures = append(p.failures, msg)
	return nil, &weft.ProviderError{Type: weft.ErrScriptExhausted, Message: msg}
}

func (p *Provider) recordFailure(msg string) {
	p.mu.Lock()
	p.failures = append(p.failures, msg)
	p.mu.Unlock()
}

// fits reports whether the call fits every key of m (a nil m fits anything).
func (m *Match) fits(req *weft.Request) bool {
	if m == nil {
		return true
	}
	if m.Model != nil && !containsString(m.Model, modelName(req)) {
		return false
	}
	if m.Prompt != nil && !containsString(m.Prompt, req.Prompt) {
		return false
	}
	if m.Agent != nil && !containsString(m.Agent, req.Agent) {
		return false
	}
	if m.Side != nil {
		ok := false
		for _, s := range m.Side {
			ok = ok || s == req.Side
		}
		if !ok {
			return false
		}
	}
	if m.Depth != nil {
		ok := false
		for _, d := range m.Depth {
			ok = ok || d == req.Depth
		}
		if !ok {
			return false
		}
	}
	return true
}

func containsString(l []string, s string) bool {
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
}

// reply plays an entry whose expectations held: delay, error, streaming, stall, response.
func (p *Provider) reply(ctx context.Context, req *weft.Request, onChunk func(weft.Chunk), e *Entry) (*weft.Response, error) {
	clock := p.Clock()
	if e.Delay > 0 {
		if fc := req.Timeouts.FirstChunk.D(); fc > 0 && e.Delay >= fc {
			if err := clock.Sleep(ctx, fc); err != nil {
				return nil, cancelled(err)
			}
			return nil, &weft.ProviderError{Type: weft.ErrTimeout, Message: "no output within " + fc.String()}
		}
		if err := clock.Sleep(ctx, e.Delay); err != nil {
			return nil, cancelled(err)
		}
	}
	if x := e.Error; x != nil {
		t := x.Type
		if t == "" {
			t = weft.ErrorTypeForStatus(x.Status)
		}
		return nil, &weft.ProviderError{Type: t, Status: x.Status, Message: x.Message, RetryAfter: x.RetryAfter}
	}

	st := streamer{ctx: ctx, onChunk: onChunk, size: p.opts.ChunkSize, limit: -1, clock: clock, delay: p.opts.ChunkDelay}
	if e.StallAfter != nil {
		st.limit = *e.StallAfter
	}
	if err := st.send(e.Reasoning, true); err != nil {
		return nil, err
	}
	if err := st.send(e.Text, false); err != nil {
		return nil, err
	}
	if st.limit >= 0 {
		stall := req.Timeouts.Stall.D()
		if stall <= 0 {
			stall = weft.Timeouts{}.WithDefaults().Stall.D()
		}
		if err := clock.Sleep(ctx, stall); err != nil {
			return nil, cancelled(err)
		}
		return nil, &weft.ProviderError{Type: weft.ErrTimeout, Message: "stalled after " + strconv.Itoa(st.sent) + " chunks"}
	}

	resp := &weft.Response{Text: e.Text, Reasoning: e.Reasoning, FinishReason: e.FinishReason}
	if req.Model != nil {
		resp.ModelID = req.Model.Model
	}
	if n := len(e.ToolCalls); n > 0 {
		base := p.calls.Add(int64(n)) - int64(n)
		resp.ToolCalls = make([]weft.ToolCall, n)
		for i, tc := range e.ToolCalls {
			c := weft.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments}
			if c.ID == "" {
				c.ID = "call_" + strconv.FormatInt(base+int64(i)+1, 10)
			}
			if c.Arguments == "" {
				c.Arguments = "{}"
			}
			resp.ToolCalls[i] = c
		}
	}
	if resp.FinishReason == "" {
		resp.FinishReason = "stop"
		if len(resp.ToolCalls) > 0 {
			resp.FinishReason = "tool_calls"
		}
	}
	resp.Usage = Usage(req, resp.Text, resp.ToolCalls)
	if u := e.Usage; u != nil {
		set := func(dst *int, v *int) {
			if v != nil {
				*dst = *v
			}
		}
		set(&resp.Usage.InputTokens, u.InputTokens)
		set(&resp.Usage.OutputTokens, u.OutputTokens)
		set(&resp.Usage.CachedTokens, u.CachedTokens)
		set(&resp.Usage.ReasoningTokens, u.ReasoningTokens)
		if u.Cost != nil {
			c := *u.Cost
			resp.Usage.Cost = &c
		}
	}
	// The bodies a log shows: the provider-neutral request this provider received (what
	// --trace-requests writes) and the reply it made, as a real adapter's wire payloads would be.
	resp.RequestBody = req.TraceJSON()
	resp.ResponseBody, _ = json.Marshal(map[string]any{"text": resp.Text, "reasoning": resp.Reasoning,
		"tool_calls": resp.ToolCalls, "finish_reason": resp.FinishReason, "usage": resp.Usage, "script_entry": e.Index, "script": p.digest})
	return resp, nil
}

// streamer sends text in chunks and stops at the stall limit.
type streamer struct {
	ctx     context.Context
	onChunk func(weft.Chunk)
	size    int // runes per chunk, 0 = whole text
	limit   int // chunks before the stall, -1 = no stall
	sent    int
	clock   weft.Clock    // waits the delay
	delay   time.Duration // between two chunks
}

// send streams s as text or reasoning chunks; it stops quietly at the stall limit.
func (st *streamer) send(s string, reasoning bool) error {
	for s != "" {
		if st.limit >= 0 && st.sent >= st.limit {
			return nil
		}
		if err := st.ctx.Err(); err != nil {
			return cancelled(err)
		}
		if st.sent > 0 && st.delay > 0 {
			if err := st.clock.Sleep(st.ctx, st.delay); err != nil {
				return cancelled(err)
			}
		}
		piece := s
		if st.size > 0 {
			piece = runePrefix(s, st.size)
		}
		s = s[len(piece):]
		if st.onChunk != nil {
			if reasoning {
				st.onChunk(weft.Chunk{Reasoning: piece})
			} else {
				st.onChunk(weft.Chunk{Text: piece})
			}
		}
		st.sent++
	}
	return nil
}

// runePrefix returns the first n runes of s.
func runePrefix(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// Usage is the default token estimate: ⌈chars/4⌉ of the request's message texts for input and of
// the reply's text, tool names and arguments for output (chars counted in runes).
func Usage(req *weft.Request, text string, calls []weft.ToolCall) weft.Usage {
	in := 0
	if req != nil {
		for i := range req.Messages {
			m := &req.Messages[i]
			if len(m.Parts) == 0 {
				in += utf8.RuneCountInString(m.Content)
				continue
			}
			for _, part := range m.Parts {
				if part.Type == weft.PartText {
					in += utf8.RuneCountInString(part.Text)
				}
			}
		}
	}
	out := utf8.RuneCountInString(text)
	for _, c := range calls {
		out += utf8.RuneCountInString(c.Name) + utf8.RuneCountInString(c.Arguments)
	}
	return weft.Usage{InputTokens: (in + 3) / 4, OutputTokens: (out + 3) / 4}
}

func cancelled(err error) error { return fmt.Errorf("scripted: call cancelled: %w", err) }

// virtualClock is the clock of a script without real_time: Sleep returns at once and moves Now
// forward by the time slept (summed over all sleepers).
type virtualClock struct {
	offset atomic.Int64
}

// Now returns the real time plus every duration slept so far.
func (c *virtualClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Sleep advances the clock by d without waiting; it fails only when ctx is done.
func (c *virtualClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d > 0 {
		c.offset.Add(int64(d))
	}
	return nil
}
