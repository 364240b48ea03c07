package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/weft-agents/weft/validate"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/schema"
)

// fakeClock is a settable clock shared by the engine and the store.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

func TestEffects(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}
	var runs []string
	reg := registry(nil, nil)
	reg.AddEffect(&weft.Effect{Name: "remind", Description: "Queue a reminder.", Args: schema.Object(schema.Field("text", schema.String())),
		Run: func(ctx context.Context, st weft.State, args []byte) error {
			var a struct{ Text string }
			json.Unmarshal(args, &a)
			runs = append(runs, "remind "+a.Text)
			if st.Execution() != nil {
				return errors.New("an effect has no Execution")
			}
			_, err := st.QueueMessage(ctx, weft.NewMessage{Role: weft.RoleUser, Content: "Reminder: " + a.Text})
			return err
		}})
	attempts := 0
	reg.AddEffect(&weft.Effect{Name: "flaky", MaxAttempts: 2, Run: func(ctx context.Context, st weft.State, args []byte) error {
		attempts++
		return errors.New("upstream unavailable")
	}})
	reg.AddTool(&weft.Tool{Name: "schedule", Description: "d", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
		id, err := st.ScheduleEffect(ctx, "remind", map[string]any{"text": "call the courier"}, time.Hour)
		if err != nil {
			return weft.ToolResult{}, err
		}
		if _, err := st.ScheduleEffect(ctx, "nope", nil, 0); !errors.Is(err, weft.ErrUnknownEffect) {
			return weft.Failure("unknown effects must be refused"), nil
		}
		if _, err := st.ScheduleEffect(ctx, "remind", map[string]any{"text": 42}, 0); err != nil {
			return weft.ToolResult{}, err
		}
		if _, err := st.ScheduleEffect(ctx, "flaky", nil, 0); err != nil {
			return weft.ToolResult{}, err
		}
		return weft.Success("scheduled " + id), nil
	})})
	p, _ := reg.Prompt("assistant")
	p.Tools = []weft.ToolEntry{{Name: "schedule"}}
	if d := validate.Registry(reg); d.HasErrors() {
		t.Fatal(d.Err())
	}
	st, _ := memstore.New(memstore.Options{Now: clock.Now})
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == weft.RoleUser && strings.HasPrefix(last.Text(), "Reminder: "):
			return &weft.Response{Text: "Calling the courier now."}, nil
		case last.Role == weft.RoleUser:
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "c1", Name: "schedule", Arguments: "{}"}}}, nil
		}
		return &weft.Response{Text: "I will remind you in an hour."}, nil
	})
	eng, _ := engine.New(engine.Options{Registry: reg, Store: st, Override: model, Clock: clock})
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	eng.Send(ctx, th.ID, weft.NewMessage{Content: "remind me to call the courier in an hour"})
	if _, err := eng.Run(ctx, th.ID); err != nil {
		t.Fatal(err)
	}
	effects, _ := st.Effects(ctx, th.ID)
	if len(effects) != 3 {
		t.Fatalf("effects %+v", effects)
	}
	// Due now: the invalid one fails once with the validation message; flaky fails and is retried.
	rep, err := eng.RunDueEffects(ctx)
	if err != nil || rep.Ran != 2 || len(runs) != 0 {
		t.Fatalf("first pass: %+v %v runs=%v", rep, err, runs)
	}
	clock.Sleep(ctx, 2*time.Second)
	eng.RunDueEffects(ctx)
	effects, _ = st.Effects(ctx, th.ID)
	byName := map[string]weft.EffectRecord{}
	for _, e := range effects {
		if e.Name != "remind" || e.Status != weft.EffectPending {
			byName[e.Name] = e
		}
	}
	if inv := byName["remind"]; inv.Status != weft.EffectFailed || inv.Attempts != 1 || !strings.Contains(inv.Error, "Effect argument validation failed: /text") {
		t.Errorf("invalid args: %+v", inv)
	}
	if fl := byName["flaky"]; fl.Status != weft.EffectFailed || fl.Attempts != 2 || attempts != 2 || fl.Error != "upstream unavailable" {
		t.Errorf("flaky: %+v (ran %d)", fl, attempts)
	}
	// An hour later, after a restart (a fresh engine on the same store), the reminder runs and its
	// queued message starts a run.
	clock.Sleep(ctx, time.Hour)
	eng2, _ := engine.New(engine.Options{Registry: reg, Store: st, Override: model, Clock: clock})
	rep, err = eng2.RunDueEffects(ctx)
	if err != nil || rep.Ran != 1 || len(runs) != 1 || runs[0] != "remind call the courier" {
		t.Fatalf("after restart: %+v %v %v", rep, err, runs)
	}
	res, err := eng2.Run(ctx, rep.Threads[0])
	if err != nil || res.Last().Reason != weft.StopOnResponse {
		t.Fatalf("%v %+v", err, res)
	}
	msgs, _ := st.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
	rem := msgs[len(msgs)-2]
	if rem.Content != "Reminder: call the courier" || rem.Metadata["scheduled_effect"] == nil || msgs[len(msgs)-1].Content != "Calling the courier now." {
		t.Errorf("reminder rows: %+v / %+v", rem, msgs[len(msgs)-1])
	}
	// Cancel: pending only.
	state, _ := eng2.State(ctx, th.ID)
	id, _ := state.ScheduleEffect(ctx, "remind", map[string]any{"text": "later"}, time.Hour)
	if err := state.CancelEffect(ctx, id); err != nil {
		t.Errorf("cancel pending: %v", err)
	}
	if err := state.CancelEffect(ctx, id); weft.ErrorCode(err) != weft.EConflict {
		t.Errorf("cancel twice: %v", err)
	}
	// Terminating the thread cancels its pending effects.
	id2, _ := state.ScheduleEffect(ctx, "remind", map[string]any{"text": "never"}, time.Hour)
	if err := eng2.Terminate(ctx, th.ID); err != nil {
		t.Fatal(err)
	}
	effects, _ = st.Effects(ctx, th.ID)
	for _, e := range effects {
		if e.ID == id2 && e.Status != weft.EffectCanceled {
			t.Errorf("pending effect after terminate: %+v", e)
		}
	}
}

