// Package runstate is a thread's persisted run state: which side acts next, each side's turns and
// context window, the stop flag and the counters a run keeps across steps, with the encoding every
// step's transaction writes (Encode, without reflection) and reads back (Decode, Load).
package runstate

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/vars"
	"github.com/weft-agents/weft/internal/jsonstr"
)

// State is a thread's persisted run state (the exec_state document under Key): the session's
// part common to both sides, and each side's own.
type State struct {
	// Stopped is the stop flag: nothing runs until a user message or continue.
	Stopped bool
	// Side is the side due to act next.
	Side weft.Side
	// Sides holds each side's state, A then B (SideIndex).
	Sides [2]SideState
	// ToolCalled records that the acting side called a tool in the current turn (toolChoice
	// required is enforced until it has).
	ToolCalled bool
	// QueuedTools numbers QueueTool calls (queued_<n> ids).
	QueuedTools int
	// Immediate lists the side:prompt pairs whose immediate subagents were started (once per thread).
	Immediate []string
	// Stops counts the thread's run stops; a subagent's reports are numbered by it.
	Stops int
}

// SideState is one side's part of the run state.
type SideState struct {
	// Turns counts the side's completed turns in the session.
	Turns int
	// Window is the seq of the last row of the side's previous completed turn: the side's window
	// is the rows after it.
	Window int64
	// Handler is a handler side's delivery watermark (seq of the last row given).
	Handler int64
	// Idle records that a handler side's last turn was idle.
	Idle bool
}

// stored is State as stored: the sides' fields paired under _a and _b names.
type stored struct {
	Stopped     bool      `json:"stopped,omitempty"`
	Side        weft.Side `json:"side"`
	TurnsA      int       `json:"turns_a"`
	TurnsB      int       `json:"turns_b"`
	WindowA     int64     `json:"window_a"`
	WindowB     int64     `json:"window_b"`
	ToolCalled  bool      `json:"tool_called,omitempty"`
	QueuedTools int       `json:"queued_tools,omitempty"`
	HandlerA    int64     `json:"handler_a,omitempty"`
	HandlerB    int64     `json:"handler_b,omitempty"`
	IdleA       bool      `json:"idle_a,omitempty"`
	IdleB       bool      `json:"idle_b,omitempty"`
	Immediate   []string  `json:"immediate,omitempty"`
	Stops       int       `json:"stops,omitempty"`
}

// doc returns the state in its stored form.
func (s *State) doc() stored {
	a, b := &s.Sides[0], &s.Sides[1]
	return stored{Stopped: s.Stopped, Side: s.Side, TurnsA: a.Turns, TurnsB: b.Turns, WindowA: a.Window, WindowB: b.Window,
		ToolCalled: s.ToolCalled, QueuedTools: s.QueuedTools, HandlerA: a.Handler, HandlerB: b.Handler, IdleA: a.Idle, IdleB: b.Idle,
		Immediate: s.Immediate, Stops: s.Stops}
}

// Decode reads a stored run state; nil raw is a new thread's (side A due).
func Decode(raw json.RawMessage) (State, error) {
	if raw == nil {
		return State{Side: weft.SideA}, nil
	}
	d := stored{Side: weft.SideA}
	if err := json.Unmarshal(raw, &d); err != nil {
		return State{Side: weft.SideA}, err
	}
	return State{Stopped: d.Stopped, Side: d.Side, ToolCalled: d.ToolCalled, QueuedTools: d.QueuedTools, Immediate: d.Immediate,
		Stops: d.Stops, Sides: [2]SideState{
			{Turns: d.TurnsA, Window: d.WindowA, Handler: d.HandlerA, Idle: d.IdleA},
			{Turns: d.TurnsB, Window: d.WindowB, Handler: d.HandlerB, Idle: d.IdleB},
		}}, nil
}

// Of returns side's own state.
func (s *State) Of(side weft.Side) *SideState { return &s.Sides[SideIndex(side)] }

// CompleteTurn counts a completed turn of side ending at seq.
func (s *State) CompleteTurn(side weft.Side, seq int64) {
	o := s.Of(side)
	o.Turns++
	o.Window = seq
	s.ToolCalled = false
}

// MinTurns is the turn count of the side that completed fewer turns in the session.
func (s *State) MinTurns() int { return min(s.Sides[0].Turns, s.Sides[1].Turns) }

