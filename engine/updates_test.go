package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// TestUpdatedRowsStreamed: a row a run changes after storing it is streamed again, as the message
// event's payload is "created or updated row" (docs/http-api.md): a client that watches the thread
// ends with the row as stored. Checked on the live stream and, when the run records its events, in
// the thread's log; each case names the row it changes.
func TestUpdatedRowsStreamed(t *testing.T) {
	cases := []struct {
		name   string
		reg    func() *weft.Registry
		script string
		// changed picks the row the run changed from the stored rows.
		changed func(msgs []weft.Message) weft.Message
	}{
		{
			name:    "a stop tool's response property becomes the reply's text",
			reg:     stopToolRegistry,
			script:  "- {text: thinking, tool_calls: [{name: finish, arguments: {answer: The answer is 42.}}]}\n",
			changed: func(msgs []weft.Message) weft.Message { return msgs[1] },
		},
		{
			name: "a tool updates a message through its State",
			reg: func() *weft.Registry {
				reg := registry([]*weft.Tool{{Name: "tidy", Description: "Tidies the question.",
					Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
						msgs, err := st.Messages(ctx, weft.MessageQuery{Roles: []weft.Role{weft.RoleUser}})
						if err != nil {
							return weft.ToolResult{}, err
						}
						text := "Where is order 42?"
						if _, err := st.UpdateMessage(ctx, msgs[0].ID, weft.MessageUpdate{Content: &text}); err != nil {
							return weft.ToolResult{}, err
						}
						return weft.Success("tidied"), nil
					})}}, nil)
				return reg
			},
			script:  "- {tool_calls: [{name: tidy}]}\n- {text: done}\n",
			changed: func(msgs []weft.Message) weft.Message { return msgs[0] },
		},
		{
			name: "an after_tool_call hook removes a call from the reply",
			reg: func() *weft.Registry {
				var calls []string
				reg := registry([]*weft.Tool{recorder("lookup", &calls, "found it"), recorder("noise", &calls, "ignore me")}, nil)
				reg.AddHook(&weft.Hook{ID: "drop_noise", Point: weft.HookAfterToolCallSuccess,
					Fn: weft.ToolResultFunc(func(ctx context.Context, st weft.State, c weft.ToolCall, r weft.ToolResult) (*weft.ToolResult, error) {
						if c.Name == "noise" {
							return nil, nil
						}
						return &r, nil
					})})
				a, _ := reg.Agent("assistant")
				a.Hooks = []string{"drop_noise"}
				return reg
			},
			script:  "- {text: Looking., tool_calls: [{name: noise}, {name: lookup}]}\n- {text: done}\n",
			changed: func(msgs []weft.Message) weft.Message { return msgs[1] },
		},
	}
	for _, c := range cases {
		for _, record := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/record=%v", c.name, record), func(t *testing.T) {
				h := newHarnessOpts(t, c.reg(), c.script, record)
				th, _ := h.run("assistant", "where is my order 42???", nil)
				ctx := context.Background()
				msgs, err := h.store.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
				if err != nil {
					t.Fatal(err)
				}
				want := c.changed(msgs)
				var live []weft.Message
				h.evMu.Lock()
				for _, ev := range h.events {
					if d, ok := ev.Data.(engine.MessageData); ok && ev.Type == "message" && d.Message.ID == want.ID {
						live = append(live, d.Message)
					}
				}
				h.evMu.Unlock()
				checkLast(t, "live", live, want)
				if !record {
					return
				}
				recs, err := h.store.Events(ctx, th.ID, 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				checkLast(t, "in the log", messageRows(t, recs)[want.ID], want)
			})
		}
	}
}

// checkLast fails unless the last of a row's message events carries the row as stored: its
// content and its calls.
func checkLast(t *testing.T, where string, seen []weft.Message, want weft.Message) {
	t.Helper()
	if len(seen) == 0 {
		t.Errorf("%s: no message event for %s", where, want.ID)
		return
	}
	last := seen[len(seen)-1]
	names := func(m weft.Message) []string {
		var n []string
		for _, c := range m.ToolCalls {
			n = append(n, c.Name)
		}
		return n
	}
	if last.Content != want.Content || !slices.Equal(names(last), names(want)) {
		t.Errorf("%s: %d events; the last has %q %v, the row %q %v", where, len(seen), last.Content, names(last), want.Content, names(want))
	}
}

