package providertest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/schema"
)

// structuredScenario is a sequence of answers to a prompt with an output schema.
type structuredScenario struct {
	name     string
	answers  []string // the text of each reply, in order
	wantStop weft.StopReason
	// wantValue is the stored structured value (JSON), for a run that succeeds.
	wantValue string
	wantError string
}

func structuredScenarios() []structuredScenario {
	return []structuredScenario{
		{name: "structured_valid_answer_parses", answers: []string{`{"order_id": 42, "status": "shipped"}`},
			wantStop: weft.StopOnResponse, wantValue: `{"order_id":42,"status":"shipped"}`},
		{name: "structured_invalid_answer_is_retried", answers: []string{`not json at all`, `{"order_id": 7, "status": "late"}`},
			wantStop: weft.StopOnResponse, wantValue: `{"order_id":7,"status":"late"}`},
		{name: "structured_never_valid_fails_the_step", answers: []string{`nope`, `{"order_id": "x"}`, `{"status": 5}`},
			wantStop: weft.StopStepError, wantError: "no valid structured answer after 3 attempts"},
	}
}

// runStructured drives a prompt with an output schema through the adapter against the loopback
// server: every request carries the schema (the adapter's native form, or its instruction where the
// provider has none — both name the schema's properties); a valid answer is parsed and stored on
// the reply; an invalid one is sent back with a corrective note and retried; one that never becomes
// valid fails the step after the bounded attempts, naming the last validation error.
func runStructured(t *testing.T, target Target, newProvider func(baseURL string) weft.Provider, f Fake) {
	for _, sc := range structuredScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			var mu sync.Mutex
			var bodies []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var buf strings.Builder
				b := make([]byte, 4096)
				for {
					k, err := r.Body.Read(b)
					buf.Write(b[:k])
					if err != nil {
						break
					}
				}
				mu.Lock()
				i := min(len(bodies), len(sc.answers)-1)
				bodies = append(bodies, buf.String())
				mu.Unlock()
				reply := Reply{Model: "fake-model-1", Chunks: []weft.Chunk{{Text: sc.answers[i]}}, FinishReason: "stop",
					Usage: weft.Usage{InputTokens: 20, OutputTokens: 10}}
				serveReply(reply, false)(t, f, w, r, nil)
			}))
			defer srv.Close()
			off := false
			reg := weft.NewRegistry()
			reg.AddModel(&weft.Model{Name: "main", Provider: target.Provider, Model: "fake-model-1", Capabilities: weft.Capabilities{SupportsStreaming: &off}})
			reg.AddPrompt(&weft.Prompt{Name: "p", ToolDescription: "P.", Model: "main", Prompt: weft.Text("Report an order's status."),
				OutputSchema: schema.Object(schema.Field("order_id", schema.Integer()), schema.Field("status", schema.String()))})
			reg.AddAgent(&weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "p"}})
			st, err := memstore.New(memstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			p := newProvider(srv.URL + "/v1")
			eng, err := engine.New(engine.Options{Registry: reg, Store: st, Clock: &virtualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
				Providers: func(*weft.Model) (weft.Provider, error) { return p, nil }})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "a", Env: map[string]string{target.KeyVar: APIKey}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Status of order 42?"}})
			if err != nil {
				t.Fatal(err)
			}
			last := res.Last()
			if last.Reason != sc.wantStop || !strings.Contains(last.Error, sc.wantError) {
				t.Fatalf("stop %s %q, want %s containing %q", last.Reason, last.Error, sc.wantStop, sc.wantError)
			}
			mu.Lock()
			defer mu.Unlock()
			if want := min(len(sc.answers), 3); len(bodies) != want {
				t.Errorf("%d requests, want %d", len(bodies), want)
			}
			for i, b := range bodies {
				if !strings.Contains(b, "order_id") || !strings.Contains(b, "status") {
					t.Errorf("request %d does not carry the output schema: %.600s", i+1, b)
				}
				if i > 0 && !strings.Contains(b, "not accepted") {
					t.Errorf("retry %d carries no corrective note: %.600s", i, b)
				}
			}
			if sc.wantValue == "" {
				return
			}
			msgs, _ := st.Messages(ctx, th.ID, weft.MessageQuery{Limit: 1, Desc: true})
			if len(msgs) != 1 {
				t.Fatalf("no reply stored")
			}
			got, _ := json.Marshal(msgs[0].Metadata["structured"])
			if string(got) != sc.wantValue {
				t.Errorf("structured value %s, want %s", got, sc.wantValue)
			}
		})
	}
}
