package providertest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
)

// Target names the provider an adapter serves and the variable its key is read from, for
// RunEngine's model definitions and thread env.
type Target struct {
	// Provider is the provider name of the models (openai, anthropic, google, …).
	Provider string
	// KeyVar is the env variable holding its API key (OPENAI_API_KEY, …).
	KeyVar string
}

// virtualClock answers the engine's backoff waits at once and records them.
type virtualClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func (c *virtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *virtualClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

// engineScenario is a sequence of server answers and what the engine must make of them.
type engineScenario struct {
	name string
	// answers serve the attempts in order; the last one serves any further attempt.
	answers []func(t *testing.T, f Fake, w http.ResponseWriter, r *http.Request, body []byte)
	// fallback gives the model a fallback (same provider, upstream model fake-model-2).
	fallback bool
	// wantStop is the run's stop reason; wantAttempts the log rows (= requests served).
	wantStop     weft.StopReason
	wantAttempts int
	// wantSleeps are the backoff waits the engine took, in order.
	wantSleeps []time.Duration
	// wantModels are the upstream models of the attempts, in order.
	wantModels []string
	// wantError is contained in the stop's error (failing stops).
	wantError string
}

func engineScenarios() []engineScenario {
	ok := serveReply(textReply(), false)
	return []engineScenario{
		{name: "rate_limit_waits_retry_after_then_succeeds",
			answers:  []func(*testing.T, Fake, http.ResponseWriter, *http.Request, []byte){serveError(429, "Rate limit reached", map[string]string{"Retry-After": "7"}), ok},
			wantStop: weft.StopOnResponse, wantAttempts: 2, wantSleeps: []time.Duration{7 * time.Second}, wantModels: []string{"fake-model-1", "fake-model-1"}},
		{name: "server_errors_exhaust_attempts_then_fallback",
			answers:  []func(*testing.T, Fake, http.ResponseWriter, *http.Request, []byte){serveError(500, "internal error", nil), serveError(500, "internal error", nil), ok},
			fallback: true, wantStop: weft.StopOnResponse, wantAttempts: 3, wantSleeps: []time.Duration{time.Second},
			wantModels: []string{"fake-model-1", "fake-model-1", "fake-model-2"}},
		{name: "overloaded_is_retried",
			answers:  []func(*testing.T, Fake, http.ResponseWriter, *http.Request, []byte){serveError(529, "Overloaded", nil), ok},
			wantStop: weft.StopOnResponse, wantAttempts: 2, wantSleeps: []time.Duration{time.Second}, wantModels: []string{"fake-model-1", "fake-model-1"}},
		{name: "auth_error_skips_retries_and_fails",
			answers:  []func(*testing.T, Fake, http.ResponseWriter, *http.Request, []byte){serveError(401, "invalid api key", nil)},
			wantStop: weft.StopStepError, wantAttempts: 1, wantModels: []string{"fake-model-1"}, wantError: "auth_error"},
		{name: "invalid_request_goes_to_the_fallback_without_retry",
			answers:  []func(*testing.T, Fake, http.ResponseWriter, *http.Request, []byte){serveError(400, "bad request", nil), ok},
			fallback: true, wantStop: weft.StopOnResponse, wantAttempts: 2, wantModels: []string{"fake-model-1", "fake-model-2"}},
		{name: "malformed_body_is_retried",
			answers: []func(*testing.T, Fake, http.ResponseWriter, *http.Request, []byte){func(t *testing.T, f Fake, w http.ResponseWriter, r *http.Request, body []byte) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"id": "x", "choices": [`))
			}, ok},
			wantStop: weft.StopOnResponse, wantAttempts: 2, wantSleeps: []time.Duration{time.Second}, wantModels: []string{"fake-model-1", "fake-model-1"}},
	}
}

// RunEngine drives the engine through the adapter against a loopback server speaking the provider's
// wire, checking the engine's retry and fallback rules: a 429 waits its Retry-After and retries,
// server errors exhaust the model's attempts and go to its fallback, 529 is retried, an auth error
// is not retried, an invalid request goes straight to the fallback, a malformed body is retried.
// Each attempt has its log row; the key never appears in a stop error or a log row. Structured
// output goes over the same wire (runStructured).
func RunEngine(t *testing.T, target Target, newProvider func(baseURL string) weft.Provider, f Fake) {
	runStructured(t, target, newProvider, f)
	for _, sc := range engineScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			var mu sync.Mutex
			var models []string
			n := 0
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
				body := buf.String()
				mu.Lock()
				i := min(n, len(sc.answers)-1)
				n++
				switch {
				case strings.Contains(body, "fake-model-2") || strings.Contains(r.URL.Path, "fake-model-2"):
					models = append(models, "fake-model-2")
				default:
					models = append(models, "fake-model-1")
				}
				mu.Unlock()
				if rc, ok := f.(RequestChecker); ok {
					rc.CheckRequest(t, r)
				}
				sc.answers[i](t, f, w, r, []byte(body))
			}))
			defer srv.Close()
			off := false
			reg := weft.NewRegistry()
			m := &weft.Model{Name: "main", Provider: target.Provider, Model: "fake-model-1", Capabilities: weft.Capabilities{SupportsStreaming: &off},
				Retry: weft.RetryPolicy{Attempts: 2}}
			if sc.fallback {
				m.Fallbacks = []string{"backup"}
				reg.AddModel(&weft.Model{Name: "backup", Provider: target.Provider, Model: "fake-model-2", Capabilities: weft.Capabilities{SupportsStreaming: &off}})
			}
			reg.AddModel(m)
			reg.AddPrompt(&weft.Prompt{Name: "p", ToolDescription: "P.", Model: "main", Prompt: weft.Text("You are a test assistant.")})
			reg.AddAgent(&weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "p"}})
			st, err := memstore.New(memstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			p := newProvider(srv.URL + "/v1")
			clock := &virtualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			eng, err := engine.New(engine.Options{Registry: reg, Store: st, Clock: clock,
				Providers: func(*weft.Model) (weft.Provider, error) { return p, nil }})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "a", Env: map[string]string{target.KeyVar: APIKey}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Content: "Say hello."}); err != nil {
				t.Fatal(err)
			}
			res, err := eng.Run(ctx, th.ID)
			if err != nil {
				t.Fatal(err)
			}
			last := res.Last()
			if last.Reason != sc.wantStop || !strings.Contains(last.Error, sc.wantError) || strings.Contains(last.Error, APIKey) {
				t.Errorf("stop %s %q, want %s containing %q", last.Reason, last.Error, sc.wantStop, sc.wantError)
			}
			logs, err := st.Logs(ctx, th.ID, weft.LogQuery{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if len(logs) != sc.wantAttempts || n != sc.wantAttempts {
				t.Errorf("%d log rows, %d requests; want %d", len(logs), n, sc.wantAttempts)
			}
			for _, l := range logs {
				if strings.Contains(fmt.Sprint(l), APIKey) {
					t.Errorf("log row carries the key: %+v", l)
				}
			}
			mu.Lock()
			gotModels := fmt.Sprint(models)
			mu.Unlock()
			if gotModels != fmt.Sprint(sc.wantModels) {
				t.Errorf("attempted models %s, want %v", gotModels, sc.wantModels)
			}
			clock.mu.Lock()
			defer clock.mu.Unlock()
			if fmt.Sprint(clock.sleeps) != fmt.Sprint(sc.wantSleeps) && !(len(clock.sleeps) == 0 && len(sc.wantSleeps) == 0) {
				t.Errorf("backoff waits %v, want %v", clock.sleeps, sc.wantSleeps)
			}
			if sc.wantStop == weft.StopOnResponse {
				msgs, _ := st.Messages(ctx, th.ID, weft.MessageQuery{Limit: 1, Desc: true})
				if len(msgs) != 1 || msgs[0].Content != textReply().Text() {
					t.Errorf("reply: %+v", msgs)
				}
			}
		})
	}
}
