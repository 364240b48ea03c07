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

const twoAnswers = `version: 1
responses:
  - match: {prompt: helper}
    text: First answer.
  - match: {prompt: helper}
    text: Second answer.
  - match: {prompt: helper}
    text: Second answer, again.
  - match: {prompt: helper}
    text: Third answer.
`

// TestRegenerate: regenerate-message of a chat's second answer streams a new answer, under the
// same UI message id, from a fork cut before the old one; the chat id names the fork from then on
// (the next message continues it), and the original thread keeps both old answers.
func TestRegenerate(t *testing.T) {
	st, _ := memstore.New(memstore.Options{})
	keys := turntest.Users(t, st, "alice")
	s := turntest.Start(t, st, twoAnswers, keys, func(api *httpapi.Server) { aisdkapi.Register(api) })
	post := func(trigger, messageID string, texts ...string) string {
		var msgs []string
		for i, text := range texts {
			msgs = append(msgs, `{"id":"u`+string(rune('1'+i))+`","role":"user","parts":[{"type":"text","text":"`+text+`"}]}`)
		}
		resp, body := s.Do("POST", "/api/agents/helper/chat", "alice", `{"id":"c1","trigger":"`+trigger+`","messageId":"`+messageID+
			`","messages":[`+strings.Join(msgs, ",")+`]}`)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", trigger, resp.StatusCode, body)
		}
		return body
	}
	post("submit-message", "", "one")
	second := post("submit-message", "", "one", "two")
	var start struct{ MessageID string }
	_ = json.Unmarshal([]byte(strings.TrimPrefix(strings.SplitN(second, "\n", 2)[0], "data: ")), &start)
	if !strings.HasPrefix(start.MessageID, "answer-msg_") {
		t.Fatalf("the second answer's start: %s", second)
	}
	again := post("regenerate-message", start.MessageID, "one", "two")
	if !strings.Contains(again, `"messageId":"`+start.MessageID+`"`) || !strings.Contains(again, `"delta":"Second answer, again."`) ||
		!strings.Contains(again, `"weftStopReason":"stop_on_response"`) {
		t.Errorf("the regenerated answer:\n%s", again)
	}
	post("submit-message", "", "one", "two", "three")

	_, list := s.Do("GET", "/api/threads", "alice", "")
	var threads struct {
		Items []struct {
			ID         string
			Tags       []string
			ForkedFrom *struct{ Thread string } `json:"forked_from"`
		}
	}
	if err := json.Unmarshal([]byte(list), &threads); err != nil || len(threads.Items) != 2 {
		t.Fatalf("threads: %s", list)
	}
	texts := func(id string) string {
		_, body := s.Do("GET", "/api/threads/"+id+"/messages", "alice", "")
		var msgs struct{ Items []struct{ Content string } }
		_ = json.Unmarshal([]byte(body), &msgs)
		var out []string
		for _, m := range msgs.Items {
			out = append(out, m.Content)
		}
		return strings.Join(out, "|")
	}
	for _, th := range threads.Items {
		switch {
		case th.ForkedFrom != nil:
			if got := texts(th.ID); got != "one|First answer.|two|Second answer, again.|three|Third answer." || strings.Join(th.Tags, ",") != "ai-sdk-chat:c1" {
				t.Errorf("the fork: %s, tags %v", got, th.Tags)
			}
		default:
			if got := texts(th.ID); got != "one|First answer.|two|Second answer." || len(th.Tags) != 0 {
				t.Errorf("the original: %s, tags %v", got, th.Tags)
			}
		}
	}
}

// TestRegenerateResumed: a regenerated answer still streaming is resumed on the chat's stream
// route (the chat id names the fork, whose log never stored the message it answers again): the
// resumed stream holds the whole new answer and finishes.
func TestRegenerateResumed(t *testing.T) {
	st, _ := memstore.New(memstore.Options{})
	keys := turntest.Users(t, st, "alice")
	s := turntest.Start(t, st, `version: 1
options: {real_time: true, chunk_size: 4, chunk_delay: 30ms}
responses:
  - match: {prompt: helper}
    text: First.
  - match: {prompt: helper}
    text: "Again, and this time at length: a regenerated answer that takes a second or two to stream in full."
`, keys, func(api *httpapi.Server) { aisdkapi.Register(api) })
	body := func(trigger, messageID string) string {
		return `{"id":"c1","trigger":"` + trigger + `","messageId":"` + messageID + `","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"one"}]}]}`
	}
	_, first := s.Do("POST", "/api/agents/helper/chat", "alice", body("submit-message", ""))
	var start struct{ MessageID string }
	_ = json.Unmarshal([]byte(strings.TrimPrefix(strings.SplitN(first, "\n", 2)[0], "data: ")), &start)
	done := make(chan string, 1)
	go func() {
		_, b := s.Do("POST", "/api/agents/helper/chat", "alice", body("regenerate-message", start.MessageID))
		done <- b
	}()
	var resumed string
	for range 200 {
		resp, b := s.Do("GET", "/api/agents/helper/chat/c1/stream", "alice", "")
		if resp.StatusCode == 200 {
			resumed = b
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	<-done
	var text strings.Builder
	for _, line := range strings.Split(resumed, "\n") {
		var c struct{ Type, Delta string }
		if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &c) == nil && c.Type == "text-delta" {
			text.WriteString(c.Delta)
		}
	}
	if text.String() != "Again, and this time at length: a regenerated answer that takes a second or two to stream in full." ||
		!strings.Contains(resumed, `"messageId":"`+start.MessageID+`"`) || !strings.Contains(resumed, `"type":"finish"`) {
		t.Errorf("the resumed stream (text %q):\n%s", text.String(), resumed)
	}
}
