package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/internal/pgtest"
	"github.com/weft-agents/weft/postgres"
)

// TestQueuedElsewhereRunsAtOnce: on a store several processes share, a message that a process
// which does not serve queues (a CLI's push) is answered by a serving process at once — the push
// notifies it — not when its sweep comes round a lease TTL later.
func TestQueuedElsewhereRunsAtOnce(t *testing.T) {
	_, dsn := pgtest.Schema(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func() *postgres.Store {
		st, err := postgres.Open(ctx, dsn, postgres.Options{Key: make([]byte, 32)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		return &weft.Response{Text: "answered: " + req.Messages[len(req.Messages)-1].Text()}, nil
	})
	// The sweep would find the thread only after an hour.
	server, err := engine.New(engine.Options{Registry: registry(nil, nil), Store: open(), Override: model, LeaseTTL: time.Hour, NodeID: "server"})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		served <- server.Serve(ctx, engine.ServeOptions{Started: func() { close(started) }})
	}()
	<-started
	pusherStore := open()
	pusher, err := engine.New(engine.Options{Registry: registry(nil, nil), Store: pusherStore, Override: model, LeaseTTL: time.Hour, NodeID: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"first", "second"} {
		th, err := pusher.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pusher.Send(ctx, th.ID, weft.NewMessage{Content: text}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			msgs, err := pusherStore.Messages(ctx, th.ID, weft.MessageQuery{Roles: []weft.Role{weft.RoleAssistant}})
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) == 1 && msgs[0].Content == "answered: "+text {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("message %d queued by a process that does not serve was not answered in 10 s: %+v", i, msgs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}
