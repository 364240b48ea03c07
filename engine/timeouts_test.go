package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
)

// TestTimeoutOverrides: WEFT_FIRST_CHUNK_TIMEOUT and WEFT_STALL_TIMEOUT replace the defaults, a
// model's own timeouts win over them, and an invalid value is ignored; llm_request events number
// their attempts.
func TestTimeoutOverrides(t *testing.T) {
	cases := []struct {
		name      string
		env       map[string]string
		model     weft.Timeouts
		wantFirst time.Duration
		wantStall time.Duration
	}{
		{"defaults", nil, weft.Timeouts{}, 120 * time.Second, 45 * time.Second},
		{"env", map[string]string{"WEFT_FIRST_CHUNK_TIMEOUT": "7s", "WEFT_STALL_TIMEOUT": "2s"}, weft.Timeouts{}, 7 * time.Second, 2 * time.Second},
		{"model_wins", map[string]string{"WEFT_FIRST_CHUNK_TIMEOUT": "7s"}, weft.Timeouts{FirstChunk: weft.Duration(3 * time.Second)}, 3 * time.Second, 45 * time.Second},
		{"invalid_ignored", map[string]string{"WEFT_STALL_TIMEOUT": "soon"}, weft.Timeouts{}, 120 * time.Second, 45 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got weft.Timeouts
			var attempts []any
			calls := 0
			model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
				got = req.Timeouts
				calls++
				if calls == 1 {
					return nil, &weft.ProviderError{Type: weft.ErrServer, Status: 503, Message: "busy"}
				}
				return &weft.Response{Text: "ok"}, nil
			})
			reg := registry(nil, nil)
			m, _ := reg.Model("fast")
			m.Timeouts = tc.model
			m.Retry = weft.RetryPolicy{Attempts: 2, BaseDelay: weft.Duration(time.Millisecond)}
			st, _ := memstore.New(memstore.Options{})
			defer st.Close()
			eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: model,
				LookupEnv: func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok },
				OnEvent: func(ev engine.Event) {
					if ev.Type == "llm_request" {
						attempts = append(attempts, ev.Data.(engine.ModelRequest).Attempt)
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			th, _ := eng.CreateThread(context.Background(), engine.NewThread{Agent: "assistant"})
			if _, err := eng.Ask(context.Background(), th.ID, engine.Input{Message: &weft.NewMessage{Content: "hi"}}); err != nil {
				t.Fatal(err)
			}
			if got.FirstChunk.D() != tc.wantFirst || got.Stall.D() != tc.wantStall {
				t.Errorf("timeouts %v/%v, want %v/%v", got.FirstChunk.D(), got.Stall.D(), tc.wantFirst, tc.wantStall)
			}
			if len(attempts) != 2 || attempts[0] != 1 || attempts[1] != 2 {
				t.Errorf("llm_request attempts %v", attempts)
			}
		})
	}
}
