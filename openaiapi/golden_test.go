package openaiapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/internal/turn"
	"github.com/weft-agents/weft/internal/turn/turntest"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts")

// golden compares got with testdata/NAME (rewritten with -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden transcript:\n%s", name, got)
	}
}

// parts reads the events as a turn answering turntest.Input.
func parts(evs []engine.Event) ([]turn.Part, turn.Usage) {
	rd := &turn.Reader{Input: turntest.Input}
	var out []turn.Part
	for _, ev := range evs {
		out = rd.Read(ev, out)
	}
	return out, rd.Usage
}

func indent(v any) []byte {
	b, _ := json.MarshalIndent(v, "", "  ")
	return append(b, '\n')
}

// TestGoldenChat: a turn as a chat completion, streamed (the data of each SSE event) and whole.
func TestGoldenChat(t *testing.T) {
	ps, u := parts(turntest.Events())
	cc := &chatTranslator{id: "chatcmpl-" + turntest.Input, model: "chat", created: 1765108800}
	var stream bytes.Buffer
	stream.WriteString(turn.Encode(cc.chunk(map[string]any{"role": "assistant", "content": ""}, nil)) + "\n")
	for _, p := range ps {
		for _, f := range cc.read(p) {
			stream.WriteString(turn.Encode(f) + "\n")
		}
	}
	golden(t, "chat.stream.golden", stream.Bytes())
	golden(t, "chat.completion.golden", indent(cc.completion(u)))
}

// TestGoldenResponses: a turn as a Responses stream (type and data of each event) and the
// Response it builds; read back from the event log alone, the Response is the same.
func TestGoldenResponses(t *testing.T) {
	ps, u := parts(turntest.Events())
	var stream bytes.Buffer
	rb := &responseBuilder{resp: newResponse(responseID(turntest.Thread, turntest.Input), "chat", turntest.Thread, 1765108800)}
	rb.emit = func(typ string, v any) error {
		stream.WriteString(typ + " " + turn.Encode(v) + "\n")
		return nil
	}
	for _, p := range ps {
		if err := rb.read(p, u); err != nil {
			t.Fatal(err)
		}
	}
	golden(t, "responses.stream.golden", stream.Bytes())
	golden(t, "responses.response.golden", indent(rb.resp))

	recorded, ru := parts(turntest.Recorded())
	back := &responseBuilder{resp: newResponse(responseID(turntest.Thread, turntest.Input), "chat", turntest.Thread, 1765108800)}
	back.readAll(recorded, ru)
	if string(indent(back.resp)) != string(indent(rb.resp)) {
		t.Errorf("read back from the log:\n%s\nstreamed:\n%s", indent(back.resp), indent(rb.resp))
	}
}
