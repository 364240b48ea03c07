package aguiapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/weft-agents/weft/internal/turn"
	"github.com/weft-agents/weft/internal/turn/turntest"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts")

// TestGolden: a turn as AG-UI events, live and resumed during its second model call.
func TestGolden(t *testing.T) {
	cases := []struct {
		file   string
		reader turn.Reader
	}{
		{"run.golden", turn.Reader{Input: turntest.Input}},
		{"resumed.golden", turn.Reader{Input: turntest.Input, AfterInput: true, ResumeAt: 13}},
	}
	for _, c := range cases {
		tr := &translator{threadID: "t1", runID: "r1"}
		var b bytes.Buffer
		emit := func(evs []map[string]any) {
			for _, ev := range evs {
				enc, _ := json.Marshal(ev)
				b.Write(enc)
				b.WriteByte('\n')
			}
		}
		emit(tr.start())
		var parts []turn.Part
		for _, ev := range turntest.Events() {
			parts = c.reader.Read(ev, parts[:0])
			for _, p := range parts {
				emit(tr.read(p))
			}
		}
		path := filepath.Join("testdata", c.file)
		if *update {
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -update writes it)", err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s differs:\n%s", c.file, b.Bytes())
		}
	}
}
