package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

// threadView is what GET /api/threads/{id} answers, in part.
type threadView struct {
	weft.Thread
	MessageCount int `json:"message_count"`
	Forks        []struct {
		ID      string `json:"id"`
		Message string `json:"message"`
		Before  bool   `json:"before"`
		UserID  string `json:"user_id"`
	} `json:"forks"`
}

// settled waits until the thread is not running and holds n messages.
func (e *env) settled(id, key string, n int) threadView {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var v threadView
		e.json("GET", "/api/threads/"+id, key, nil, 200, &v)
		if v.Status != weft.ThreadRunning && v.MessageCount == n {
			return v
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("thread %s: %s with %d messages, want %d", id, v.Status, v.MessageCount, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// messages lists a thread's top-level messages.
func (e *env) messages(id, key string) []weft.Message {
	e.t.Helper()
	var out struct{ Items []weft.Message }
	e.json("GET", "/api/threads/"+id+"/messages?include_silent=true", key, nil, 200, &out)
	return out.Items
}

// TestForkEditRetry: fork, edit and retry over HTTP make threads of their caller that run on
// from the original's history; the original lists its forks and does not change.
func TestForkEditRetry(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id := e.createThread(e.alice)
	events, _ := e.sse(ctx, "/api/threads/"+id+"/events", e.alice, "")
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "hello"}, 202, nil)
	until(t, events, "run_stopped", 10*time.Second)
	e.settled(id, e.alice, 4)
	orig := e.messages(id, e.alice)
	user, call, result, reply := orig[0], orig[1], orig[2], orig[3]
	if user.Role != weft.RoleUser || len(call.ToolCalls) != 1 || result.Role != weft.RoleTool || reply.Role != weft.RoleAssistant {
		t.Fatalf("original: %+v", orig)
	}
	_, msgsBefore := e.do("GET", "/api/threads/"+id+"/messages?include_silent=true&depth=9", e.alice, nil)
	_, callsBefore := e.do("GET", "/api/threads/"+id+"/tool-calls", e.alice, nil)
	eventsBefore, _ := e.store.Events(ctx, id, 0, 0)

	type forkAnswer struct {
		Thread    weft.Thread `json:"thread"`
		MessageID string      `json:"message_id"`
	}
	// Fork at the tool result: the caller's thread, with the first three messages, same ids.
	var f forkAnswer
	e.json("POST", "/api/threads/"+id+"/fork", e.alice, map[string]any{"at": result.ID}, 201, &f)
	if f.Thread.UserID != e.aliceID || f.Thread.ForkedFrom == nil || *f.Thread.ForkedFrom != (weft.ForkPoint{Thread: id, Message: result.ID}) {
		t.Fatalf("fork: %+v", f.Thread)
	}
	got := e.messages(f.Thread.ID, e.alice)
	if len(got) != 3 || got[0].ID != user.ID || got[1].ID != call.ID || got[2].ID != result.ID || got[2].Content != result.Content {
		t.Fatalf("fork's messages: %+v", got)
	}
	// Bob sees neither the original nor a way to fork it; an admin may, and owns the fork.
	e.json("POST", "/api/threads/"+id+"/fork", e.bob, map[string]any{"at": result.ID}, 404, nil)
	var adminFork forkAnswer
	e.json("POST", "/api/threads/"+id+"/fork", e.admin, map[string]any{"at": user.ID}, 201, &adminFork)
	if adminFork.Thread.UserID == e.aliceID || adminFork.Thread.UserID == "" {
		t.Errorf("the admin's fork belongs to %q", adminFork.Thread.UserID)
	}
	e.json("POST", "/api/threads/"+id+"/fork", e.alice, map[string]any{"at": "msg_missing"}, 404, nil)
	e.json("POST", "/api/threads/"+id+"/fork", e.alice, map[string]any{}, 400, nil)

	// Edit the user message: a fork with nothing before it, and the new text, answered.
	var ed forkAnswer
	e.json("POST", fmt.Sprintf("/api/threads/%s/messages/%s/edit", id, user.ID), e.alice, map[string]any{"content": "hello again"}, 201, &ed)
	if ed.MessageID == "" || ed.Thread.ForkedFrom == nil || !ed.Thread.ForkedFrom.Before || ed.Thread.ForkedFrom.Message != user.ID {
		t.Fatalf("edit: %+v", ed)
	}
	e.settled(ed.Thread.ID, e.alice, 4)
	got = e.messages(ed.Thread.ID, e.alice)
	if got[0].Content != "hello again" || got[0].ID == user.ID || got[3].Role != weft.RoleAssistant {
		t.Errorf("edited fork: %+v", got)
	}

	// Retry the reply: a fork of the three messages before it, answered again.
	var re forkAnswer
	e.json("POST", fmt.Sprintf("/api/threads/%s/messages/%s/retry", id, reply.ID), e.alice, nil, 201, &re)
	e.settled(re.Thread.ID, e.alice, 4)
	got = e.messages(re.Thread.ID, e.alice)
	if got[2].ID != result.ID || got[3].ID == reply.ID || got[3].Content != reply.Content {
		t.Errorf("retried fork: %+v", got)
	}

	// The routes take only their kind of message.
	e.json("POST", fmt.Sprintf("/api/threads/%s/messages/%s/edit", id, reply.ID), e.alice, map[string]any{"content": "x"}, 400, nil)
	e.json("POST", fmt.Sprintf("/api/threads/%s/messages/%s/retry", id, user.ID), e.alice, nil, 400, nil)
	e.json("POST", fmt.Sprintf("/api/threads/%s/messages/%s/retry", id, reply.ID), e.bob, nil, 404, nil)

	// The original lists the forks its caller may see, and is as it was.
	v := e.settled(id, e.alice, 4)
	if len(v.Forks) != 3 {
		t.Errorf("alice sees forks %+v", v.Forks)
	}
	var av threadView
	e.json("GET", "/api/threads/"+id, e.admin, nil, 200, &av)
	if len(av.Forks) != 4 {
		t.Errorf("the admin sees forks %+v", av.Forks)
	}
	var listed struct{ Items []weft.Thread }
	e.json("GET", "/api/threads?forked_from="+id, e.alice, nil, 200, &listed)
	if len(listed.Items) != 3 {
		t.Errorf("GET /api/threads?forked_from: %d threads", len(listed.Items))
	}
	_, msgsAfter := e.do("GET", "/api/threads/"+id+"/messages?include_silent=true&depth=9", e.alice, nil)
	_, callsAfter := e.do("GET", "/api/threads/"+id+"/tool-calls", e.alice, nil)
	eventsAfter, _ := e.store.Events(ctx, id, 0, 0)
	if !bytes.Equal(msgsBefore, msgsAfter) || !bytes.Equal(callsBefore, callsAfter) || !reflect.DeepEqual(eventsBefore, eventsAfter) {
		t.Errorf("the original changed")
	}
}

// TestEditKeepsAttachments: an edited message carries the original's attachments, which the
// fork holds as files of its own.
func TestEditKeepsAttachments(t *testing.T) {
	e := newEnv(t, envOptions{})
	id := e.createThread(e.alice)
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "read this",
		"attachments": []map[string]any{{"name": "note.txt", "mime_type": "text/plain", "data": []byte("the note")}}}, 202, nil)
	e.settled(id, e.alice, 4)
	user := e.messages(id, e.alice)[0]
	if len(user.Attachments) != 1 {
		t.Fatalf("posted message: %+v", user)
	}
	var ed struct {
		Thread weft.Thread `json:"thread"`
	}
	e.json("POST", fmt.Sprintf("/api/threads/%s/messages/%s/edit", id, user.ID), e.alice, map[string]any{"content": "read this, please"}, 201, &ed)
	e.settled(ed.Thread.ID, e.alice, 4)
	edited := e.messages(ed.Thread.ID, e.alice)[0]
	if edited.Content != "read this, please" || len(edited.Attachments) != 1 || edited.Attachments[0].Path != user.Attachments[0].Path {
		t.Fatalf("edited message: %+v", edited)
	}
	code, body := e.do("GET", "/api/threads/"+ed.Thread.ID+"/fs"+edited.Attachments[0].Path, e.alice, nil)
	if code != 200 || string(body) != "the note" {
		t.Errorf("the fork's copy of the attachment: %d %q", code, body)
	}
}
