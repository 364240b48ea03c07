package aisdkapi

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

// transcript is the UI message stream of the events read as a turn: one chunk a line.
func transcript(rd *turn.Reader, evs []engine.Event) []byte {
	tr := &translator{messageID: MessageID(turntest.Input)}
	var b bytes.Buffer
	emit := func(chunks []map[string]any) {
		for _, c := range chunks {
			enc, _ := json.Marshal(c)
			b.Write(enc)
			b.WriteByte('\n')
		}
	}
	emit(tr.start())
	var parts []turn.Part
	for _, ev := range evs {
		parts = rd.Read(ev, parts[:0])
		for _, p := range parts {
			emit(tr.read(p))
		}
	}
	return b.Bytes()
}

// TestGolden: a turn as a UI message stream, live and resumed during its second call (the first
// message and its reasoning come whole, the rest as it was streamed).
func TestGolden(t *testing.T) {
	cases := []struct {
		file   string
		reader turn.Reader
	}{
		{"stream.golden", turn.Reader{Input: turntest.Input}},
		{"resumed.golden", turn.Reader{Input: turntest.Input, AfterInput: true, ResumeAt: 12}},
	}
	for _, c := range cases {
		got := transcript(&c.reader, turntest.Events())
		path := filepath.Join("testdata", c.file)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -update writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs:\n%s", c.file, got)
		}
	}
}
