package postgres

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

// messageDocs are docs as the store writes them, of messages of each kind.
func messageDocs(t testing.TB) [][]byte {
	at := time.Date(2026, 11, 27, 15, 4, 5, 123456789, time.UTC)
	ms := []weft.Message{
		{},
		{ID: "msg_1", Role: weft.RoleUser, Side: weft.SideB, Content: "Where is my order 42?", Status: weft.MessageCompleted, CreatedAt: at},
		{ID: "msg_2", Role: weft.RoleAssistant, Side: weft.SideA, Status: weft.MessageCompleted, Prompt: "support", LogID: "log_1",
			RunID: "run_1", ToolCalls: []weft.ToolCall{{ID: "call_1", Name: "lookup", Arguments: `{"order_id":42}`}, {ID: "call_2", Name: "x"}},
			Metadata: map[string]any{"queued": true, "n": 3.5, "nested": map[string]any{"a": []any{"b", nil}}}, Reasoning: "think", CreatedAt: at},
		{ID: "msg_3", Role: weft.RoleTool, Side: weft.SideA, Name: "lookup", ToolCallID: "call_1", ToolStatus: weft.ToolError,
			Content: "{\"status\":\"shipped\",\n\t\"html\":\"<b>&amp;</b>\", \"slash\":\"a/b\\\\c\", \"uni\":\"é → 😀 \u2028\u0001\"}", Status: weft.MessageFailed,
			Silent: true, Depth: 3, ParentID: "msg_0", Attachments: []weft.Attachment{{Path: "/a.png", Name: "a.png", MimeType: "image/png", Size: 12}}, CreatedAt: at},
		{ID: "msg_4", Seq: -7, Depth: -1, Content: "invalid \xff utf-8", CreatedAt: at.In(time.FixedZone("x", 3600))},
	}
	var out [][]byte
	for i := range ms {
		d, err := json.Marshal(&ms[i])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// TestMessageJSON: docs the store writes, and docs it did not, decode as json.Unmarshal decodes
// them; the store's own docs all take the fast path.
func TestMessageJSON(t *testing.T) {
	docs := messageDocs(t)
	for i, d := range docs {
		var m weft.Message
		fast := fastMessage(d, &m)
		if !fast {
			t.Errorf("doc %d: not on the fast path: %s", i, d)
		}
		checkMessageJSON(t, d)
	}
	for _, d := range []string{
		`{"id":"a","id":"b"}`, `{"ID":"a"}`, `{"seq":1.0}`, `{"seq":1e2}`, `{"seq":01}`, `{"seq":-}`, `{"seq":99999999999999999999}`,
		`{"silent":null}`, `{"content":null}`, `{"tool_calls":[]}`, `{"tool_calls":null}`, `{"tool_calls":[{"id":"a","id":"b"}]}`,
		`{"tool_calls":[{}]}`, `{"tool_calls":[{"id":"a","name":"x"}],"tool_calls":[{"id":"b"}]}`, `{"tool_calls":[{"ID":"a"}]}`, `{"metadata":{"a":1},"metadata":{"b":2}}`, `{"metadata":[1]}`,
		`{"content":"\ud83d\ude00"}`, `{"content":"\ud83d"}`, `{"content":"\u00e9\u0041\/"}`, `{"content":"a\qb"}`,
		`{"created_at":"2026-11-27T15:04:05Z"}`, `{"created_at":"2026-11-27"}`, `{"created_at":5}`, ` { "id" : "a" , "seq" : 3 } `,
		`{"id":"a"} x`, `{"id":"a",}`, `{"id":"a"`, `null`, `[]`, `{}`, `{"attachments":[{"path":"/x"}],"x":1}`, "{\"content\":\"a\tb\"}", "{\"content\":\"a\xffb\"}", "{\"content\":\"a\\n\xffb\"}",
	} {
		checkMessageJSON(t, []byte(d))
	}
}

// checkMessageJSON fails when decodeMessageJSON decodes doc otherwise than json.Unmarshal, or
// takes its fast path for a doc json.Unmarshal refuses.
func checkMessageJSON(t *testing.T, doc []byte) {
	t.Helper()
	var want, got, fast weft.Message
	wantErr := json.Unmarshal(doc, &want)
	gotErr := decodeMessageJSON(doc, &got)
	if (wantErr == nil) != (gotErr == nil) || wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decoded %+v (%v), json.Unmarshal %+v (%v)", doc, got, gotErr, want, wantErr)
	}
	if fastMessage(doc, &fast) && (wantErr != nil || !reflect.DeepEqual(fast, want)) {
		t.Fatalf("%q: fast path %+v, json.Unmarshal %+v (%v)", doc, fast, want, wantErr)
	}
}

func FuzzMessageJSON(f *testing.F) {
	for _, d := range messageDocs(f) {
		f.Add(d)
	}
	f.Add([]byte(`{"tool_calls":[{"id":"a"},{"name":"b","arguments":"{}"}],"depth":2,"silent":false}`))
	f.Fuzz(func(t *testing.T, doc []byte) { checkMessageJSON(t, doc) })
}
