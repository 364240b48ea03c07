package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/weft-agents/weft/engine/observe"
	"github.com/weft-agents/weft/validate"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/scripted"
)

// recordingObserver writes what an observe.Observer hears as lines, indented by nesting.
type recordingObserver struct {
	mu    sync.Mutex
	lines []string
}

func (o *recordingObserver) add(s string) { o.mu.Lock(); o.lines = append(o.lines, s); o.mu.Unlock() }

func (o *recordingObserver) StartRun(ctx context.Context, info observe.RunInfo) observe.RunObserver {
	o.add("run " + info.Agent)
	return &recordingRun{o: o, depth: 1, redact: info.Redact}
}

type recordingRun struct {
	o      *recordingObserver
	depth  int
	redact func(string) string
}

func (r *recordingRun) add(s string) { r.o.add(strings.Repeat("  ", r.depth) + s) }

func (r *recordingRun) StartStep(s observe.StepInfo) {
	r.add(fmt.Sprintf("step %d %s", s.Step, s.Prompt))
	r.depth++
}
func (r *recordingRun) EndStep(err error) {
	r.depth--
	r.add(fmt.Sprintf("end step err=%v", err != nil))
}
func (r *recordingRun) ModelCall(c observe.ModelCall) {
	var parts []string
	for _, a := range c.Attempts {
		s := a.Log.Model
		if a.Log.Error != "" {
			s += "(failed)"
		}
		if a.End.Before(a.Log.CreatedAt) {
			s += "(ends before it starts)"
		}
		parts = append(parts, s)
	}
	reply := "<none>"
	if c.Reply != nil {
		reply = r.redact(c.Reply.Content)
		for _, tc := range c.Reply.ToolCalls {
			reply += "[" + tc.Name + "]"
		}
	}
	r.add(fmt.Sprintf("model %s depth=%d attempts=%s reply=%s input=%d", c.Prompt, c.Depth, strings.Join(parts, ","), reply, len(c.Input)))
}
func (r *recordingRun) StartTool(ctx context.Context, c observe.ToolCall) context.Context {
	r.add("tool " + c.Call.Name + " " + r.redact(c.Call.Arguments))
	r.depth++
	return ctx
}
func (r *recordingRun) EndTool(e observe.ToolEnd) {
	r.depth--
	if !e.Committed {
		r.add("end tool (not committed)")
		return
	}
	r.add(fmt.Sprintf("end tool %s %s", e.Status, r.redact(e.Result)))
}
func (r *recordingRun) End(e observe.RunEnd) {
	r.depth--
	r.add(fmt.Sprintf("end run %s trigger=%s steps=%d", e.Stop.Reason, e.Trigger, e.Stop.Steps))
}

// TestObserverSeam: the observer hears a run's steps, model calls and tool calls in order and
// nested — a sub-prompt's model and tool calls inside its tool call, a queued tool after the
// step's calls — with texts it can redact.
func TestObserverSeam(t *testing.T) {
	reg := subRegistry(weft.ToolEntry{Name: "summarize"}, "4")
	reg.AddTool(&weft.Tool{Name: "later", Description: "Queues a tool.", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		return weft.Success("queued"), st.QueueTool(ctx, "count_words", map[string]any{"text": "x"})
	})})
	p, _ := reg.Prompt("assistant")
	p.Tools = append(p.Tools, weft.ToolEntry{Name: "later"})
	if diags := validate.Registry(reg); diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	sc, err := scripted.Parse("script.yaml", []byte(`
- match: {depth: 0}
  tool_calls: [{name: summarize, arguments: {text: "a b c sk-hidden-42"}}, {name: later, arguments: {}}]
- match: {depth: 1, prompt: summarize}
  tool_calls: [{name: count_words, arguments: {text: "a b c d"}}]
- match: {depth: 1}
  text: Four words.
- match: {depth: 0}
  text: done
`))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := memstore.New(memstore.Options{})
	defer st.Close()
	obs := &recordingObserver{}
	script := scripted.New(sc)
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: script, Clock: script.Clock(), Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant", Env: map[string]string{"TOKEN": "sk-hidden-42"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "go"}}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"run assistant",
		"  step 1 assistant",
		"    model assistant depth=0 attempts=fast reply=[summarize][later] input=2",
		`    tool summarize {"text":"a b c [redacted]"}`,
		"      model summarize depth=1 attempts=fast reply=[count_words] input=2",
		`      tool count_words {"text":"a b c d"}`,
		"      end tool success 4",
		"      model summarize depth=1 attempts=fast reply=Four words. input=4",
		"    end tool success Four words.\n\nTool Executions:\nTool Call: count_words({\"text\":\"a b c d\"})\nTool Response: 4",
		"    tool later {}",
		"    end tool success queued",
		`    tool count_words {"text":"x"}`,
		"    end tool success 4",
		"  end step err=false",
		"  step 2 assistant",
		"    model assistant depth=0 attempts=fast reply=done input=5",
		"  end step err=false",
		"end run stop_on_response trigger=message steps=2",
	}
	if got := strings.Join(obs.lines, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("observed:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if f := script.Failures(); len(f) > 0 {
		t.Fatal(f)
	}
}
