package modelcall

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/payload"
	"github.com/weft-agents/weft/engine/redact"
	"github.com/weft-agents/weft/engine/vars"
	"github.com/weft-agents/weft/tokens"
)

// fakeRun records the events of the calls made for it.
type fakeRun struct {
	mu     sync.Mutex
	deltas []string
}

func (f *fakeRun) Observed() bool { return true }
func (f *fakeRun) Emit(typ string, data payload.Payload) {
	if c, ok := data.(payload.Chunk); ok {
		f.mu.Lock()
		f.deltas = append(f.deltas, c.Delta)
		f.mu.Unlock()
	}
}
func (f *fakeRun) FlushEvents() error                         { return nil }
func (f *fakeRun) Sync()                                      {}
func (f *fakeRun) Interruptible(context.CancelCauseFunc) bool { return true }
func (f *fakeRun) Interrupting() bool                         { return false }

// newCaller returns a caller whose every call p answers, for a model with timeouts to.
func newCaller(t *testing.T, p weft.Provider, to weft.Timeouts) (*Caller, *fakeRun, Scope) {
	t.Helper()
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "m", Provider: "scripted", Timeouts: to, Retry: weft.RetryPolicy{Attempts: 1}})
	ms := &Models{Registry: reg, Clock: weft.SystemClock{}, Tokens: &tokens.Counter{}, Logger: slog.New(slog.DiscardHandler),
		Override: p, LookupEnv: func(string) (string, bool) { return "", false }}
	env, red := &vars.View{}, redact.New([]string{"s3cret"})
	run := &fakeRun{}
	c := &Caller{}
	c.Init(ms, context.Background(), run, "thread", "run", &env, &red)
	return c, run, Scope{Prompt: &weft.Prompt{Name: "p", Model: "m"}, Side: weft.SideA}
}

// TestStreamedChunksAreRedacted: deltas are emitted redacted, a secret split across chunks too,
// and the first chunk's time gives the attempt's time to first token.
func TestStreamedChunksAreRedacted(t *testing.T) {
	p := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, onChunk func(weft.Chunk)) (*weft.Response, error) {
		for _, s := range []string{"the key is s3", "cret, ", "keep it"} {
			time.Sleep(2 * time.Millisecond)
			onChunk(weft.Chunk{Text: s})
		}
		return &weft.Response{Text: "the key is s3cret, keep it"}, nil
	})
	c, run, s := newCaller(t, p, weft.Timeouts{})
	res, err := c.Call(s, &weft.Request{Messages: []weft.LLMMessage{{Role: weft.RoleUser, Content: "hi"}}}, "msg")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(run.deltas, ""); strings.Contains(got, "s3cret") || !strings.Contains(got, "keep it") {
		t.Errorf("deltas %q", got)
	}
	if res.Log.TimeToFirstTokenMS <= 0 {
		t.Errorf("time to first token %d ms", res.Log.TimeToFirstTokenMS)
	}
}

// TestStallTimeout: a stream that stops sending fails with a stall timeout once it started, a
// first-chunk timeout before.
func TestStallTimeout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks int
		want   string
	}{{"first chunk", 0, "no output within"}, {"stall", 2, "stream stalled"}} {
		t.Run(tc.name, func(t *testing.T) {
			p := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, onChunk func(weft.Chunk)) (*weft.Response, error) {
				for range tc.chunks {
					onChunk(weft.Chunk{Text: "x"})
				}
				<-ctx.Done()
				return nil, ctx.Err()
			})
			c, _, s := newCaller(t, p, weft.Timeouts{FirstChunk: weft.Duration(200 * time.Millisecond), Stall: weft.Duration(200 * time.Millisecond)})
			res, err := c.Call(s, &weft.Request{Messages: []weft.LLMMessage{{Role: weft.RoleUser, Content: "hi"}}}, "msg")
			var pe *weft.ProviderError
			if len(res.Logs) != 1 || !strings.Contains(res.Logs[0].Error, tc.want) || errors.As(err, &pe) && pe.Type != weft.ErrTimeout {
				t.Fatalf("err %v, logs %+v", err, res.Logs)
			}
		})
	}
}
