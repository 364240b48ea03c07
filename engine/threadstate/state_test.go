package threadstate

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/feed"
	"github.com/weft-agents/weft/engine/payload"
	"github.com/weft-agents/weft/engine/redact"
	"github.com/weft-agents/weft/engine/vars"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/schema"
)

// fakeEngine is an Engine over a memstore, recording the events published outside runs.
type fakeEngine struct {
	st      weft.Store
	reg     *weft.Registry
	outside []feed.Event
}

func (e *fakeEngine) Store() weft.Store        { return e.st }
func (e *fakeEngine) Registry() *weft.Registry { return e.reg }
func (e *fakeEngine) Now() time.Time           { return time.Unix(1700000000, 0) }
func (e *fakeEngine) Log() *slog.Logger        { return slog.New(slog.DiscardHandler) }
func (e *fakeEngine) Tx(ctx context.Context, threadID string, fence *weft.Fence, _ *redact.Redactor, fn func(weft.Tx) error) error {
	return e.st.Tx(ctx, threadID, fence, fn)
}
func (e *fakeEngine) EmitOutside(_ context.Context, ev feed.Event) { e.outside = append(e.outside, ev) }
func (e *fakeEngine) Observed() bool                               { return true }
func (e *fakeEngine) Redactor(context.Context, string) (func(string) string, error) {
	return func(s string) string { return strings.ReplaceAll(s, "hunter2", "[redacted]") }, nil
}
func (e *fakeEngine) Send(context.Context, string, weft.NewMessage) (string, error) { return "", nil }
func (e *fakeEngine) Terminate(context.Context, string) error                       { return nil }
func (e *fakeEngine) DeliverToParent(context.Context, *weft.Thread, weft.Side, string, string, []weft.ToolAttachment) error {
	return nil
}
func (e *fakeEngine) EmitSubagent(context.Context, *weft.Thread, string, string, string) {}
func (e *fakeEngine) Validator(s *schema.Schema) (*schema.Validator, error)              { return schema.Compile(s) }
func (e *fakeEngine) EffectScheduled()                                                   {}

// fakeRun is a Run that records what a State posts to its mailbox and emits through it.
type fakeRun struct {
	thread  string
	posted  []string
	emitted []string
}

func (r *fakeRun) ID() string                         { return "run_1" }
func (r *fakeRun) ThreadID() string                   { return r.thread }
func (r *fakeRun) Fence() *weft.Fence                 { return nil }
func (r *fakeRun) Redactor() *redact.Redactor         { return redact.New([]string{"hunter2"}, nil) }
func (r *fakeRun) Env() vars.View                     { return vars.View{} }
func (r *fakeRun) Emit(typ string, _ payload.Payload) { r.emitted = append(r.emitted, typ) }
func (r *fakeRun) EmitMessage(m weft.Message)         { r.emitted = append(r.emitted, "message "+m.Content) }
func (r *fakeRun) Records() bool                      { return false }
func (r *fakeRun) RecordInsert(context.Context, func(weft.Tx) error, *weft.Message) error {
	panic("not recording")
}
func (r *fakeRun) RecordChange(context.Context, func(weft.Tx) error, weft.Message, weft.MessageChange) error {
	panic("not recording")
}
func (r *fakeRun) RecordDelete(context.Context, func(weft.Tx) error, string) error {
	panic("not recording")
}
func (r *fakeRun) PostRow(m weft.Message)     { r.posted = append(r.posted, "row "+m.Content) }
func (r *fakeRun) PostReplace(m weft.Message) { r.posted = append(r.posted, "replace "+m.Content) }
func (r *fakeRun) PostDelete(id string)       { r.posted = append(r.posted, "delete") }
func (r *fakeRun) PostEnv(v weft.EnvValue)    { r.posted = append(r.posted, "env "+v.Name) }
func (r *fakeRun) PostTool(name string, args json.RawMessage) {
	r.posted = append(r.posted, "tool "+name+" "+string(args))
}
func (r *fakeRun) Hooks(Exec, weft.HookPoint) []*weft.Hook { return nil }
func (r *fakeRun) HookFailed(*weft.Hook, error)            {}

