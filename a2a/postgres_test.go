package a2a_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/weft-agents/weft/a2a"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/envcrypt"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/internal/pgtest"
	"github.com/weft-agents/weft/postgres"
	"github.com/weft-agents/weft/scripted"
)

// TestTwoNodesPostgres: two servers on one PostgreSQL database. A task sent to node A is seen by
// node B (get, list), and a stream opened on node B for a task node A runs follows it to the end.
func TestTwoNodesPostgres(t *testing.T) {
	_, dsn := pgtest.Schema(t)
	key := envcrypt.NewKey()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sc, err := scripted.Parse("s", []byte(`
- tool_calls: [{name: save_report, id: c1}]
- text: Saved on a node.
- delay: 300ms
  text: Streamed across nodes.
`))
	if err != nil {
		t.Fatal(err)
	}
	node := func(name string) *httptest.Server {
		store, err := postgres.Open(ctx, dsn, postgres.Options{Key: key})
		if err != nil {
			t.Fatal(err)
		}
		eng, err := engine.New(engine.Options{Registry: testRegistry(t), Store: store, Override: scripted.New(sc), RecordEvents: true, NodeID: name})
		if err != nil {
			t.Fatal(err)
		}
		sctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = eng.Serve(sctx, engine.ServeOptions{Workers: 4}) }()
		api := httpapi.New(httpapi.Options{Engine: eng, AdminKey: testKey,
			A2A: a2a.NewServer(a2a.ServerOptions{Engine: func() *engine.Engine { return eng }})})
		srv := httptest.NewServer(api.Handler())
		t.Cleanup(func() { srv.Close(); stop(); <-done; store.Close() })
		return srv
	}
	a, b := node("node-a"), node("node-b")
	ca, _ := newClient(t, ctx, a.URL)
	cb, _ := newClient(t, ctx, b.URL)

	res, err := ca.SendMessage(ctx, &sdk.SendMessageRequest{Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("Save a report."))})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*sdk.Task)
	got, err := cb.GetTask(ctx, &sdk.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != sdk.TaskStateCompleted || text(got.Status.Message) != "Saved on a node." || len(got.Artifacts) != 1 {
		t.Fatalf("node B's view: %+v %v", got, err)
	}
	list, err := cb.ListTasks(ctx, &sdk.ListTasksRequest{})
	if err != nil || len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID {
		t.Fatalf("node B's list: %+v %v", list, err)
	}

	// Sent to A without waiting; followed on B.
	m := sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("Again."))
	m.ContextID = task.ContextID
	res, err = ca.SendMessage(ctx, &sdk.SendMessageRequest{Message: m, Config: &sdk.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	second := res.(*sdk.Task)
	var last sdk.Event
	for ev, err := range cb.SubscribeToTask(ctx, &sdk.SubscribeToTaskRequest{ID: second.ID}) {
		if err != nil {
			t.Fatal(err)
		}
		last = ev
	}
	var final sdk.TaskStatus
	switch e := last.(type) {
	case *sdk.TaskStatusUpdateEvent:
		final = e.Status
	case *sdk.Task:
		final = e.Status
	}
	if final.State != sdk.TaskStateCompleted || text(final.Message) != "Streamed across nodes." {
		t.Fatalf("followed on node B: %+v", last)
	}
}