// TestStateOutsideRunStreamsRows: a State taken outside any run (Engine.State) streams the rows it
// injects or updates, their text redacted as a run's rows are, and records them when the engine
// records its events.
func TestStateOutsideRunStreamsRows(t *testing.T) {
	for _, record := range []bool{false, true} {
		t.Run(fmt.Sprintf("record=%v", record), func(t *testing.T) {
			h := newHarnessOpts(t, registry(nil, nil), "- {text: hello}\n", record)
			th, _ := h.run("assistant", "hi", map[string]string{"SHOP_TOKEN": "tok-7f3a9c"})
			ctx := context.Background()
			st := mustState(t, h, th.ID)
			injected, err := st.InjectMessage(ctx, weft.NewMessage{Role: weft.RoleAssistant, Content: "Your token is tok-7f3a9c."})
			if err != nil {
				t.Fatal(err)
			}
			text := "Your order shipped."
			if _, err := st.UpdateMessage(ctx, injected.ID, weft.MessageUpdate{Content: &text}); err != nil {
				t.Fatal(err)
			}
			var live []string
			h.evMu.Lock()
			for _, ev := range h.events {
				if d, ok := ev.Data.(engine.MessageData); ok && ev.Type == "message" && d.Message.ID == injected.ID {
					live = append(live, d.Message.Content)
				}
			}
			h.evMu.Unlock()
			want := []string{"Your token is [redacted].", "Your order shipped."}
			if !slices.Equal(live, want) {
				t.Errorf("live: %q, want %q", live, want)
			}
			if !record {
				return
			}
			recs, err := h.store.Events(ctx, th.ID, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			var logged []string
			for _, m := range messageRows(t, recs)[injected.ID] {
				logged = append(logged, m.Content)
			}
			if !slices.Equal(logged, want) {
				t.Errorf("in the log: %q, want %q", logged, want)
			}
		})
	}
}

// TestEmitRedacted: State.Emit's name and data are redacted as every payload is (env.md §6),
// whether the State is a run's (a tool's) or taken outside any run, live and in the log; data
// without a secret goes out as given.
func TestEmitRedacted(t *testing.T) {
	const secret = "tok-9b1e44"
	type progress struct {
		Step  int               `json:"step"`
		Notes map[string]string `json:"notes"`
		PIN   int               `json:"pin,omitempty"`
	}
	data := progress{Step: 2, Notes: map[string]string{"auth": "used " + secret}, PIN: 4417}
	reg := registry([]*weft.Tool{{Name: "work", Description: "Works.",
		Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
			if err := st.Emit(ctx, "progress", data); err != nil {
				return weft.ToolResult{}, err
			}
			return weft.Success("done"), st.Emit(ctx, "plain", progress{Step: 3})
		})}}, nil)
	want := `{"notes":{"auth":"used [redacted]"},"pin":"[redacted]","step":2}`
	for _, record := range []bool{false, true} {
		t.Run(fmt.Sprintf("record=%v", record), func(t *testing.T) {
			h := newHarnessOpts(t, reg, "- {tool_calls: [{name: work}]}\n- {text: done}\n", record)
			th, _ := h.run("assistant", "go", map[string]string{"API_TOKEN": secret, "DOOR_PIN": "4417"})
			ctx := context.Background()
			if err := mustState(t, h, th.ID).Emit(ctx, "outside "+secret, data); err != nil {
				t.Fatal(err)
			}
			var got []engine.Fields
			h.evMu.Lock()
			for _, ev := range h.events {
				if f, ok := ev.Data.(engine.Fields); ok && ev.Type == "event" {
					got = append(got, f)
				}
			}
			h.evMu.Unlock()
			if len(got) != 3 {
				t.Fatalf("events: %v", got)
			}
			for i, name := range []string{"progress", "outside [redacted]"} {
				f := got[[]int{0, 2}[i]]
				if b, _ := json.Marshal(f["data"]); f["name"] != name || string(b) != want {
					t.Errorf("event %q: %s, want name %q and data %s", f["name"], b, name, want)
				}
			}
			if p, ok := got[1]["data"].(progress); !ok || p.Step != 3 {
				t.Errorf("data without a secret: %#v, want it as given", got[1]["data"])
			}
			if !record {
				return
			}
			recs, err := h.store.Events(ctx, th.ID, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range recs {
				if bytes.Contains(rec.Data, []byte(secret)) {
					t.Errorf("recorded %s carries the secret: %s", rec.Type, rec.Data)
				}
			}
		})
	}
}

