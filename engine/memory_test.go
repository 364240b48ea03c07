package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
)

// TestExecutionMemory: the run's tools share Execution.Memory, from their own goroutines too;
// a value is gone once deleted, and a new run starts with none.
func TestExecutionMemory(t *testing.T) {
	put := &weft.Tool{Name: "put", Description: "d", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		mem := st.Execution().Memory()
		id := st.Execution().ToolCall().ID
		done := make(chan struct{})
		go func() { defer close(done); mem.Store(id, "v"+id) }()
		<-done
		mem.Store("gone", true)
		mem.Delete("gone")
		return weft.Success("put"), nil
	})}
	get := &weft.Tool{Name: "get", Description: "d", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		mem := st.Execution().Memory()
		var got []string
		for _, k := range []string{"a", "b", "gone"} {
			if v, ok := mem.Load(k); ok {
				got = append(got, fmt.Sprint(k, "=", v))
			}
		}
		if len(got) == 0 {
			got = []string{"none"}
		}
		return weft.Success("memory: " + strings.Join(got, ",")), nil
	})}
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == weft.RoleUser && last.Content == "fill":
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "a", Name: "put", Arguments: `{}`}, {ID: "b", Name: "put", Arguments: `{}`}}}, nil
		case last.Role == weft.RoleUser || last.Name == "put":
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: fmt.Sprint("g", len(req.Messages)), Name: "get", Arguments: `{}`}}}, nil
		}
		return &weft.Response{Text: last.Content}, nil
	})
	st, _ := memstore.New(memstore.Options{})
	eng, err := engine.New(engine.Options{Registry: registry([]*weft.Tool{put, get}, nil), Store: st, Override: model})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	for _, c := range []struct{ send, want string }{{"fill", "memory: a=va,b=vb"}, {"again", "memory: none"}} {
		res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: c.send}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Reply == nil || res.Reply.Content != c.want {
			t.Errorf("after %q: %+v, want %q", c.send, res.Reply, c.want)
		}
	}
}
