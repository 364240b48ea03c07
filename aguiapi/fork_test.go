package aguiapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/weft-agents/weft/aguiapi"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/internal/turn/turntest"
	"github.com/weft-agents/weft/memstore"
)

// TestForkAsThread: a fork of an AG-UI thread, tagged ag-ui-thread:{a new threadId} (as
// docs/ag-ui.md says), runs as that AG-UI thread: its first run starts with a MESSAGES_SNAPSHOT of
// the fork's history, then its new message; the original thread is unchanged.
func TestForkAsThread(t *testing.T) {
	st, _ := memstore.New(memstore.Options{})
	keys := turntest.Users(t, st, "alice")
	s := turntest.Start(t, st, turntest.Hello, keys, func(api *httpapi.Server) { aguiapi.Register(api) })
	run := func(thread, id, text string) string {
		resp, body := s.Do("POST", "/api/agents/helper/ag-ui", "alice",
			`{"threadId":"`+thread+`","runId":"r","messages":[{"id":"`+id+`","role":"user","content":"`+text+`"}]}`)
		if resp.StatusCode != 200 {
			t.Fatalf("run: %d %s", resp.StatusCode, body)
		}
		return body
	}
	run("t1", "u1", "first")
	_, list := s.Do("GET", "/api/threads", "alice", "")
	var threads struct{ Items []struct{ ID string } }
	_ = json.Unmarshal([]byte(list), &threads)
	orig := threads.Items[0].ID
	_, body := s.Do("GET", "/api/threads/"+orig+"/messages", "alice", "")
	var msgs struct{ Items []struct{ ID, Role string } }
	_ = json.Unmarshal([]byte(body), &msgs)
	resp, body := s.Do("POST", "/api/threads/"+orig+"/fork", "alice", `{"at":"`+msgs.Items[len(msgs.Items)-1].ID+`"}`)
	var fork struct{ Thread struct{ ID string } }
	if resp.StatusCode != 201 || json.Unmarshal([]byte(body), &fork) != nil {
		t.Fatalf("fork: %d %s", resp.StatusCode, body)
	}
	if resp, body := s.Do("PATCH", "/api/threads/"+fork.Thread.ID, "alice", `{"tags":["ag-ui-thread:t2"]}`); resp.StatusCode != 200 {
		t.Fatalf("tag: %d %s", resp.StatusCode, body)
	}
	got := run("t2", "u9", "on the fork")
	want := `"messages":[{"content":"first","id":"u1","role":"user"},{"content":"Hello there, friend.","id":"` + msgs.Items[1].ID +
		`","role":"assistant"},{"content":"on the fork","id":"u9","role":"user"}],"type":"MESSAGES_SNAPSHOT"`
	if !strings.Contains(got, want) || !strings.Contains(got, `"type":"RUN_FINISHED"`) {
		t.Errorf("the fork's first run:\n%s\nwant the snapshot %s", got, want)
	}
	for id, n := range map[string]int{orig: 2, fork.Thread.ID: 4} {
		_, body := s.Do("GET", "/api/threads/"+id+"/messages", "alice", "")
		if c := strings.Count(body, `"role":`); c != n {
			t.Errorf("thread %s holds %d messages, want %d: %s", id, c, n, body)
		}
	}
}