// TestInjectFromToolGoroutine: a tool's goroutine storing rows through its State while the run
// goes on writing its own: with RecordEvents, every row has exactly one event, recorded once, and
// the log's seqs have no gaps. Run with -race.
func TestInjectFromToolGoroutine(t *testing.T) {
	done := make(chan struct{})
	reg := registry([]*weft.Tool{{Name: "watch", Description: "Watches in the background.",
		Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
			go func() {
				defer close(done)
				for i := range 20 {
					if _, err := st.InjectMessage(context.Background(), weft.NewMessage{Role: weft.RoleAssistant, Content: fmt.Sprint("note ", i)}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
			return weft.Success("watching"), nil
		})}}, nil)
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == weft.RoleUser {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "w1", Name: "watch", Arguments: "{}"}}}, nil
		}
		<-done // the run's step waits for the goroutine's rows, which overlap its commits
		return &weft.Response{Text: "done"}, nil
	})
	h := newHarnessWith(t, reg, model)
	eng, err := engine.New(engine.Options{Registry: reg, Store: h.store, Override: model, RecordEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	h.eng = eng
	th, res := h.run("assistant", "go", nil)
	if res.Last().Reason != weft.StopOnResponse {
		t.Fatalf("%+v", res.Stops)
	}
	ctx := context.Background()
	recs, err := h.store.Events(ctx, th.ID, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	checkSeqs(t, recs)
	count := messageEvents(t, recs)
	msgs, _ := h.store.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
	if len(msgs) != 24 {
		t.Fatalf("%d messages", len(msgs))
	}
	for _, m := range msgs {
		if count[m.ID] != 1 {
			t.Errorf("message %d (%q) has %d message events", m.Seq, m.Content, count[m.ID])
		}
	}
}

// TestStateFromToolGoroutine: a tool's goroutine that outlives its call writes through its State
// (injects, updates and deletes rows, sets a secret) while the run goes on; the run sees every
// change in order and redacts its next reply with the new secret, with and without recorded
// events. Run under -race: the State posts to the run's mailbox instead of touching its caches.
func TestStateFromToolGoroutine(t *testing.T) {
	const secret = `q"uote-\5150 café`
	for _, record := range []bool{false, true} {
		t.Run(fmt.Sprintf("record=%v", record), func(t *testing.T) {
			done := make(chan struct{})
			reg := registry([]*weft.Tool{{Name: "watch", Description: "Watches in the background.",
				Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
					go func() {
						defer close(done)
						ctx := context.Background()
						var ids []string
						for i := range 10 {
							m, err := st.InjectMessage(ctx, weft.NewMessage{Role: weft.RoleAssistant, Content: fmt.Sprint("note ", i)})
							if err != nil {
								t.Error(err)
								return
							}
							ids = append(ids, m.ID)
						}
						if _, err := st.UpdateMessage(ctx, ids[0], weft.MessageUpdate{Content: new("note 0, revised")}); err != nil {
							t.Error(err)
						}
						if err := st.DeleteMessage(ctx, ids[1]); err != nil {
							t.Error(err)
						}
						if err := st.SetEnv(ctx, "TOKEN", secret, weft.VarSecret); err != nil {
							t.Error(err)
						}
					}()
					return weft.Success("watching"), nil
				})}, {Name: "noop", Description: "Does nothing.",
				Execute: weft.ToolFunc(func(context.Context, weft.State, json.RawMessage) (weft.ToolResult, error) {
					return weft.Success("nothing"), nil
				})}}, nil)
			var history []string
			calls := 0
			model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
				calls++
				switch calls {
				case 1:
					return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "w1", Name: "watch", Arguments: "{}"}}}, nil
				case 2:
					<-done // the goroutine's writes overlap the run's commits
					return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "n1", Name: "noop", Arguments: "{}"}}}, nil
				default:
					for _, m := range req.Messages {
						history = append(history, m.Text())
					}
					return &weft.Response{Text: "the token is " + secret}, nil
				}
			})
			h := newHarnessWith(t, reg, model)
			eng, err := engine.New(engine.Options{Registry: reg, Store: h.store, Override: model, RecordEvents: record})
			if err != nil {
				t.Fatal(err)
			}
			h.eng = eng
			th, res := h.run("assistant", "go", nil)
			if res.Last().Reason != weft.StopOnResponse {
				t.Fatalf("%+v", res.Stops)
			}
			ctx := context.Background()
			msgs, _ := h.store.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
			var texts []string
			for _, m := range msgs {
				texts = append(texts, m.Content)
			}
			// user, reply with the call, its result, 9 notes (one deleted), the reply with the
			// second call, its result, the answer.
			if len(msgs) != 15 {
				t.Fatalf("%d messages: %q", len(msgs), texts)
			}
			if !slices.Contains(texts, "note 0, revised") || slices.Contains(texts, "note 1") {
				t.Errorf("the update or the delete is missing: %q", texts)
			}
			reply := msgs[len(msgs)-1].Content
			if reply != "the token is "+weft.Redacted {
				t.Errorf("reply stored as %q, want the secret redacted", reply)
			}
			// The run's next request holds the thread as the run's cache has it, in seq order.
			want := []string{"go", "", "watching", "note 0, revised", "note 2", "note 3", "note 4", "note 5", "note 6",
				"note 7", "note 8", "note 9", "", "nothing"}
			if len(history) == 0 || !slices.Equal(history[1:], want) {
				t.Errorf("the request after the writes holds %q, want %q after the system text", history, want)
			}
			for _, x := range history {
				if bytes.Contains([]byte(x), []byte("5150")) {
					t.Errorf("the secret reached the next request: %q", x)
				}
			}
			if record {
				recs, err := h.store.Events(ctx, th.ID, 0, -1)
				if err != nil {
					t.Fatal(err)
				}
				checkSeqs(t, recs)
			}
		})
	}
}