// TestEffectChangedNamesTheEffect: effect_changed carries the effect's id, name and status
// (docs/http-api.md), when it is scheduled and when it is cancelled.
func TestEffectChangedNamesTheEffect(t *testing.T) {
	reg := registry(nil, nil)
	reg.AddEffect(&weft.Effect{Name: "remind", Description: "Queue a reminder.", Run: func(ctx context.Context, st weft.State, args []byte) error { return nil }})
	if d := validate.Registry(reg); d.HasErrors() {
		t.Fatal(d.Err())
	}
	st, _ := memstore.New(memstore.Options{})
	var mu sync.Mutex
	var got []engine.Fields
	model := weft.ProviderFunc(func(context.Context, *weft.Request, func(weft.Chunk)) (*weft.Response, error) {
		return &weft.Response{Text: "ok"}, nil
	})
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: model, OnEvent: func(e engine.Event) {
		if e.Type == "effect_changed" {
			mu.Lock()
			got = append(got, e.Data.(engine.Fields))
			mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	state, _ := eng.State(ctx, th.ID)
	id, err := state.ScheduleEffect(ctx, "remind", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := state.CancelEffect(ctx, id); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []weft.EffectStatus{weft.EffectPending, weft.EffectCanceled}
	if len(got) != len(want) {
		t.Fatalf("effect_changed events: %v", got)
	}
	for i, f := range got {
		if f["id"] != id || f["name"] != "remind" || f["status"] != want[i] {
			t.Errorf("event %d: %v, want id %s, name remind, status %s", i, f, id, want[i])
		}
	}
}
