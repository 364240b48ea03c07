package a2a_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/a2a"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/scripted"
)

// drainingStore runs a hook once, right after the first read of a thread's queue or events that
// follows arming it: a run on another node draining the queue between a reader's two reads.
type drainingStore struct {
	weft.Store
	mu   sync.Mutex
	hook func()
}

func (s *drainingStore) fire() {
	s.mu.Lock()
	h := s.hook
	s.hook = nil
	s.mu.Unlock()
	if h != nil {
		h()
	}
}

func (s *drainingStore) Queued(ctx context.Context, threadID string) ([]weft.QueuedMessage, error) {
	q, err := s.Store.Queued(ctx, threadID)
	s.fire()
	return q, err
}

func (s *drainingStore) Events(ctx context.Context, threadID string, after int64, limit int) ([]weft.EventRecord, error) {
	ev, err := s.Store.Events(ctx, threadID, after, limit)
	s.fire()
	return ev, err
}

// TestTaskFoundWhileDrained: a task returned at once is found by a reader while a run drains its
// message from the queue between the reader's reads (as a second node's run does): the reader
// sees it queued or recorded, never neither.
func TestTaskFoundWhileDrained(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sc, err := scripted.Parse("s", []byte("- text: Done.\n"))
	if err != nil {
		t.Fatal(err)
	}
	mem, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store := &drainingStore{Store: mem}
	// No Serve: a sent message stays queued until the test runs its thread.
	eng, err := engine.New(engine.Options{Registry: testRegistry(t), Store: store, Override: scripted.New(sc), RecordEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	api := httpapi.New(httpapi.Options{Engine: eng, AdminKey: testKey,
		A2A: a2a.NewServer(a2a.ServerOptions{Engine: func() *engine.Engine { return eng }})})
	api.SetReady(true)
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()
	c, _ := newClient(t, ctx, srv.URL)

	res, err := c.SendMessage(ctx, &sdk.SendMessageRequest{Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("Hi.")),
		Config: &sdk.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*sdk.Task)
	if task.Status.State != sdk.TaskStateSubmitted {
		t.Fatalf("returned at once: %s, want submitted", task.Status.State)
	}
	var runErr error
	store.mu.Lock()
	store.hook = func() { _, runErr = eng.Run(ctx, task.ContextID) }
	store.mu.Unlock()
	got, err := c.GetTask(ctx, &sdk.GetTaskRequest{ID: task.ID})
	if runErr != nil {
		t.Fatal(runErr)
	}
	if err != nil {
		t.Fatalf("the task drained between the reader's reads: %v", err)
	}
	if got.Status.State != sdk.TaskStateSubmitted && got.Status.State != sdk.TaskStateCompleted {
		t.Fatalf("state %s", got.Status.State)
	}
}
