package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/dispatch"
	"github.com/weft-agents/weft/engine/payload"
	"github.com/weft-agents/weft/engine/redact"
)

// fakeScope is a top-level scope offering the tools in tools; approve lists those whose calls
// wait for a decision, idempotent those that may run again.
type fakeScope struct {
	approve, idempotent map[string]bool
}

func (s *fakeScope) Depth() int                     { return 0 }
func (s *fakeScope) Side() weft.Side                { return weft.SideA }
func (s *fakeScope) ParentID() string               { return "" }
func (s *fakeScope) NeedsApproval(name string) bool { return s.approve[name] }
func (s *fakeScope) Idempotent(name string) bool    { return s.idempotent[name] }
func (s *fakeScope) Nest(*weft.Message)             {}
func (s *fakeScope) offers(name string) (ok bool)   { return name != "missing" }
func (s *fakeScope) result(c weft.ToolCall) weft.ToolResult {
	return weft.Success("ran " + c.Name + " " + c.Arguments)
}

// fakeTx records what a transaction writes; writes the test does not expect panic (nil Tx).
type fakeTx struct {
	weft.Tx
	r *fakeRun
}

func (tx fakeTx) PutToolCall(rec *weft.ToolCallRecord) error {
	tx.r.writes = append(tx.r.writes, fmt.Sprintf("call %s %s", rec.CallID, rec.Status))
	return nil
}

func (tx fakeTx) InsertMessage(m *weft.Message) error {
	if m.ID == "" {
		m.ID = weft.NewID("msg_")
	}
	tx.r.writes = append(tx.r.writes, fmt.Sprintf("message %s %s", m.ToolCallID, m.Content))
	return nil
}

// fakeRun is a run whose tools answer with their name and arguments (fakeScope.result).
type fakeRun struct {
	writes  []string
	ran     []string
	events  []string
	rows    []*weft.Message
	stored  []weft.ToolCallRecord
	stopped bool
}

func (r *fakeRun) Now() time.Time             { return time.Unix(1000, 0) }
func (r *fakeRun) RunID() string              { return "run_1" }
func (r *fakeRun) ThreadID() string           { return "thr_1" }
func (r *fakeRun) Redactor() *redact.Redactor { return &redact.Redactor{} }
func (r *fakeRun) Stopping() bool             { return r.stopped }
func (r *fakeRun) Interrupting() bool         { return false }
func (r *fakeRun) Suspended() error           { return nil }
func (r *fakeRun) CanStartAtOnce(dispatch.Scope) bool {
	return false
}
func (r *fakeRun) CanAwait() bool { return true }
func (r *fakeRun) Sync()          {}
func (r *fakeRun) Prepare(s dispatch.Scope, c weft.ToolCall, rawOK bool) (dispatch.Prepared, string) {
	if !s.(*fakeScope).offers(c.Name) {
		return dispatch.Prepared{}, fmt.Sprintf("Tool %q is not available", c.Name)
	}
	var args map[string]any
	_ = json.Unmarshal([]byte(c.Arguments), &args)
	return dispatch.Prepared{Tool: c.Name, Args: args}, ""
}
func (r *fakeRun) Invoke(ctx context.Context, s dispatch.Scope, p dispatch.Prepared, c weft.ToolCall, msg *weft.Message, resultID string, started bool) (weft.ToolResult, bool, bool, error) {
	r.ran = append(r.ran, c.ID)
	return s.(*fakeScope).result(c), false, false, nil
}
func (r *fakeRun) StartTool(dispatch.Scope, weft.ToolCall, bool) context.Context {
	return context.Background()
}
func (r *fakeRun) EndTool(bool, weft.ToolStatus, string) {}
func (r *fakeRun) SessionTool(dispatch.Scope, string) (*weft.SessionTool, bool) {
	return nil, false
}
func (r *fakeRun) ReportStatus(string) {}
func (r *fakeRun) QueuedCall(s dispatch.Scope, name string, args json.RawMessage) (weft.ToolCall, weft.ToolResult) {
	c := weft.ToolCall{ID: "queued_1", Name: name, Arguments: string(args)}
	return c, s.(*fakeScope).result(c)
}
func (r *fakeRun) Tx(fn func(weft.Tx) error) error { return fn(fakeTx{r: r}) }
func (r *fakeRun) StoreQueued(m *weft.Message) error {
	return fakeTx{r: r}.InsertMessage(m)
}
func (r *fakeRun) Insert(tx weft.Tx, m *weft.Message) error   { return tx.InsertMessage(m) }
func (r *fakeRun) StageMessage(*weft.Message)                 {}
func (r *fakeRun) Stage(string, payload.Payload)              {}
func (r *fakeRun) BeforeInsert(dispatch.Scope, *weft.Message) {}
func (r *fakeRun) AfterInsert(dispatch.Scope, *weft.Message)  {}
func (r *fakeRun) StatFile(string) (weft.FileInfo, error) {
	return weft.FileInfo{}, errors.New("no files")
}
func (r *fakeRun) AddRow(m *weft.Message)       { r.rows = append(r.rows, m) }
func (r *fakeRun) ReplaceRow(*weft.Message)     {}
func (r *fakeRun) DeleteRow(string)             {}
func (r *fakeRun) Observed() bool               { return true }
func (r *fakeRun) EmitUnrecorded(*weft.Message) {}
func (r *fakeRun) Emit(kind string, _ payload.Payload) {
	r.events = append(r.events, kind)
}
func (r *fakeRun) Kept() dispatch.Kept { return kept{} }
func (r *fakeRun) Reattach(context.Context, dispatch.Scope, weft.ToolCallRecord, weft.ToolCall) (weft.ToolResult, string, bool) {
	return weft.ToolResult{}, "", false
}
func (r *fakeRun) ResumeSubPrompt(dispatch.Scope, *weft.Message, weft.ToolCallRecord, weft.ToolCall) (weft.ToolResult, string, string, bool) {
	return weft.ToolResult{}, "", "", false
}
func (r *fakeRun) ParkedCallers(dispatch.Scope) []*weft.ToolCallRecord { return nil }
func (r *fakeRun) StoredCalls() ([]weft.ToolCallRecord, error)         { return r.stored, nil }
func (r *fakeRun) Rows() []*weft.Message                               { return r.rows }

