package engine

import (
	"context"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/runstate"
	"github.com/weft-agents/weft/engine/vars"
	"github.com/weft-agents/weft/memstore"
)

// TestOneRedactorPerThread: a thread's run, a read of it and the engine's writes outside a run
// use the one Redactor the cache built, until a secret of the thread changes; a thread with the
// same secrets shares it, a thread without any shares the Redactor of none.
func TestOneRedactorPerThread(t *testing.T) {
	ctx := context.Background()
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "fake", Provider: "fake", Model: "fake"})
	reg.AddPrompt(&weft.Prompt{Name: "p", Model: "fake", Prompt: weft.Text("Help.")})
	reg.AddAgent(&weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "p"}})
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	model := weft.ProviderFunc(func(context.Context, *weft.Request, func(weft.Chunk)) (*weft.Response, error) {
		return &weft.Response{Text: "ok", FinishReason: "stop"}, nil
	})
	e, err := New(Options{Registry: reg, Store: st, Override: model})
	if err != nil {
		t.Fatal(err)
	}
	newThread := func(env map[string]string) string {
		th, err := e.CreateThread(ctx, NewThread{Agent: "a", Env: env})
		if err != nil {
			t.Fatal(err)
		}
		return th.ID
	}
	id := newThread(map[string]string{"TOKEN": "tok-41c0ffee"})
	start, err := runstate.Read(ctx, e.store, id, true)
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.newRun(ctx, nil, weft.Fence{}, start)
	if err != nil {
		t.Fatal(err)
	}
	read, err := e.secrets.Redactor(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if read != r.red || e.commit.Redactor(ctx, id) != r.red {
		t.Error("the read and the write outside a run built a Redactor of their own")
	}
	if twin, _ := e.secrets.Redactor(ctx, newThread(map[string]string{"OTHER_NAME": "tok-41c0ffee"})); twin != read {
		t.Error("a thread with the same secret got another Redactor")
	}
	if none, _ := e.secrets.Redactor(ctx, newThread(nil)); !none.Empty() || none != e.secrets.For(&vars.View{}) {
		t.Error("a thread without secrets did not get the shared Redactor of none")
	}
	if err := st.SetEnv(ctx, weft.EnvThread, id, []weft.EnvValue{{Name: "MORE", Value: "tok-more-99"}}); err != nil {
		t.Fatal(err)
	}
	if after, _ := e.secrets.Redactor(ctx, id); after == read || after.String("tok-more-99") != weft.Redacted {
		t.Error("the thread's new secret did not give a new Redactor")
	}
}
