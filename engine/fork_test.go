package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/weft-agents/weft/validate"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/internal/pgtest"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/schema"
	"github.com/weft-agents/weft/sqlite"
)

// forkModel answers from the history it is sent, and records every request of the coordinating
// agent as lines (`role: text [calls] (call id)`), so that a test can compare what two runs saw.
type forkModel struct {
	mu       sync.Mutex
	requests [][]string
	gate     chan struct{} // the subagent's verdict waits for it
}

func (m *forkModel) provider() weft.Provider {
	return weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		if req.Agent == "review" {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: weft.NewID("call_"), Name: "approve", Arguments: `{"summary":"fine"}`}}}, nil
		}
		lines := requestLines(req)
		m.mu.Lock()
		m.requests = append(m.requests, lines)
		m.mu.Unlock()
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == weft.RoleUser && strings.Contains(last.Text(), "look"):
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: weft.NewID("call_"), Name: "look", Arguments: `{"at":"a"}`},
				{ID: weft.NewID("call_"), Name: "look", Arguments: `{"at":"b"}`}}}, nil
		case last.Role == weft.RoleUser && strings.Contains(last.Text(), "review"):
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: weft.NewID("call_"), Name: "review", Arguments: `{"message":"Draft"}`}}}, nil
		}
		return &weft.Response{Text: fmt.Sprintf("answer %d to %s %q", len(req.Messages), last.Role, last.Text())}, nil
	})
}

func requestLines(req *weft.Request) []string {
	var out []string
	for _, msg := range req.Messages {
		line := string(msg.Role) + ": " + msg.Text()
		for _, c := range msg.ToolCalls {
			line += " [" + c.ID + " " + c.Name + " " + c.Arguments + "]"
		}
		if msg.ToolCallID != "" {
			line += " (" + msg.ToolCallID + ")"
		}
		out = append(out, line)
	}
	return out
}

// count returns how many requests were recorded; request the i-th (from 0).
func (m *forkModel) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

func (m *forkModel) request(i int) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i >= len(m.requests) {
		return nil
	}
	return m.requests[i]
}

// last returns the newest recorded request.
func (m *forkModel) last() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests[len(m.requests)-1]
}

// forkWorld is an agent with a tool (look) and a non-blocking subagent (review), on a recording
// engine over memstore.
func forkWorld(t *testing.T, open func(t *testing.T) weft.Store) (*engine.Engine, weft.Store, *forkModel) {
	t.Helper()
	blocking := false
	reg := subagentRegistry(weft.ToolEntry{Blocking: &blocking}, nil)
	reg.AddTool(&weft.Tool{Name: "look", Description: "Looks.", Args: schema.Object(schema.Field("at", schema.String())),
		Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
			var a struct{ At string }
			_ = json.Unmarshal(args, &a)
			return weft.Success("saw " + a.At), nil
		})})
	p, _ := reg.Prompt("assistant")
	p.Tools = append(p.Tools, weft.ToolEntry{Name: "look"})
	m := &forkModel{gate: make(chan struct{})}
	approve, _ := reg.Tool("approve")
	ok := approve.Execute
	approve.Execute = weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
		<-m.gate
		return ok.Call(ctx, st, args)
	})
	if diags := validate.Registry(reg); diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	st := open(t)
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: m.provider(), RecordEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	return eng, st, m
}