// EndSession resets the session at seq: no turns counted, both windows start after seq, side A
// due next.
func (s *State) EndSession(seq int64) {
	for i := range s.Sides {
		s.Sides[i].Turns, s.Sides[i].Window = 0, seq
	}
	s.ToolCalled = false
	s.Side = weft.SideA
}

// SideIndex is side's index in State.Sides: 0 for A, 1 for B.
func SideIndex(s weft.Side) int {
	if s == weft.SideB {
		return 1
	}
	return 0
}

// Key is the run state's key among a thread's exec_state documents.
const Key = "run"

// Load reads a thread's run state from the store.
func Load(ctx context.Context, st weft.Store, threadID string) (State, error) {
	docs, err := st.ExecState(ctx, threadID)
	if err != nil {
		return State{}, err
	}
	s, err := Decode(docs[Key])
	if err != nil {
		return s, fmt.Errorf("thread %s: corrupt run state: %w", threadID, err)
	}
	return s, nil
}

// Read reads what a run of the thread starts from (as Store.BeginRun returns it) without taking
// its lease — for previews and checks, which run nothing: the thread, its run-state documents, its
// env layers, and its top-level rows when rows is true.
func Read(ctx context.Context, st weft.Store, threadID string, rows bool) (*weft.RunStart, error) {
	t, err := st.Thread(ctx, threadID)
	if err != nil {
		return nil, err
	}
	docs, err := st.ExecState(ctx, threadID)
	if err != nil {
		return nil, err
	}
	var msgs []weft.Message
	if rows {
		if msgs, err = st.Messages(ctx, threadID, weft.MessageQuery{Limit: -1}); err != nil {
			return nil, err
		}
	}
	thread, user, instance, err := vars.Load(ctx, st, threadID, t.UserID)
	if err != nil {
		return nil, err
	}
	return &weft.RunStart{Thread: t, ExecState: docs, Messages: msgs, ThreadEnv: thread, UserEnv: user, InstanceEnv: instance}, nil
}

// Encode is json.Marshal(s.doc()), written out: it runs in every step's transaction.
func (s *State) Encode() json.RawMessage {
	a, bs := &s.Sides[0], &s.Sides[1]
	b := make([]byte, 0, 128)
	b = append(b, '{')
	if s.Stopped {
		b = append(b, `"stopped":true,`...)
	}
	b = append(b, `"side":`...)
	b = jsonstr.AppendHTMLSafe(b, string(s.Side))
	b = append(b, `,"turns_a":`...)
	b = strconv.AppendInt(b, int64(a.Turns), 10)
	b = append(b, `,"turns_b":`...)
	b = strconv.AppendInt(b, int64(bs.Turns), 10)
	b = append(b, `,"window_a":`...)
	b = strconv.AppendInt(b, a.Window, 10)
	b = append(b, `,"window_b":`...)
	b = strconv.AppendInt(b, bs.Window, 10)
	if s.ToolCalled {
		b = append(b, `,"tool_called":true`...)
	}
	b = appendIntField(b, `,"queued_tools":`, int64(s.QueuedTools))
	b = appendIntField(b, `,"handler_a":`, a.Handler)
	b = appendIntField(b, `,"handler_b":`, bs.Handler)
	if a.Idle {
		b = append(b, `,"idle_a":true`...)
	}
	if bs.Idle {
		b = append(b, `,"idle_b":true`...)
	}
	if len(s.Immediate) > 0 {
		b = append(b, `,"immediate":[`...)
		for i, v := range s.Immediate {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonstr.AppendHTMLSafe(b, v)
		}
		b = append(b, ']')
	}
	b = appendIntField(b, `,"stops":`, int64(s.Stops))
	return append(b, '}')
}

// appendIntField appends an omitempty integer field.
func appendIntField(b []byte, key string, v int64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), v, 10)
}

// RenderSide is the side whose next step a render of prompt p shows in a thread of agent a whose
// next side is next: the side p drives (a human side due next means the AI side after the
// human's message).
func RenderSide(a *weft.Agent, next weft.Side, p string) weft.Side {
	if def := a.Side(next); def.Prompt != p {
		if other := next.Other(); a.Side(other).Prompt == p || !def.IsAI() {
			return other
		}
	}
	return next
}