func newFakes(t *testing.T) (*fakeEngine, *weft.Thread) {
	t.Helper()
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := weft.NewRegistry()
	reg.AddTool(&weft.Tool{Name: "noop", Execute: weft.ToolFunc(func(context.Context, weft.State, json.RawMessage) (weft.ToolResult, error) {
		return weft.Success("ok"), nil
	})})
	th := &weft.Thread{ID: weft.NewID("thr_"), Agent: "a", Status: weft.ThreadIdle}
	if err := st.CreateThread(context.Background(), th, nil); err != nil {
		t.Fatal(err)
	}
	return &fakeEngine{st: st, reg: reg}, th
}

// A State in its thread's run changes the run's caches only through the mailbox (the Post
// methods), and publishes through the run.
func TestStateInRunPostsToMailbox(t *testing.T) {
	ctx := context.Background()
	e, th := newFakes(t)
	r := &fakeRun{thread: th.ID}
	s := New(Core{Engine: e, Thread: th, Run: r})
	m, err := s.InjectMessage(ctx, weft.NewMessage{Role: weft.RoleUser, Content: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if m.RunID != "run_1" {
		t.Errorf("RunID = %q, want the run's", m.RunID)
	}
	if _, err := s.UpdateMessage(ctx, m.ID, weft.MessageUpdate{Content: new("hello")}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMessage(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.SetEnv(ctx, "COLOR", "blue", weft.VarText); err != nil {
		t.Fatal(err)
	}
	if err := s.QueueTool(ctx, "noop", nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"row hi", "replace hello", "delete", "env COLOR", "tool noop {}"}
	if !reflect.DeepEqual(r.posted, want) {
		t.Errorf("posted %q, want %q", r.posted, want)
	}
	wantEmitted := []string{"message hi", "message hello", "message_deleted"}
	if !reflect.DeepEqual(r.emitted, wantEmitted) {
		t.Errorf("emitted %q, want %q", r.emitted, wantEmitted)
	}
	if len(e.outside) != 0 {
		t.Errorf("%d events published outside the run", len(e.outside))
	}
}

// Outside any run a State publishes on its own, its rows redacted, and refuses what needs a run.
func TestStateOutsideRun(t *testing.T) {
	ctx := context.Background()
	e, th := newFakes(t)
	s := New(Core{Engine: e, Thread: th})
	if _, err := s.InjectMessage(ctx, weft.NewMessage{Role: weft.RoleUser, Content: "pw hunter2"}); err != nil {
		t.Fatal(err)
	}
	if len(e.outside) != 1 || e.outside[0].Type != "message" {
		t.Fatalf("outside events %+v, want one message", e.outside)
	}
	if got := e.outside[0].Data.(payload.MessageData).Message.Content; got != "pw [redacted]" {
		t.Errorf("published content %q, want it redacted", got)
	}
	if err := s.QueueTool(ctx, "noop", nil); err != weft.ErrNotInRun {
		t.Errorf("QueueTool outside a run: %v, want ErrNotInRun", err)
	}
	if s.Execution() != nil {
		t.Error("Execution() is not nil without an execution")
	}
}

func TestRedactJSON(t *testing.T) {
	red := func(s string) string { return strings.ReplaceAll(s, "1234", "[redacted]") }
	in := map[string]any{"k1234": []any{"a1234", json.Number("1234"), json.Number("5"), true}}
	out, changed := redactJSON(in, red)
	want := map[string]any{"k[redacted]": []any{"a[redacted]", "[redacted]", json.Number("5"), true}}
	if !changed || !reflect.DeepEqual(out, want) {
		t.Errorf("redactJSON = %v, %v; want %v, true", out, changed, want)
	}
	if _, changed := redactJSON(map[string]any{"a": "b"}, red); changed {
		t.Error("changed without a secret")
	}
}
