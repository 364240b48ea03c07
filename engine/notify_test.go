package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/internal/pgtest"
	"github.com/weft-agents/weft/postgres"
)

// openPostgres opens a store on dsn (a process of its own, as far as the database can tell), closed
// when the test ends.
func openPostgres(t testing.TB, dsn string) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{Key: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestQueuedElsewhereRunsAtOnce: on a store several processes share, a message that a process
// which does not serve queues (a CLI's push) is answered by a serving process at once — the push
// notifies it — not when its sweep comes round a lease TTL later.
func TestQueuedElsewhereRunsAtOnce(t *testing.T) {
	_, dsn := pgtest.Schema(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		return &weft.Response{Text: "answered: " + req.Messages[len(req.Messages)-1].Text()}, nil
	})
	// The sweep would find the thread only after an hour.
	server, err := engine.New(engine.Options{Registry: registry(nil, nil), Store: openPostgres(t, dsn), Override: model, LeaseTTL: time.Hour, NodeID: "server"})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		served <- server.Serve(ctx, engine.ServeOptions{Started: func() { close(started) }})
	}()
	<-started
	pusherStore := openPostgres(t, dsn)
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

// TestRowChangedElsewhereMidRun: on PostgreSQL a run's step starts from the thread row its last
// transaction left; another node queueing a message while the model answers makes that step's
// first attempt stale, and it runs again. Every message is stored once and in order, the queued
// one joins the run at its next step boundary and is answered, and the run's stop counts once.
func TestRowChangedElsewhereMidRun(t *testing.T) {
	_, dsn := pgtest.Schema(t)
	ctx := t.Context()
	here, elsewhere := openPostgres(t, dsn), openPostgres(t, dsn)
	var threadID string
	pushed := false
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, chunk func(weft.Chunk)) (*weft.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == weft.RoleUser && last.Text() == "first" && !pushed {
			pushed = true
			if err := elsewhere.PushQueue(ctx, &weft.QueuedMessage{ThreadID: threadID, Content: "second"}); err != nil {
				return nil, err
			}
		}
		if last.Role == weft.RoleUser {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: weft.NewID("call_"), Name: "lookup", Arguments: `{"order_id":42}`}}}, nil
		}
		return &weft.Response{Text: "answered"}, nil
	})
	eng, err := engine.New(engine.Options{Registry: lookupRegistry(), Store: here, Override: model, NodeID: "here"})
	if err != nil {
		t.Fatal(err)
	}
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if err != nil {
		t.Fatal(err)
	}
	threadID = th.ID
	res, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "first"}})
	if err != nil {
		t.Fatal(err)
	}
	if !pushed || len(res.Stops) != 1 {
		t.Errorf("pushed %v, stops %+v", pushed, res.Stops)
	}
	msgs, err := here.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, m := range msgs {
		if m.Seq != int64(i+1) {
			t.Errorf("message %d has seq %d", i, m.Seq)
		}
		got = append(got, string(m.Role)+":"+m.Content)
	}
	want := []string{"user:first", "assistant:", "tool:shipping today",
		"user:second", "assistant:", "tool:shipping today", "assistant:answered"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("messages:\n got %q\nwant %q", got, want)
	}
	calls, err := here.ToolCalls(ctx, th.ID)
	if err != nil || len(calls) != 2 || calls[0].Status != weft.CallDone || calls[1].Status != weft.CallDone {
		t.Errorf("tool calls: %+v, %v", calls, err)
	}
	state, err := here.ExecState(ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Stops int `json:"stops"`
	}
	if err := json.Unmarshal(state["run"], &doc); err != nil || doc.Stops != 1 {
		t.Errorf("run state %s: stops %d, %v", state["run"], doc.Stops, err)
	}
}
