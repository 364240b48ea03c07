// Package modelcall builds a run's provider requests and makes its calls to the model.
//
// A request is built from the stored rows a step sees (Requests): turned to the acting side's
// perspective with their attachments, between the system prompt and the template's messages,
// calls paired with their results, through the hooks of the request's points. A call (Caller)
// fits each attempt's request to the model (its window, capabilities, options, timeouts, API key,
// the last-line redaction of secrets), calls the provider under the first-chunk, stall and total
// timeouts with its streamed chunks redacted and emitted, retries with backoff, falls back to
// other models, learns a context limit from a refusal, and asks again when a prompt rejects the
// reply (no tool call although one is required, a structured answer that does not parse). Every
// attempt gets a log row; the caller stores the rows.
//
// A Caller and its Requests belong to one run and are used on its goroutine; Models is what every
// run's calls share. The run is reached through Run, a handful of methods: its events, its mailbox
// and its interruption by a new message.
package modelcall

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/payload"
	"github.com/weft-agents/weft/engine/redact"
	"github.com/weft-agents/weft/engine/vars"
)

// Run is what a model call needs of the run that makes it. Its methods are called on the run's
// goroutine, except Observed and Emit, which a provider's chunks may call from the goroutine that
// reads them.
type Run interface {
	// Observed tells whether events are wanted; Emit is called only when they are.
	Observed() bool
	// Emit emits an event of the run's thread.
	Emit(typ string, data payload.Payload)
	// FlushEvents records the events waiting before the call blocks; its error is the store's.
	FlushEvents() error
	// Sync applies what the run's tools posted meanwhile: the redactor may change.
	Sync()
	// Interruptible registers cancel as the cancellation of the run's top-level model call, or
	// unregisters it (nil); it returns false when a message already interrupts the run.
	Interruptible(cancel context.CancelCauseFunc) bool
	// Interrupting tells whether a message interrupts the run.
	Interrupting() bool
}

// ErrInterrupted is the cancellation cause of a model call that a message with
// weft.IfBusyInterrupt interrupted.
var ErrInterrupted = errors.New("interrupted by a new message")

// Scope is the part of a step's scope a model call reads.
type Scope struct {
	// Prompt is the prompt the step runs.
	Prompt *weft.Prompt
	// Provider is the provider of the prompt's model: a fallback of another provider cannot read
	// its verbatim blocks.
	Provider string
	// Side is the side acting.
	Side weft.Side
	// Depth is 0 for a top-level step, more for a sub-prompt's.
	Depth int
}

// Result is the outcome of a step's model call.
type Result struct {
	// Resp is the reply (nil when the call failed).
	Resp *weft.Response
	// Model is the model that replied.
	Model *weft.Model
	// Log is the log row of the attempt that replied.
	Log *weft.LogEntry
	// Structured is the parsed final answer of a prompt with an output schema.
	Structured any
	// Logs are the log rows of every attempt, the successful one last.
	Logs []*weft.LogEntry
}

// Caller makes one run's model calls. The zero Caller is unusable: Init sets one up.
type Caller struct {
	// m is what the engine's calls share.
	m *Models
	// run is the run making the calls; ctx its context.
	run Run
	ctx context.Context
	// threadID and runID are the run's, for the log rows.
	threadID, runID string
	// env and red point at the run's variables and redactor, which its mailbox may replace.
	env **vars.View
	red **redact.Redactor
	// lastLine counts the secrets the last-line pass found in requests.
	lastLine int
	// ends holds when each attempt ended until Record takes it; nil unless an observer wants
	// them (KeepEnds).
	ends map[*weft.LogEntry]time.Time
}

// Init sets up c, in place (a run holds its caller), as the caller of a run's model calls: env
// and red point at the run's own fields, read when a call needs them.
func (c *Caller) Init(m *Models, ctx context.Context, run Run, threadID, runID string, env **vars.View, red **redact.Redactor) {
	c.m, c.run, c.ctx, c.threadID, c.runID, c.env, c.red = m, run, ctx, threadID, runID, env, red
	c.lastLine, c.ends = 0, nil
}

// Redactions is the number of secrets the last-line pass found in the run's requests.
func (c *Caller) Redactions() int { return c.lastLine }

// KeepEnds makes the caller note when each attempt ends, for an observer (Record).
func (c *Caller) KeepEnds() { c.ends = map[*weft.LogEntry]time.Time{} }

// ForgetEnds forgets the attempts' ends not taken (their step was not stored).
func (c *Caller) ForgetEnds() { clear(c.ends) }

// attemptEnded notes when an attempt ended, when an observer wants it.
func (c *Caller) attemptEnded(l *weft.LogEntry) {
	if c.ends != nil {
		c.ends[l] = c.now()
	}
}

func (c *Caller) now() time.Time { return c.m.Clock.Now().UTC() }

// requiredNote is appended when a reply ignores toolChoice required.
const requiredNote = "You must respond by calling one of the available tools."

// Call performs a step's model call: retries, fallbacks, the toolChoice required loop and the
// structured answer's. Every attempt gets a log row; the rows are returned for the step's
// transaction, also with an error. The result is never nil.
func (c *Caller) Call(s Scope, req *weft.Request, messageID string) (*Result, error) {
	enforce := req.ToolChoice == weft.ToolChoiceRequired && len(req.Tools) > 0
	res := &Result{}
	for attempt := 1; ; attempt++ {
		resp, model, logs, err := c.withFallbacks(s, req, messageID)
		if res.Logs == nil {
			res.Logs = logs // the first attempt's rows: the usual case needs no copy
		} else {
			res.Logs = append(res.Logs, logs...)
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
			v, err := c.m.parseStructured(s.Prompt, resp.Text)
			if err != nil {
				last := logs[len(logs)-1]
				last.Error = "reply discarded: " + err.Error()
				if attempt >= structuredAttempts {
					return res, fmt.Errorf("no valid structured answer after %d attempts: %w", attempt, err)
				}
				req = withNote(req, structuredNote(err))
				continue
			}
			res.Structured = v
		}
		res.Resp, res.Model, res.Log = resp, model, logs[len(logs)-1]
		return res, nil
	}
}

func withNote(req *weft.Request, note string) *weft.Request {
	c := *req
	c.Messages = append(append([]weft.LLMMessage(nil), req.Messages...), weft.LLMMessage{Role: weft.RoleSystem, Content: note})
	return &c
}
