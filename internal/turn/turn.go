// Package turn reads one turn of a thread — what the run that takes a posted message does — from
// the thread's engine events, as a short list of protocol-neutral parts: text and reasoning
// deltas, complete texts, tool calls and their results, steps, usage and the end. The protocol
// adapters (openaiapi, aisdkapi, aguiapi) translate these parts; none of them reads engine
// events itself, and the engine knows none of them.
//
// Only the thread's own top level is read (depth 0): sub-prompts and subagents run inside a
// tool call, whose result is what the turn shows. Every text a part carries is already redacted
// (the engine redacts event payloads).
package turn

import (
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// Kind is the kind of a Part.
type Kind uint8

// The kinds of parts, in the order a step gives them.
const (
	// StepStart: a step of the run begins (Step).
	StepStart Kind = iota + 1
	// ReasoningDelta: more reasoning of the assistant message MessageID (Text); like its text,
	// what was not streamed comes as one delta when the message is stored.
	ReasoningDelta
	// TextDelta: more text of the assistant message MessageID (Text). A message's deltas add up
	// to its whole text: what was not streamed (a model that does not stream, a stream resumed
	// after its deltas passed) comes as one delta when the message is stored.
	TextDelta
	// TextEnd: the assistant message MessageID is complete; Text is its whole text.
	TextEnd
	// ToolCall: the assistant message MessageID calls the tool Name (CallID; Text = its JSON
	// arguments).
	ToolCall
	// ToolResult: the call CallID of Name returned Text (stored as the tool message MessageID);
	// Failed when its status is not ok.
	ToolResult
	// StepEnd: the step Step ended.
	StepEnd
	// End: the run stopped (Reason; Error when it failed; Interrupt when a new message
	// interrupted it). Usage holds the turn's token counts.
	End
)

// Interrupt says why a run stopped with weft.StopInterrupted: the engine's run_interrupted
// event and, for a rollback, the message_deleted events of the rows it removed.
type Interrupt struct {
	// By is the id of the queued message that interrupted the run.
	By string
	// Rollback is set when the stop also removed what the run had added (weft.IfBusyRollback).
	Rollback bool
	// Removed are the ids of the rows the rollback deleted (replies and tool results), in order.
	Removed []string
}

// Part is one thing the turn produced.
type Part struct {
	Kind      Kind
	MessageID string
	CallID    string
	Name      string
	Text      string
	Failed    bool
	Step      int
	Reason    weft.StopReason
	Error     string
	// RunID is the id of the run that stopped (End).
	RunID string
	// Interrupt is set on the End of a run that a new message interrupted.
	Interrupt *Interrupt
	// Seq is the cursor of the recorded event the part came from (0 for a delta): a client that
	// resumes after it misses nothing of what follows.
	Seq int64
}

// Usage counts the tokens of the model calls the turn made in its thread (sub-prompts
// included, subagents' own threads not).
type Usage struct {
	InputTokens, OutputTokens, CachedTokens, ReasoningTokens int
}

// Reader turns engine events into parts. Its zero value reads the first run to stop after the
// cursor it is fed from; set Input to the id of the posted message to read the run that takes it
// (a run that stops before taking it is skipped).
type Reader struct {
	// Input is the id of the posted message the turn answers ("" = any).
	Input string
	// Usage adds up the turn's model calls so far.
	Usage Usage
	// AfterInput gives nothing before the posted message Input is stored (reading a thread's
	// recorded events from its start).
	AfterInput bool
	// ResumeAt, when set, is the thread's newest event when a stream resumed: the deltas of a
	// model call that started before it are dropped (their beginning is gone), and the message
	// they belong to comes whole when it is stored. So a resumed turn repeats and loses nothing.
	ResumeAt int64
	// ThroughParked reads on through a run that stops awaiting approval (or a client tool's
	// result) to the run that goes on once the calls are answered: a stream resumed while that
	// run goes on shows the whole turn since the posted message.
	ThroughParked bool

	live    bool  // ResumeAt passed: a model call began after it
	pending *Part // a step start before the input was stored (AfterInput)

	seen  bool
	done  bool
	texts map[string]*message
	calls map[string]bool // the tool calls given
	intr  *Interrupt      // the run's run_interrupted and message_deleted events, for its End
}

// message is what the reader gave of one assistant message.
type message struct {
	text      string // the text given in deltas
	reasoning string // the reasoning given in deltas
	ended     bool
}

// Done reports that the turn's End was given.
func (r *Reader) Done() bool { return r.done }

// Read appends to out the parts one event gives.
func (r *Reader) Read(ev engine.Event, out []Part) []Part {
	if r.done {
		return out
	}
	if r.texts == nil {
		r.texts, r.calls = map[string]*message{}, map[string]bool{}
		r.live = r.ResumeAt == 0
	}
	if r.AfterInput && !r.seen {
		// The run's first step starts before it stores the message it takes: keep the start
		// until the message comes.
		switch d := ev.Data.(type) {
		case engine.StepStarted:
			if d.Depth == 0 {
				r.pending = &Part{Kind: StepStart, Step: d.Step, Seq: ev.Seq}
			}
		case engine.StepCompleted, engine.RunStopped:
			r.pending = nil
		case engine.MessageData:
			if d.Message.ID == r.Input {
				r.seen = true
				if r.pending != nil {
					out = append(out, *r.pending)
				}
			}
		}
		return out
	}
	switch d := ev.Data.(type) {
	case engine.ModelRequest:
		if ev.Seq > r.ResumeAt {
			r.live = true
		}
	case engine.StepStarted:
		if d.Depth == 0 {
			out = append(out, Part{Kind: StepStart, Step: d.Step, Seq: ev.Seq})
		}
	case engine.StepCompleted:
		if d.Depth == 0 {
			out = append(out, Part{Kind: StepEnd, Step: d.Step, Seq: ev.Seq})
		}
	case engine.Chunk:
		if d.Depth != 0 || d.Delta == "" || !r.live {
			break
		}
		m := r.message(d.MessageID)
		if m.ended {
			break
		}
		if ev.Type == "reasoning_chunk" {
			m.reasoning += d.Delta
			out = append(out, Part{Kind: ReasoningDelta, MessageID: d.MessageID, Text: d.Delta})
		} else if ev.Type == "message_chunk" {
			m.text += d.Delta
			out = append(out, Part{Kind: TextDelta, MessageID: d.MessageID, Text: d.Delta})
		}
	case engine.ModelResponse:
		if d.Status == "ok" {
			r.Usage.InputTokens += d.InputTokens
			r.Usage.OutputTokens += d.OutputTokens
		}
	case engine.MessageData:
		out = r.readMessage(&d.Message, ev.Seq, out)
	case engine.Fields:
		r.readFields(ev.Type, d)
	case engine.RunStopped:
		if r.Input != "" && !r.seen {
			break // a run that did not take the message: the next one does
		}
		if r.ThroughParked && d.Reason == weft.StopAwaitingApproval {
			break
		}
		r.done = true
		end := Part{Kind: End, Reason: d.Reason, Error: d.Error, RunID: d.RunID, Seq: ev.Seq}
		if d.Reason == weft.StopInterrupted {
			end.Interrupt = r.intr
			if end.Interrupt == nil {
				end.Interrupt = &Interrupt{}
			}
		}
		out = append(out, end)
	}
	return out
}

// readFields notes the events a stop for an interrupting message records before run_stopped:
// run_interrupted, then message_deleted per row a rollback removed.
func (r *Reader) readFields(typ string, d engine.Fields) {
	if r.Input != "" && !r.seen {
		return // a run that did not take the message
	}
	switch typ {
	case "run_interrupted":
		by, _ := d["message_id"].(string)
		rollback, _ := d["rollback"].(bool)
		r.intr = &Interrupt{By: by, Rollback: rollback}
	case "message_deleted":
		if id, _ := d["message_id"].(string); id != "" && r.intr != nil && r.intr.Rollback {
			r.intr.Removed = append(r.intr.Removed, id)
		}
	}
}

func (r *Reader) message(id string) *message {
	m := r.texts[id]
	if m == nil {
		m = &message{}
		r.texts[id] = m
	}
	return m
}

// readMessage gives a stored row: the posted message marks the turn's start; an assistant row
// completes its text and gives its calls; a tool row gives a result.
func (r *Reader) readMessage(msg *weft.Message, seq int64, out []Part) []Part {
	if msg.ID == r.Input {
		r.seen = true
		return out
	}
	if msg.Depth != 0 || msg.Silent {
		return out
	}
	switch msg.Role {
	case weft.RoleAssistant:
		if msg.Status != "" && msg.Status != weft.MessageCompleted {
			return out
		}
		m := r.message(msg.ID)
		if !m.ended {
			if rest, ok := strings.CutPrefix(msg.Reasoning, m.reasoning); ok && rest != "" {
				m.reasoning += rest
				out = append(out, Part{Kind: ReasoningDelta, MessageID: msg.ID, Text: rest, Seq: seq})
			}
			if rest, ok := strings.CutPrefix(msg.Content, m.text); ok && rest != "" {
				m.text += rest
				out = append(out, Part{Kind: TextDelta, MessageID: msg.ID, Text: rest, Seq: seq})
			}
			m.ended = true
			out = append(out, Part{Kind: TextEnd, MessageID: msg.ID, Text: msg.Content, Seq: seq})
		}
		for _, c := range msg.ToolCalls {
			if !r.calls[c.ID] {
				r.calls[c.ID] = true
				out = append(out, Part{Kind: ToolCall, MessageID: msg.ID, CallID: c.ID, Name: c.Name, Text: c.Arguments, Seq: seq})
			}
		}
	case weft.RoleTool:
		if msg.ToolCallID == "" || r.calls[msg.ToolCallID+"/result"] || msg.Status == weft.MessagePending {
			return out
		}
		r.calls[msg.ToolCallID+"/result"] = true
		out = append(out, Part{Kind: ToolResult, MessageID: msg.ID, CallID: msg.ToolCallID, Name: msg.Name, Text: msg.Content,
			Failed: msg.ToolStatus == weft.ToolError, Seq: seq})
	}
	return out
}
