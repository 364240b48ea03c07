package openaiapi

import (
	"encoding/json"
	"testing"

	"github.com/weft-agents/weft"
)

// TestInput: a chat's messages become the history and the posted message.
func TestInput(t *testing.T) {
	cases := []struct {
		name, msgs string
		history    int
		last       string
		param      string // of the error, "" = none
	}{
		{"one", `[{"role":"user","content":"hi"}]`, 0, "hi", ""},
		{"parts", `[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]`, 0, "ab", ""},
		{"history", `[{"role":"developer","content":"s"},{"role":"user","content":"u"},{"role":"assistant","content":"a"},{"role":"user","content":"x"}]`, 3, "x", ""},
		{"assistant without text", `[{"role":"assistant","content":null},{"role":"user","content":"x"}]`, 0, "x", ""},
		{"empty", `[]`, 0, "", "messages"},
		{"last assistant", `[{"role":"user","content":"x"},{"role":"assistant","content":"y"}]`, 0, "", "messages[1].role"},
		{"tool", `[{"role":"tool","content":"y"},{"role":"user","content":"x"}]`, 0, "", "messages[0].role"},
		{"unknown role", `[{"role":"robot","content":"x"}]`, 0, "", "messages[0].role"},
		{"empty last", `[{"role":"user","content":""}]`, 0, "", "messages[0].content"},
		{"image", `[{"role":"user","content":[{"type":"image_url"}]}]`, 0, "", "messages[0].content[0].type"},
		{"bad content", `[{"role":"user","content":3}]`, 0, "", "messages[0].content"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var msgs []chatMessage
			if err := json.Unmarshal([]byte(c.msgs), &msgs); err != nil {
				t.Fatal(err)
			}
			h, last, err := input(msgs)
			if c.param != "" {
				ae, ok := err.(*apiError)
				if !ok || ae.param != c.param || ae.status != 400 {
					t.Fatalf("error %v, want one on %s", err, c.param)
				}
				return
			}
			if err != nil || len(h) != c.history || last.Content != c.last || last.Role != weft.RoleUser {
				t.Fatalf("%v %+v %+v", err, h, last)
			}
		})
	}
}

// TestResponseID: an id names its thread and message, and nothing else parses.
func TestResponseID(t *testing.T) {
	id := responseID("thr_01", "msg_02")
	th, in, ok := parseResponseID(id)
	if !ok || th != "thr_01" || in != "msg_02" {
		t.Fatalf("%s: %s %s %v", id, th, in, ok)
	}
	for _, bad := range []string{"", "resp_", "resp_x", "resp_.y", "resp_x.", "chatcmpl-x.y"} {
		if _, _, ok := parseResponseID(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// FuzzInput: any JSON of messages gives a history and a user message, or a 400 naming a field.
func FuzzInput(f *testing.F) {
	f.Add(`[{"role":"user","content":"hi"}]`)
	f.Add(`[{"role":"system","content":[{"type":"text","text":"s"}]},{"role":"user","content":"x"}]`)
	f.Add(`[{"role":"assistant","content":null}]`)
	f.Fuzz(func(t *testing.T, s string) {
		var msgs []chatMessage
		if json.Unmarshal([]byte(s), &msgs) != nil {
			return
		}
		h, last, err := input(msgs)
		if err != nil {
			if ae, ok := err.(*apiError); !ok || ae.status != 400 || ae.message == "" {
				t.Fatalf("error %v", err)
			}
			return
		}
		if last.Role != weft.RoleUser || last.Content == "" || len(h) >= len(msgs) {
			t.Fatalf("%+v %+v", h, last)
		}
	})
}

// FuzzResponsesInput: input as text or items gives a user message or a 400.
func FuzzResponsesInput(f *testing.F) {
	f.Add(`"hello"`)
	f.Add(`[{"role":"user","content":[{"type":"input_text","text":"x"}]}]`)
	f.Add(`[{"type":"function_call_output"}]`)
	f.Fuzz(func(t *testing.T, s string) {
		_, last, err := responsesInput(json.RawMessage(s))
		if err != nil {
			if ae, ok := err.(*apiError); !ok || ae.status != 400 {
				t.Fatalf("error %v", err)
			}
			return
		}
		if last.Role != weft.RoleUser || last.Content == "" {
			t.Fatalf("%+v", last)
		}
	})
}

// FuzzParseResponseID: a parsed id is made again from its parts.
func FuzzParseResponseID(f *testing.F) {
	f.Add("resp_thr_1.msg_2")
	f.Fuzz(func(t *testing.T, s string) {
		th, in, ok := parseResponseID(s)
		if ok && responseID(th, in) != s {
			t.Fatalf("%q → %q %q", s, th, in)
		}
	})
}
