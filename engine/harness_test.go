package engine_test

import (
	"context"
	"encoding/json"
	"github.com/weft-agents/weft/validate"
	"strings"
	"sync"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/scripted"
)

// harness runs scripted scenarios: definitions in Go, a model script, an in-memory store.
type harness struct {
	t      *testing.T
	reg    *weft.Registry
	store  weft.Store
	eng    *engine.Engine
	script *scripted.Provider
	evMu   sync.Mutex // runs of child threads emit concurrently
	events []engine.Event
}

// newHarness validates reg (failing the test on errors) and builds an engine answering every model
// call from the script.
func newHarness(t *testing.T, reg *weft.Registry, script string) *harness {
	t.Helper()
	return newHarnessOpts(t, reg, script, false)
}

// newRecordingHarness is newHarness with an engine that records its events (RecordEvents).
func newRecordingHarness(t *testing.T, reg *weft.Registry, script string) *harness {
	t.Helper()
	return newHarnessOpts(t, reg, script, true)
}

func newHarnessOpts(t *testing.T, reg *weft.Registry, script string, record bool) *harness {
	t.Helper()
	if diags := validate.Registry(reg); diags.HasErrors() {
		t.Fatalf("invalid definitions: %v", diags.Err())
	}
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sc, err := scripted.Parse("script.yaml", []byte(script))
	if err != nil {
		t.Fatalf("script: %v", err)
	}
	h := &harness{t: t, reg: reg, store: st, script: scripted.New(sc)}
	h.eng, err = engine.New(engine.Options{Registry: reg, Store: st, Override: h.script, Clock: h.script.Clock(), RecordEvents: record,
		OnEvent: func(e engine.Event) { h.evMu.Lock(); h.events = append(h.events, e); h.evMu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// run creates a thread of agent, posts message and runs it until quiescent.
func (h *harness) run(agent, message string, env map[string]string) (*weft.Thread, *engine.RunResult) {
	h.t.Helper()
	ctx := context.Background()
	th, err := h.eng.CreateThread(ctx, engine.NewThread{Agent: agent, Env: env})
	if err != nil {
		h.t.Fatalf("create thread: %v", err)
	}
	return th, h.send(th.ID, message)
}

func (h *harness) send(threadID, message string) *engine.RunResult {
	h.t.Helper()
	ctx := context.Background()
	if _, err := h.eng.Send(ctx, threadID, weft.NewMessage{Role: weft.RoleUser, Content: message}); err != nil {
		h.t.Fatalf("send: %v", err)
	}
	res, err := h.eng.Run(ctx, threadID)
	if err != nil {
		h.t.Fatalf("run: %v", err)
	}
	if f := h.script.Failures(); len(f) > 0 {
		h.t.Fatalf("model script: %s", strings.Join(f, "\n"))
	}
	return res
}

// transcript renders a thread's rows (all depths) as `role[:name]: content` lines.
func (h *harness) transcript(threadID string) []string {
	h.t.Helper()
	msgs, err := h.store.Messages(context.Background(), threadID, weft.MessageQuery{Limit: 1000, MaxDepth: 100})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		line := string(m.Role)
		if m.Depth > 0 {
			line = strings.Repeat(">", m.Depth) + line
		}
		if m.Name != "" {
			line += ":" + m.Name
		}
		line += ": " + m.Content
		for _, c := range m.ToolCalls {
			line += " [" + c.Name + " " + c.Arguments + "]"
		}
		out = append(out, line)
	}
	return out
}

func wantTranscript(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("transcript:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// registry returns a registry with a test model, a prompt "assistant" offering tools, and an
// ai_human agent "assistant" driven by it.
func registry(tools []*weft.Tool, mod func(p *weft.Prompt)) *weft.Registry {
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "fast", Provider: "test", Model: "scripted"})
	p := &weft.Prompt{Name: "assistant", ToolDescription: "Helps.", Model: "fast", Prompt: weft.Text("You are a concise helper.")}
	for _, t := range tools {
		reg.AddTool(t)
		p.Tools = append(p.Tools, weft.ToolEntry{Name: t.Name})
	}
	if mod != nil {
		mod(p)
	}
	reg.AddPrompt(p)
	reg.AddAgent(&weft.Agent{Name: "assistant", SideA: weft.AgentSide{Prompt: "assistant"}})
	return reg
}

// recorder returns a Go tool that records each call's arguments and answers with text.
func recorder(name string, calls *[]string, answer string) *weft.Tool {
	return &weft.Tool{Name: name, Description: "Tool " + name + ".", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
		*calls = append(*calls, name+" "+string(args))
		return weft.Success(answer), nil
	})}
}