// snapshot is everything of a thread a fork must leave as it was, as JSON.
func snapshot(t *testing.T, st weft.Store, id string) string {
	t.Helper()
	ctx := context.Background()
	th, err := st.Thread(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := st.Messages(ctx, id, weft.MessageQuery{Limit: -1, MaxDepth: 100})
	calls, _ := st.ToolCalls(ctx, id)
	evs, _ := st.Events(ctx, id, 0, 0)
	logs, _ := st.Logs(ctx, id, weft.LogQuery{})
	kv, _ := st.ListKV(ctx, id)
	files, _ := st.Files().Find(ctx, id, "**")
	kids, _, _ := st.Threads(ctx, weft.ThreadQuery{ParentID: id})
	b, err := json.Marshal([]any{th, msgs, calls, evs, logs, kv, files, kids})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// forkStores are the stores the fork tests run on: memstore, SQLite, and PostgreSQL when
// WEFT_TEST_POSTGRES_URL is set.
var forkStores = []struct {
	name string
	open func(t *testing.T) weft.Store
}{
	{"memstore", func(t *testing.T) weft.Store {
		st, err := memstore.New(memstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
	{"sqlite", func(t *testing.T) weft.Store {
		st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "weft.db"), sqlite.Options{Key: make([]byte, 32)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
	{"postgres", func(t *testing.T) weft.Store {
		_, dsn := pgtest.Schema(t)
		return openPostgres(t, dsn)
	}},
}

// TestForkRunsOnFromItsHistory forks a thread at each kind of message and runs each fork: the
// model is sent exactly what the original sent it at that point, and the original does not change.
func TestForkRunsOnFromItsHistory(t *testing.T) {
	for _, s := range forkStores {
		t.Run(s.name, func(t *testing.T) { testForkRunsOn(t, s.open) })
	}
}

func testForkRunsOn(t *testing.T, open func(t *testing.T) weft.Store) {
	ctx := context.Background()
	eng, st, m := forkWorld(t, open)
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant", UserID: "alice", Env: map[string]string{"TOKEN": "s3cret"},
		Label: "orders", Tags: []string{"ai-sdk-chat:c1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
		if err := tx.SetKV("notes", json.RawMessage(`{"n":1}`)); err != nil {
			return err
		}
		return tx.WriteFile(&weft.FileInfo{Path: "/docs/plan.txt", MimeType: "text/plain"}, []byte("the plan"))
	}); err != nil {
		t.Fatal(err)
	}
	ask := func(text string) {
		t.Helper()
		if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Role: weft.RoleUser, Content: text}}); err != nil {
			t.Fatal(err)
		}
	}
	ask("please look")
	afterTools := m.last() // the request after both results
	// The review's verdict waits until the parent's run has stopped, so that its report starts a
	// run of its own (Ask would wait for the report).
	if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Role: weft.RoleUser, Content: "please review"}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Run(ctx, th.ID); err != nil {
		t.Fatal(err)
	}
	close(m.gate)
	eng.Wait()
	ask("that is all")
	afterFinal := m.last()

	rows, err := st.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	find := func(ok func(weft.Message) bool) weft.Message {
		t.Helper()
		for _, r := range rows {
			if ok(r) {
				return r
			}
		}
		t.Fatalf("no such row in %+v", rows)
		return weft.Message{}
	}
	lookCall := find(func(r weft.Message) bool { return len(r.ToolCalls) == 2 })
	firstResult := find(func(r weft.Message) bool { return r.Role == weft.RoleTool && r.Content == "saw a" })
	review := find(func(r weft.Message) bool { return r.Role == weft.RoleUser && r.Content == "please review" })
	report := find(func(r weft.Message) bool { return r.Role == weft.RoleUser && r.Metadata["subagent_id"] != nil })
	final := find(func(r weft.Message) bool { return r.Role == weft.RoleUser && r.Content == "that is all" })
	reportAnswer := rows[slices.IndexFunc(rows, func(r weft.Message) bool { return r.ID == report.ID })+1]
	if reportAnswer.Role != weft.RoleAssistant {
		t.Fatalf("the report's answer: %+v", reportAnswer)
	}
	// What the model was sent when it answered each of them in the original.
	requestAfter := func(id string) []string {
		t.Helper()
		m.mu.Lock()
		defer m.mu.Unlock()
		var want string
		for _, r := range rows {
			if r.ID == id {
				want = string(r.Role) + ": " + r.Content
			}
		}
		for _, req := range m.requests {
			if strings.HasPrefix(req[len(req)-1], want) {
				return req
			}
		}
		t.Fatalf("no request ends with %q", want)
		return nil
	}
	before := snapshot(t, st, th.ID)
	child := childOf(t, &harness{store: st}, th.ID)
	childBefore := snapshot(t, st, child.ID)

	cases := []struct {
		name   string
		at     weft.Message
		before bool
		want   []string
	}{
		{"user_message", review, false, requestAfter(review.ID)},
		{"assistant_with_tool_calls", lookCall, false, afterTools},
		{"tool_result", firstResult, false, afterTools},
		{"subagent_report", report, false, requestAfter(report.ID)},
		{"retry_before_assistant", reportAnswer, true, requestAfter(report.ID)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fork := eng.Fork
			if tc.before {
				fork = eng.ForkBefore
			}
			f, err := fork(ctx, th.ID, tc.at.ID, "bob")
			if err != nil {
				t.Fatal(err)
			}
			if f.UserID != "bob" || f.ForkedFrom == nil || f.ForkedFrom.Thread != th.ID || f.ForkedFrom.Message != tc.at.ID ||
				f.ForkedFrom.Before != tc.before || f.ParentID != "" || f.RootID != f.ID || f.Label != "orders" || len(f.Tags) != 0 {
				t.Fatalf("fork: %+v (forked_from %+v)", f, f.ForkedFrom)
			}
			if kids, _, _ := st.Threads(ctx, weft.ThreadQuery{ParentID: f.ID}); len(kids) != 0 {
				t.Errorf("fork's children: %d", len(kids))
			}
			first := m.count()
			if _, err := eng.Continue(ctx, f.ID, ""); err != nil {
				t.Fatal(err)
			}
			eng.Wait()
			if got := m.request(first); !slices.Equal(got, tc.want) {
				t.Errorf("the fork's model was sent:\n%s\nwant what the original's was:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			// It has the original's env, KV and files.
			env, _ := st.Env(ctx, weft.EnvThread, f.ID)
			if len(env) != 1 || env[0].Name != "TOKEN" || env[0].Value != "s3cret" {
				t.Errorf("fork's env: %+v", env)
			}
			if v, ok, _ := st.GetKV(ctx, f.ID, "notes"); !ok || string(v) != `{"n":1}` {
				t.Errorf("fork's KV: %s", v)
			}
			if b, err := st.Files().ReadFile(ctx, f.ID, "/docs/plan.txt"); err != nil || string(b) != "the plan" {
				t.Errorf("fork's file: %q %v", b, err)
			}
			evs, _ := st.Events(ctx, f.ID, 0, 1)
			if len(evs) != 1 || evs[0].Type != "thread_forked" || !strings.Contains(string(evs[0].Data), th.ID) {
				t.Errorf("fork's first event: %+v", evs)
			}
			// Every copied call has its record, done, with its result in the fork.
			calls, _ := st.ToolCalls(ctx, f.ID)
			for _, c := range calls {
				if c.Status != weft.CallDone {
					t.Errorf("fork's call %s is %s", c.CallID, c.Status)
				}
				if _, err := st.Message(ctx, f.ID, c.ResultMessageID); err != nil {
					t.Errorf("fork's call %s: result %s: %v", c.CallID, c.ResultMessageID, err)
				}
			}
		})
	}

	t.Run("edit_user_message", func(t *testing.T) {
		f, err := eng.ForkBefore(ctx, th.ID, final.ID, "alice")
		if err != nil {
			t.Fatal(err)
		}
		first := m.count()
		if _, err := eng.Ask(ctx, f.ID, engine.Input{Message: &weft.NewMessage{Role: weft.RoleUser, Content: "that is not all"}}); err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(afterFinal)
		want[len(want)-1] = "user: that is not all"
		if got := m.request(first); !slices.Equal(got, want) {
			t.Errorf("the edited fork's model was sent:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})

	if after := snapshot(t, st, th.ID); after != before {
		t.Errorf("the original changed:\nbefore %s\nafter  %s", before, after)
	}
	if after := snapshot(t, st, child.ID); after != childBefore {
		t.Errorf("the original's subagent changed")
	}
	forks, n, err := st.Threads(ctx, weft.ThreadQuery{ForkedFrom: th.ID})
	if err != nil || n != len(cases)+1 || len(forks) != n {
		t.Errorf("forks of the original: %d, %v", n, err)
	}
}

// TestForkAnswersOpenCalls: a fork at a reply whose calls wait for approval holds an error result
// for each (the fork never runs them), and the model of the fork reads it; the original still waits.
func TestForkAnswersOpenCalls(t *testing.T) {
	ctx := context.Background()
	w := &approvalWorld{calls: []weft.ToolCall{call("c1", "lookup", "x"), call("c2", "send_email", "bob")}}
	reg := w.registry(map[string]weft.Approval{"send_email": weft.ApprovalRequired}, nil)
	st, _ := memstore.New(memstore.Options{})
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: w.model(), RecordEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Role: weft.RoleUser, Content: "Do it."}})
	if err != nil || res.Last().Reason != weft.StopAwaitingApproval {
		t.Fatalf("%+v %v", res, err)
	}
	before := snapshot(t, st, th.ID)
	rows, _ := st.Messages(ctx, th.ID, weft.MessageQuery{})
	reply := rows[1]
	if len(reply.ToolCalls) != 2 {
		t.Fatalf("reply: %+v", reply)
	}
	f, err := eng.Fork(ctx, th.ID, reply.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	got := (&harness{t: t, store: st}).transcript(f.ID)
	wantTranscript(t, got[:4],
		"user: Do it.",
		`assistant:  [lookup {"to":"x"}] [send_email {"to":"bob"}]`,
		"tool:lookup: lookup done",
		"tool:send_email: Failed to execute tool: the thread was forked before this call finished")
	calls, _ := st.ToolCalls(ctx, f.ID)
	if len(calls) != 2 || calls[1].Status != weft.CallDone || calls[1].ResultMessageID == "" {
		t.Errorf("fork's records: %+v", calls)
	}
	res, err = eng.Continue(ctx, f.ID, "")
	if err != nil || res.Last().Reason != weft.StopOnResponse {
		t.Fatalf("fork's run: %+v %v", res, err)
	}
	got = (&harness{t: t, store: st}).transcript(f.ID)
	if last := got[len(got)-1]; !strings.Contains(last, "lookup done | Failed to execute tool: the thread was forked") {
		t.Errorf("the fork's answer: %s", last)
	}
	if runs := w.runs(); len(runs) != 1 {
		t.Errorf("tools run: %v (the fork must not run the open call)", runs)
	}
	if after := snapshot(t, st, th.ID); after != before {
		t.Errorf("the original changed")
	}
}

// TestForkRefuses: unknown threads and messages, sub-prompt rows.
func TestForkRefuses(t *testing.T) {
	ctx := context.Background()
	eng, st, _ := forkWorld(t, forkStores[0].open)
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if _, err := eng.Fork(ctx, "thr_missing", "msg_x", ""); weft.ErrorCode(err) != weft.ENotFound {
		t.Errorf("unknown thread: %v", err)
	}
	if _, err := eng.Fork(ctx, th.ID, "msg_missing", ""); weft.ErrorCode(err) != weft.ENotFound {
		t.Errorf("unknown message: %v", err)
	}
	var nested weft.Message
	if err := st.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
		nested = weft.Message{Role: weft.RoleUser, Content: "inner", Depth: 1, Status: weft.MessageCompleted}
		return tx.InsertMessage(&nested)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Fork(ctx, th.ID, nested.ID, ""); weft.ErrorCode(err) != weft.EInvalid {
		t.Errorf("sub-prompt row: %v", err)
	}
}

// TestForkDuringRun: a fork made while the original's tool runs answers that call with an error
// and runs on its own; the original's run is not disturbed and stores the tool's real result.
func TestForkDuringRun(t *testing.T) {
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	slow := &weft.Tool{Name: "slow", Description: "Slow.", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		close(started)
		<-release
		return weft.Success("slow done"), nil
	})}
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == weft.RoleUser {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: weft.NewID("call_"), Name: "slow", Arguments: "{}"}}}, nil
		}
		return &weft.Response{Text: "saw: " + last.Text()}, nil
	})
	reg := registry([]*weft.Tool{slow}, nil)
	st, _ := memstore.New(memstore.Options{})
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: model, RecordEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	done := make(chan error, 1)
	go func() {
		_, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Role: weft.RoleUser, Content: "go slow"}})
		done <- err
	}()
	<-started
	rows, _ := st.Messages(ctx, th.ID, weft.MessageQuery{})
	f, err := eng.Fork(ctx, th.ID, rows[1].ID, "")
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, store: st}
	wantTranscript(t, h.transcript(th.ID), "user: go slow", "assistant:  [slow {}]", "tool:slow: slow done", "assistant: saw: slow done")
	if _, err := eng.Continue(ctx, f.ID, ""); err != nil {
		t.Fatal(err)
	}
	wantTranscript(t, h.transcript(f.ID), "user: go slow", "assistant:  [slow {}]", "tool:slow: "+
		"Failed to execute tool: the thread was forked before this call finished", "assistant: saw: "+
		"Failed to execute tool: the thread was forked before this call finished")
}