func reply(calls ...weft.ToolCall) *weft.Message {
	return &weft.Message{ID: "msg_reply", Role: weft.RoleAssistant, Side: weft.SideA, Status: weft.MessageCompleted, ToolCalls: calls}
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// TestDispatcherExecute: a reply's calls run one at a time in order, each result stored with its
// record done and the next call marked running in one transaction; an idempotent call stays
// pending; a call of a tool not offered is answered without running.
func TestDispatcherExecute(t *testing.T) {
	r := &fakeRun{}
	var d dispatch.Dispatcher
	d.Bind(r)
	s := &fakeScope{idempotent: map[string]bool{"read": true}}
	calls := []weft.ToolCall{{ID: "c1", Name: "add", Arguments: `{"a":1}`}, {ID: "c2", Name: "missing", Arguments: `{}`},
		{ID: "c3", Name: "read", Arguments: `{}`}}
	res, err := d.Execute(s, reply(calls...), calls)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "ran", r.ran, []string{"c1", "c3"})
	equal(t, "writes", r.writes, []string{
		`message c1 ran add {"a":1}`, "call c2 running", "call c1 done",
		`message c2 Failed to execute tool: Tool "missing" is not available`, "call c2 done",
		"message c3 ran read {}", "call c3 done"})
	if len(res) != 3 || res[0].Msg == nil || res[0].Arg("a") != 1.0 || res[1].Result.Status != weft.ToolError {
		t.Fatalf("results = %+v", res)
	}
	equal(t, "events", r.events, []string{"tool_completed", "tool_completed", "tool_completed"})
	if len(r.rows) != 3 {
		t.Fatalf("rows = %d, want 3", len(r.rows))
	}
}

// TestDispatcherApproval: a call that needs approval parks the run, its record awaiting approval;
// once approved with edited arguments it runs with them, marked running first; a denied call is
// answered without running.
func TestDispatcherApproval(t *testing.T) {
	r := &fakeRun{}
	var d dispatch.Dispatcher
	d.Bind(r)
	s := &fakeScope{approve: map[string]bool{"rm": true}}
	calls := []weft.ToolCall{{ID: "c1", Name: "rm", Arguments: `{"p":"a"}`}, {ID: "c2", Name: "rm", Arguments: `{"p":"b"}`}}
	msg := reply(calls...)
	if _, err := d.Execute(s, msg, calls); !errors.Is(err, dispatch.ErrAwaitApproval) {
		t.Fatalf("err = %v, want ErrAwaitApproval", err)
	}
	equal(t, "writes", r.writes, []string{"call c1 awaiting_approval", "call c2 awaiting_approval"})
	equal(t, "events", r.events, []string{"approval_required", "approval_required"})
	for i, d0 := range []dispatch.Decision{{Approve: true, Arguments: json.RawMessage(`{"p":"edited"}`)}, {Reason: "no"}} {
		rec := d.Calls.Of(calls[i], msg.ID)
		up, _, err := dispatch.DecideCall(rec, d0.State(r.Now()), []weft.ToolCallRecord{*rec})
		if err != nil {
			t.Fatal(err)
		}
		d.Calls.Note(&up)
	}
	r.writes, r.events = nil, nil
	res, err := d.Execute(s, msg, calls)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "ran", r.ran, []string{"c1"})
	equal(t, "writes", r.writes, []string{"call c1 running", `message c1 ran rm {"p":"edited"}`, "call c1 done",
		"message c2 Failed to execute tool: denied: no", "call c2 done"})
	if res[0].Call.Arguments != `{"p":"edited"}` {
		t.Fatalf("approved call ran with %s", res[0].Call.Arguments)
	}
}

