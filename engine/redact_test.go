package engine_test

import (
	"context"
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/scripted"
)

// capture forwards model calls to a script and keeps each request as the provider got it.
type capture struct {
	weft.Provider
	mu   sync.Mutex
	reqs []string
}

func (c *capture) Call(ctx context.Context, req *weft.Request, onChunk func(weft.Chunk)) (*weft.Response, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, string(req.TraceJSON()))
	c.mu.Unlock()
	return c.Provider.Call(ctx, req, onChunk)
}

// TestToolArgumentSecretRedactedInEverySink: a secret holding `"`, `\` or a non-ASCII character,
// written by the model JSON-escaped (or percent-encoded) in a tool call's arguments, is in no
// message row, tool-call record, live or recorded event, log body or later model request — while
// the tool still gets the arguments as written (issue 47, row 1: before the fix each encoded form
// passed through all of them, since the redactor matched only the raw text).
func TestToolArgumentSecretRedactedInEverySink(t *testing.T) {
	cases := []struct{ name, secret, args string }{
		{"quote", `q"uote-5150`, `{"what": "x q\"uote-5150 x"}`},
		{"backslash", `back\slash-77`, `{"what": "x back\\slash-77 x"}`},
		{"unicode escape", "café-4411", `{"what": "caf\u00e9-4411"}`},
		{"any escape", `q"uote-5150`, `{"what": "q\u0022uote-5150"}`},
		{"in a key", `q"uote-5150`, `{"q\"uote-5150": "x"}`},
		{"percent-encoded", `q"uote 5150`, `{"what": "https://x/?t=q%22uote+5150"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ran []string
			reg := registry([]*weft.Tool{recorder("look", &ran, "looked")}, nil)
			script := "- tool_calls: [{name: look, id: call_1, arguments: '" + c.args + "'}]\n- text: Done.\n- text: Again.\n"
			sc, err := scripted.Parse("script.yaml", []byte(script))
			if err != nil {
				t.Fatal(err)
			}
			st, err := memstore.New(memstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			prov := &capture{Provider: scripted.New(sc)}
			var mu sync.Mutex
			var live []string
			eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: prov, RecordEvents: true,
				OnEvent: func(e engine.Event) {
					b, _ := json.Marshal(e.Data)
					mu.Lock()
					live = append(live, e.Type+" "+string(b))
					mu.Unlock()
				}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant", Env: map[string]string{"SECRET_TOKEN": c.secret}})
			if err != nil {
				t.Fatal(err)
			}
			for _, text := range []string{"go", "again"} {
				if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Role: weft.RoleUser, Content: text}); err != nil {
					t.Fatal(err)
				}
				if _, err := eng.Run(ctx, th.ID); err != nil {
					t.Fatal(err)
				}
			}
			var got, want any
			if len(ran) != 1 || json.Unmarshal([]byte(strings.TrimPrefix(ran[0], "look ")), &got) != nil ||
				json.Unmarshal([]byte(c.args), &want) != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("the tool ran with %q, want the arguments the model wrote, %s", ran, c.args)
			}
			sinks := map[string][]string{"request": prov.reqs, "event": live}
			msgs, _ := st.Messages(ctx, th.ID, weft.MessageQuery{Limit: 100})
			for _, m := range msgs {
				b, _ := json.Marshal(m)
				sinks["message"] = append(sinks["message"], string(b))
			}
			recs, _ := st.ToolCalls(ctx, th.ID)
			for _, r := range recs {
				b, _ := json.Marshal(r)
				sinks["tool call"] = append(sinks["tool call"], string(b))
			}
			evs, _ := st.Events(ctx, th.ID, 0, 0)
			for _, e := range evs {
				sinks["recorded event"] = append(sinks["recorded event"], string(e.Data))
			}
			logs, _ := st.Logs(ctx, th.ID, weft.LogQuery{})
			for _, l := range logs {
				full, err := st.Log(ctx, th.ID, l.ID)
				if err != nil {
					t.Fatal(err)
				}
				sinks["log body"] = append(sinks["log body"], string(full.RequestBody), string(full.ResponseBody))
			}
			if len(prov.reqs) != 3 || len(recs) != 1 || len(logs) != 3 || len(evs) == 0 {
				t.Fatalf("%d requests, %d call records, %d logs, %d events", len(prov.reqs), len(recs), len(logs), len(evs))
			}
			if !strings.Contains(strings.Join(sinks["tool call"], ""), "[redacted]") {
				t.Errorf("the call record does not show what it hid: %s", sinks["tool call"])
			}
			for sink, texts := range sinks {
				for _, s := range texts {
					if holdsSecret(s, c.secret) {
						t.Errorf("%s holds the secret: %s", sink, s)
					}
				}
			}
		})
	}
}

// holdsSecret reports whether s holds secret raw, percent-encoded, or in any JSON string value at
// any depth of JSON nested in strings.
func holdsSecret(s, secret string) bool {
	if strings.Contains(s, secret) {
		return true
	}
	if u, err := url.QueryUnescape(s); err == nil && u != s && holdsSecret(u, secret) {
		return true
	}
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return false
	}
	return valueHolds(v, secret)
}

func valueHolds(v any, secret string) bool {
	switch x := v.(type) {
	case string:
		return holdsSecret(x, secret)
	case map[string]any:
		for k, e := range x {
			if holdsSecret(k, secret) || valueHolds(e, secret) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if valueHolds(e, secret) {
				return true
			}
		}
	}
	return false
}
