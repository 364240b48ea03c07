package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

// Benchmarks shared by the back ends; each package wraps them in its own Benchmark functions.

// benchThread creates a thread holding 21 messages, as a short conversation with tool use.
func benchThread(b *testing.B, s weft.Store) string {
	b.Helper()
	th := &weft.Thread{Agent: "bench", UserID: "u1"}
	if err := s.CreateThread(b.Context(), th, nil); err != nil {
		b.Fatal(err)
	}
	err := s.Tx(b.Context(), th.ID, nil, func(tx weft.Tx) error {
		for i := range 21 {
			m := &weft.Message{Role: weft.RoleUser, Side: weft.SideA, Content: fmt.Sprintf("user message %d with some text in it", i), Status: weft.MessageCompleted}
			switch i % 3 {
			case 1:
				m.Role, m.ToolCalls = weft.RoleAssistant, []weft.ToolCall{{ID: fmt.Sprintf("call_%d", i), Name: "search", Arguments: `{"q":"weft"}`}}
			case 2:
				m.Role, m.ToolCallID, m.ToolStatus, m.Name = weft.RoleTool, fmt.Sprintf("call_%d", i-1), weft.ToolSuccess, "search"
			}
			if err := tx.InsertMessage(m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return th.ID
}

var benchBody = json.RawMessage(`{"model":"gpt-x","messages":[{"role":"user","content":"what is weft?"}],"tools":[{"name":"search"}]}`)

// stepTx is what one engine step commits: the assistant row with its tool call, the pending call,
// the log row of the model attempt and the step counters.
func stepTx(threadID string, n int) func(weft.Tx) error {
	return func(tx weft.Tx) error {
		callID := fmt.Sprintf("call_b%d", n)
		m := &weft.Message{Role: weft.RoleAssistant, Side: weft.SideA, Status: weft.MessageCompleted, Prompt: "main",
			Content: "Let me look that up.", ToolCalls: []weft.ToolCall{{ID: callID, Name: "search", Arguments: `{"q":"weft storage"}`}}}
		if err := tx.InsertMessage(m); err != nil {
			return err
		}
		if err := tx.PutToolCall(&weft.ToolCallRecord{CallID: callID, MessageID: m.ID, Name: "search", Arguments: `{"q":"weft storage"}`, Status: weft.CallPending}); err != nil {
			return err
		}
		if err := tx.PutLog(&weft.LogEntry{MessageID: m.ID, Kind: "llm", Provider: "scripted", Model: "m", Side: weft.SideA,
			StatusCode: 200, FinishReason: "tool_calls", IsComplete: true, InputTokens: 120, OutputTokens: 12, TotalTokens: 132,
			LatencyMS: 3, RequestBody: benchBody, ResponseBody: benchBody, ToolsOffered: []string{"search"}, ToolsCalled: []string{"search"}}); err != nil {
			return err
		}
		return tx.SetExecState("counters", json.RawMessage(`{"steps":3,"turns_a":1,"turns_b":0}`))
	}
}

// rotateEvery bounds a benchmark thread's growth: after this many iterations the thread is replaced
// (outside the timer) by a fresh one with 21 messages, so results do not drift with thread length
// or heap size.
const rotateEvery = 256

// rotate replaces the thread every rotateEvery iterations.
func rotate(b *testing.B, s weft.Store, id *string, i int) {
	if i == 0 || i%rotateEvery != 0 {
		return
	}
	b.StopTimer()
	if err := s.DeleteThread(b.Context(), *id); err != nil {
		b.Fatal(err)
	}
	*id = benchThread(b, s)
	b.StartTimer()
}

// StepTx measures one engine-step transaction on a thread that already holds 21 messages.
func StepTx(b *testing.B, s weft.Store) {
	id := benchThread(b, s)
	ctx := b.Context()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		rotate(b, s, &id, i)
		if err := s.Tx(ctx, id, nil, stepTx(id, i)); err != nil {
			b.Fatal(err)
		}
	}
}

// ToolTurn measures the four transactions of a tool turn: the step (assistant row + pending call +
// log + counters), the call running, the tool result with the call done, and the final assistant
// reply with its log and counters.
func ToolTurn(b *testing.B, s weft.Store) {
	id := benchThread(b, s)
	ctx := b.Context()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		rotate(b, s, &id, i)
		callID := fmt.Sprintf("call_b%d", i)
		if err := s.Tx(ctx, id, nil, stepTx(id, i)); err != nil {
			b.Fatal(err)
		}
		started := time.Now()
		call := &weft.ToolCallRecord{CallID: callID, Name: "search", Arguments: `{"q":"weft storage"}`, Status: weft.CallRunning, StartedAt: &started}
		if err := s.Tx(ctx, id, nil, func(tx weft.Tx) error { return tx.PutToolCall(call) }); err != nil {
			b.Fatal(err)
		}
		err := s.Tx(ctx, id, nil, func(tx weft.Tx) error {
			m := &weft.Message{Role: weft.RoleTool, Side: weft.SideA, Name: "search", ToolCallID: callID, ToolStatus: weft.ToolSuccess,
				Status: weft.MessageCompleted, Content: `{"results":["weft is a runtime for agents"]}`}
			if err := tx.InsertMessage(m); err != nil {
				return err
			}
			finished := time.Now()
			call.Status, call.ResultMessageID, call.FinishedAt = weft.CallDone, m.ID, &finished
			return tx.PutToolCall(call)
		})
		if err != nil {
			b.Fatal(err)
		}
		err = s.Tx(ctx, id, nil, func(tx weft.Tx) error {
			m := &weft.Message{Role: weft.RoleAssistant, Side: weft.SideA, Status: weft.MessageCompleted, Prompt: "main",
				Content: "Weft is a runtime for AI agents."}
			if err := tx.InsertMessage(m); err != nil {
				return err
			}
			if err := tx.PutLog(&weft.LogEntry{MessageID: m.ID, Kind: "llm", Provider: "scripted", Model: "m", Side: weft.SideA,
				StatusCode: 200, FinishReason: "stop", IsComplete: true, InputTokens: 150, OutputTokens: 9, TotalTokens: 159,
				LatencyMS: 2, RequestBody: benchBody, ResponseBody: benchBody}); err != nil {
				return err
			}
			return tx.SetExecState("counters", json.RawMessage(`{"steps":4,"turns_a":2,"turns_b":0}`))
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// MessagesContext measures loading a 21-message thread's top-level rows (limit 100), as the engine
// does to build a model request.
func MessagesContext(b *testing.B, s weft.Store) {
	id := benchThread(b, s)
	ctx := b.Context()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ms, err := s.Messages(ctx, id, weft.MessageQuery{Limit: 100})
		if err != nil || len(ms) != 21 {
			b.Fatalf("%d messages, %v", len(ms), err)
		}
	}
}

// BeginRun measures starting a run on a thread holding 21 messages, an empty queue and two env
// values (one of the thread, one of its user). The lease is taken with a 1 ns TTL, so each iteration
// takes over the previous one's expired lease: the same path as taking a released one.
func BeginRun(b *testing.B, s weft.Store) {
	id := benchThread(b, s)
	ctx := b.Context()
	th, err := s.Thread(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.SetEnv(ctx, weft.EnvThread, id, []weft.EnvValue{{Name: "TOKEN", Value: "sk-thread-secret"}}); err != nil {
		b.Fatal(err)
	}
	if err := s.SetEnv(ctx, weft.EnvUser, th.UserID, []weft.EnvValue{{Name: "REGION", Value: "eu", Type: weft.VarText}}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_, rs, err := s.BeginRun(ctx, id, "bench", time.Nanosecond, nil)
		if err != nil || len(rs.Messages)+len(rs.Rows) != 21 || len(rs.ThreadEnv)+len(rs.UserEnv) != 2 {
			b.Fatalf("BeginRun: %v", err)
		}
	}
}