// TestDispatcherResume: of a reply a crash left open, a stored result is not run again, a running
// call of a tool that is not idempotent is answered as interrupted, and a pending one runs.
func TestDispatcherResume(t *testing.T) {
	calls := []weft.ToolCall{{ID: "c1", Name: "add"}, {ID: "c2", Name: "send"}, {ID: "c3", Name: "add"}}
	msg := reply(calls...)
	r := &fakeRun{rows: []*weft.Message{msg, {Role: weft.RoleTool, ToolCallID: "c1", Status: weft.MessageCompleted}},
		stored: []weft.ToolCallRecord{{CallID: "c1", Status: weft.CallDone}, {CallID: "c2", Status: weft.CallRunning}, {CallID: "c3", Status: weft.CallPending}}}
	var d dispatch.Dispatcher
	d.Bind(r)
	s := &fakeScope{}
	resumed, err := d.Resume(func(*weft.Message) (dispatch.Scope, bool, error) { return s, true, nil })
	if err != nil || !resumed {
		t.Fatalf("resumed %v, err %v", resumed, err)
	}
	equal(t, "ran", r.ran, []string{"c3"})
	equal(t, "writes", r.writes, []string{"message c2 Failed to execute tool: " + dispatch.InterruptedResult, "call c3 running", "call c2 done",
		"message c3 ran add", "call c3 done"})
}

// TestDispatcherStopRows: a user's stop answers the open calls, fails the pending messages and
// stores the notice, in row order.
func TestDispatcherStopRows(t *testing.T) {
	calls := []weft.ToolCall{{ID: "c1", Name: "add"}, {ID: "c2", Name: "add"}}
	r := &fakeRun{rows: []*weft.Message{reply(calls...), {Role: weft.RoleTool, ToolCallID: "c1", Status: weft.MessageCompleted}}}
	var d dispatch.Dispatcher
	d.Bind(r)
	rows, err := d.StopRows(fakeTx{r: r})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "writes", r.writes, []string{"message c2 Failed to execute tool: Execution stopped by user", "call c2 done",
		"message  Execution stopped by user."})
	if len(rows) != 2 || rows[1].Role != weft.RoleSystem {
		t.Fatalf("rows = %+v", rows)
	}
}

// TestStopToolDone: the side's last top-level reply called its stop tool, whose result succeeded.
func TestStopToolDone(t *testing.T) {
	done := reply(weft.ToolCall{ID: "c1", Name: "finish"})
	ok := &weft.Message{Role: weft.RoleTool, ToolCallID: "c1", ToolStatus: weft.ToolSuccess}
	failed := &weft.Message{Role: weft.RoleTool, ToolCallID: "c1", ToolStatus: weft.ToolError}
	for _, tc := range []struct {
		name string
		rows []*weft.Message
		side weft.Side
		tool string
		want bool
	}{
		{"stop tool succeeded", []*weft.Message{done, ok}, weft.SideA, "finish", true},
		{"stop tool failed", []*weft.Message{done, failed}, weft.SideA, "finish", false},
		{"another side", []*weft.Message{done, ok}, weft.SideB, "finish", false},
		{"no stop tool", []*weft.Message{done, ok}, weft.SideA, "", false},
		{"not its stop tool", []*weft.Message{done, ok}, weft.SideA, "other", false},
		{"no reply", []*weft.Message{ok}, weft.SideA, "finish", false},
	} {
		if got := dispatch.StopToolDone(tc.rows, tc.side, tc.tool); got != tc.want {
			t.Errorf("%s: StopToolDone = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// kept keeps nothing: no store fails in these tests.
type kept struct{}

func (kept) KeepResult(string, string, weft.ToolResult) {}
func (kept) KeepNotRun(string, string)                  {}
func (kept) TakeResult(string, string) (weft.ToolResult, bool, bool) {
	return weft.ToolResult{}, false, false
}
