package engine_test

import (
	"context"
	"fmt"
	"github.com/weft-agents/weft/validate"
	"log"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
)

// exampleRegistry defines, in Go, a tool with typed arguments, a prompt that offers it and an agent
// driven by the prompt. (Definitions can also be files: see the project package.)
func exampleRegistry() *weft.Registry {
	reg := weft.NewRegistry()
	reg.AddTool(weft.NewTool("lookup_order", "Look an order up by its number.",
		func(ctx context.Context, st weft.State, a struct {
			OrderID int `json:"order_id" jsonschema:"description=The order number"`
		}) (weft.ToolResult, error) {
			return weft.Success(fmt.Sprintf("order %d: shipped on Monday", a.OrderID)), nil
		}))
	reg.AddModel(&weft.Model{Name: "default", Provider: "openai", Model: "gpt-4o-mini"})
	reg.AddPrompt(&weft.Prompt{Name: "support", ToolDescription: "Answers customers.", Model: "default",
		Prompt: weft.Text("You answer questions about orders."), Tools: []weft.ToolEntry{{Name: "lookup_order"}}})
	reg.AddAgent(&weft.Agent{Name: "support", SideA: weft.AgentSide{Prompt: "support"}})
	if diags := validate.Registry(reg); diags.HasErrors() {
		log.Fatal(diags.Err())
	}
	return reg
}

// exampleModel stands in for a real provider so the examples run offline: it calls lookup_order
// for a question and answers from the tool's result.
var exampleModel = weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == weft.RoleTool {
		return &weft.Response{Text: "Your " + last.Text() + "."}, nil
	}
	return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "call_1", Name: "lookup_order", Arguments: `{"order_id": 42}`}}}, nil
})

// Ask runs a message to its answer. A real program passes Providers (cmd/weft's wiring, or its
// own) instead of Override, and a persistent store such as sqlite.Open's.
func ExampleEngine_Ask() {
	store, err := memstore.New(memstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	eng, err := engine.New(engine.Options{Registry: exampleRegistry(), Store: store, Override: exampleModel})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "support"})
	if err != nil {
		log.Fatal(err)
	}
	res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Where is order 42?"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Last().Reason, "after", res.Steps, "steps:", res.Reply.Content)
	// Output: stop_on_response after 2 steps: Your order 42: shipped on Monday.
}

// Converse streams what happens as it happens, until the thread and its subagents are quiet.
func ExampleEngine_Converse() {
	store, _ := memstore.New(memstore.Options{})
	defer store.Close()
	eng, _ := engine.New(engine.Options{Registry: exampleRegistry(), Store: store, Override: exampleModel})
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "support"})
	for ev, err := range eng.Converse(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Where is order 42?"}}) {
		if err != nil {
			log.Fatal(err)
		}
		switch d := ev.Data.(type) {
		case engine.ToolStarted:
			fmt.Println(ev.Type, d.Name)
		case engine.ToolCompleted:
			fmt.Println(ev.Type, d.Name)
		case engine.MessageData:
			fmt.Printf("message %s %q\n", d.Message.Role, d.Message.Content)
		case engine.RunStopped:
			fmt.Println(ev.Type, d.Reason)
		}
	}
	// Output:
	// message user "Where is order 42?"
	// message assistant ""
	// tool_started lookup_order
	// message tool "order 42: shipped on Monday"
	// tool_completed lookup_order
	// message assistant "Your order 42: shipped on Monday."
	// run_stopped stop_on_response
}

// loggingStore is a custom store: any weft.Store implementation works, and embedding one lets a
// program observe or change a part of it — here, it counts committed transactions.
type loggingStore struct {
	weft.Store
	commits int
}

func (s *loggingStore) Tx(ctx context.Context, threadID string, f *weft.Fence, fn func(weft.Tx) error) error {
	err := s.Store.Tx(ctx, threadID, f, fn)
	if err == nil {
		s.commits++
	}
	return err
}

// A custom store plugs in through Options.Store. storetest.Run checks a new implementation
// against the whole store contract.
func Example_customStore() {
	inner, _ := memstore.New(memstore.Options{})
	store := &loggingStore{Store: inner}
	defer store.Close()
	eng, _ := engine.New(engine.Options{Registry: exampleRegistry(), Store: store, Override: exampleModel})
	ctx := context.Background()
	th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "support"})
	if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Where is order 42?"}}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("transactions committed:", store.commits > 0)
	// Output: transactions committed: true
}
