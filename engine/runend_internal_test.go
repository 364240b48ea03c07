package engine

import (
	"context"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/feed"
	"github.com/weft-agents/weft/memstore"
)

// TestRunEndPublishedAfterStopNoted: a recording run whose stop's transaction records its end
// publishes that transaction's events (run_stopped among them) only once it has told Ask's
// watches of the stop, as it did when run_stopped was emitted after that. A watch added when
// run_stopped arrives, as by a caller that asks again at once, is not told this stop.
func TestRunEndPublishedAfterStopNoted(t *testing.T) {
	ctx := context.Background()
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "fake", Provider: "fake", Model: "fake"})
	reg.AddPrompt(&weft.Prompt{Name: "p", Model: "fake", Prompt: weft.Text("Answer.")})
	reg.AddAgent(&weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "p"}})
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		return &weft.Response{Text: "answer", FinishReason: "stop"}, nil
	})
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var eng *Engine
	var late []*feed.StopWatch
	var types []string
	eng, err = New(Options{Registry: reg, Store: st, Override: model, RecordEvents: true, OnEvent: func(ev Event) {
		types = append(types, ev.Type)
		if ev.Type == "run_stopped" {
			late = append(late, eng.watches.Add(ev.ThreadID))
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	th, err := eng.CreateThread(ctx, NewThread{Agent: "a"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Ask(ctx, th.ID, Input{Message: &weft.NewMessage{Content: "go"}})
	if err != nil || len(res.Stops) != 1 || res.Reply == nil {
		t.Fatalf("Ask: %+v, %v", res, err)
	}
	if len(late) != 1 {
		t.Fatalf("run_stopped published %d times: %v", len(late), types)
	}
	if stops, _, reply := eng.watches.Taken(late[0]); len(stops) != 0 || reply != nil {
		t.Errorf("a watch added on run_stopped was told %+v (reply %v)", stops, reply)
	}
	if n := len(types); n < 2 || types[n-2] != "message" || types[n-1] != "run_stopped" {
		t.Errorf("published %v, want the reply's message then run_stopped last", types)
	}
}
