package aisdkapi_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft/aisdkapi"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/internal/turn/turntest"
	"github.com/weft-agents/weft/memstore"
)

// slowStory streams a story slowly, then answers the next call at once.
const slowStory = `version: 1
options: {real_time: true, chunk_size: 5, chunk_delay: 100ms}
responses:
  - match: {prompt: helper}
    text: "Once upon a time there was a story so long that nobody waited for its end, and it went on and on and on."
  - match: {prompt: helper}
    text: "A haiku instead."
`

// TestInterruptedTurn: on a thread whose default is if_busy interrupt, a chat message sent while
// the story streams stops that run: the first request's stream finishes with the stop reason
// interrupted and the message that interrupted it (message metadata), the second's is the new run's turn alone, and nothing of the story is stored.
func TestInterruptedTurn(t *testing.T) {
	st, _ := memstore.New(memstore.Options{})
	keys := turntest.Users(t, st, "alice")
	s := turntest.Start(t, st, slowStory, keys, func(api *httpapi.Server) { aisdkapi.Register(api) })
	post := func(id, text string) string {
		_, body := s.Do("POST", "/api/agents/helper/chat", "alice",
			`{"id":"c1","trigger":"submit-message","messages":[{"id":"`+id+`","role":"user","parts":[{"type":"text","text":"`+text+`"}]}]}`)
		return body
	}
	first := make(chan string, 1)
	go func() { first <- post("u1", "tell a story") }()
	var threadID string
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := s.Do("GET", "/api/threads", "alice", "")
		var list struct {
			Items []struct{ ID, Status string }
		}
		_ = json.Unmarshal([]byte(body), &list)
		if len(list.Items) == 1 && list.Items[0].Status == "running" {
			threadID = list.Items[0].ID
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the story's run did not start: %s", body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The run is running; its model call starts a moment later (an interrupt before it would
	// stop the run before it asked for the story). The story streams for two seconds.
	time.Sleep(300 * time.Millisecond)
	if resp, body := s.Do("PATCH", "/api/threads/"+threadID, "alice", `{"if_busy":"interrupt"}`); resp.StatusCode != 200 {
		t.Fatalf("PATCH: %d %s", resp.StatusCode, body)
	}
	second := post("u2", "a haiku please")
	story := <-first
	if !strings.Contains(story, `"weftStopReason":"interrupted"`) || !strings.Contains(story, `"finishReason":"other"`) ||
		!strings.Contains(story, `"weftInterruptedBy":"msg_`) || !strings.Contains(story, `"weftRolledBack":false`) ||
		!strings.Contains(story, `"weftRemovedMessageIds":[]`) {
		t.Errorf("the interrupted turn's stream does not finish interrupted:\n%s", story)
	}
	if !strings.Contains(second, `"delta":"A hai"`) || strings.Contains(second, "Once") || !strings.Contains(second, `"weftStopReason":"stop_on_response"`) {
		t.Errorf("the interrupting message's stream is not the new run's turn alone:\n%s", second)
	}
	msgs := s.Messages("alice")
	if strings.Contains(msgs, "Once upon") || !strings.Contains(msgs, "A haiku instead.") || strings.Count(msgs, `"role":`) != 3 {
		t.Errorf("messages: %s", msgs)
	}
}
