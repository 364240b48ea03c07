package sqlite

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

var codecTime = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)

// codecMessages are a run's typical rows: a user message, an assistant message with a tool call
// and metadata, and the tool's result.
var codecMessages = []weft.Message{
	{ID: "msg_01jq3v5c2m8x4k7r9t1w6y0z3a", Seq: 1, CreatedAt: codecTime, Role: weft.RoleUser, Status: weft.MessageCompleted,
		Content: "Find the three largest files under /data and summarise what each holds."},
	{ID: "msg_01jq3v5c2m8x4k7r9t1w6y0z3b", Seq: 2, CreatedAt: codecTime, Role: weft.RoleAssistant, Status: weft.MessageCompleted,
		Content:   strings.Repeat("I will list the directory first, then read the largest files. ", 4),
		Reasoning: "The user wants sizes; find gives them.",
		ToolCalls: []weft.ToolCall{{ID: "call_1", Name: "find", Arguments: `{"glob":"/data/**"}`}},
		LogID:     "log_01jq3v5c2m8x4k7r9t1w6y0z3c", RunID: "run_01jq3v5c2m8x4k7r9t1w6y0z3d",
		Metadata: map[string]any{"model": "gpt-x", "usage": map[string]any{"input": 120, "output": 40}}},
	{ID: "msg_01jq3v5c2m8x4k7r9t1w6y0z3e", Seq: 3, CreatedAt: codecTime, Role: weft.RoleTool, Status: weft.MessageCompleted,
		ToolCallID: "call_1", Name: "find", ToolStatus: weft.ToolSuccess,
		Content: "/data/a.csv 120400\n/data/b.json 88000\n/data/c.txt 4100\n"},
}

// BenchmarkMessageCodec compares the packed doc with encoding/json of the same message (what the
// postgres store keeps): encode is what a Tx does per written message, decode what a read does per
// row scanned. The packed decode starts from a string, as a row is scanned.
func BenchmarkMessageCodec(b *testing.B) {
	packed := make([]string, len(codecMessages))
	jsons := make([][]byte, len(codecMessages))
	for i := range codecMessages {
		m := &codecMessages[i]
		md, _ := json.Marshal(m.Metadata)
		if m.Metadata == nil {
			md = nil
		}
		packed[i] = string(messageDoc(m, m.Seq, m.CreatedAt, md))
		jsons[i], _ = json.Marshal(m)
	}
	b.Run("encode/packed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i := range codecMessages {
				m := &codecMessages[i]
				var md []byte
				if m.Metadata != nil {
					md, _ = marshal(m.Metadata)
				}
				_ = messageDoc(m, m.Seq, m.CreatedAt, md)
			}
		}
	})
	b.Run("encode/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i := range codecMessages {
				_, _ = json.Marshal(&codecMessages[i])
			}
		}
	})
	b.Run("decode/packed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, doc := range packed {
				var m weft.Message
				if err := decodeMessage(doc, &m); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("decode/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, doc := range jsons {
				var m weft.Message
				if err := json.Unmarshal(doc, &m); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Logf("bytes per 3 messages: packed %d, json %d", len(packed[0])+len(packed[1])+len(packed[2]), len(jsons[0])+len(jsons[1])+len(jsons[2]))
}

// splitThenDecode is what runStartRows did before decodeMessages: split the concatenation into
// docs, then decode each.
func splitThenDecode(set, threadID string) ([]weft.Message, error) {
	var out []weft.Message
	for docs := (docList{s: set, first: mSeq}); docs.more(); {
		doc := docs.next()
		if docs.err != nil {
			return out, docs.err
		}
		out = append(out, weft.Message{ThreadID: threadID})
		if err := decodeMessage(doc, &out[len(out)-1]); err != nil {
			return out, err
		}
	}
	return out, nil
}

// FuzzMessageDocs: whatever a run start's concatenated message docs hold, decoding them in one walk
// never panics and reads what splitting them and decoding each doc reads, or fails as it does.
func FuzzMessageDocs(f *testing.F) {
	var all string
	for i := range codecMessages {
		m := &codecMessages[i]
		md, _ := json.Marshal(m.Metadata)
		if m.Metadata == nil {
			md = nil
		}
		doc := string(messageDoc(m, m.Seq, m.CreatedAt, md))
		f.Add(doc)
		all += doc
	}
	f.Add(all)
	f.Add(all[:len(all)/2])
	f.Add("")
	f.Add("\x01\x01\x02")
	f.Fuzz(func(t *testing.T, set string) {
		got, err := decodeMessages(set, "thr", nil)
		want, wantErr := splitThenDecode(set, "thr")
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("decodeMessages error %v, split-then-decode %v", err, wantErr)
		}
		if err != nil {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("decodeMessages read %d messages, split-then-decode %d", len(got), len(want))
		}
		for i := range got {
			g, _ := json.Marshal(got[i])
			w, _ := json.Marshal(want[i])
			if string(g) != string(w) {
				t.Fatalf("message %d: %s, want %s", i, g, w)
			}
		}
	})
}
