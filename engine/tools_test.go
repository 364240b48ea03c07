package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/schema"
)

func TestS003_8_sequential_order(t *testing.T) {
	// Three calls (parallelToolCalls only lets the provider return several): each tool must finish
	// before the next starts, in returned order.
	var mu sync.Mutex
	var log []string
	slow := func(name string, d time.Duration) *weft.Tool {
		return &weft.Tool{Name: name, Description: "d", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
			mu.Lock()
			log = append(log, "start "+name)
			mu.Unlock()
			time.Sleep(d)
			mu.Lock()
			log = append(log, "end "+name)
			mu.Unlock()
			return weft.Success(name + " done"), nil
		})}
	}
	reg := registry([]*weft.Tool{slow("first", 20*time.Millisecond), slow("second", 0), slow("third", 5*time.Millisecond)},
		func(p *weft.Prompt) { p.ParallelToolCalls = true })
	h := newHarness(t, reg, `
- tool_calls: [{name: third}, {name: first}, {name: second}]
- expect: {roles: [user, assistant, tool, tool, tool]}
  text: All done.
`)
	th, _ := h.run("assistant", "go", nil)
	if got := strings.Join(log, ","); got != "start third,end third,start first,end first,start second,end second" {
		t.Errorf("execution order %s", got)
	}
	tr := h.transcript(th.ID)
	wantTranscript(t, tr[2:5], "tool:third: third done", "tool:first: first done", "tool:second: second done")
}

func TestS003_8_results_persisted(t *testing.T) {
	var calls []string
	reg := registry([]*weft.Tool{recorder("lookup", &calls, "  found it  ")}, nil)
	h := newHarness(t, reg, `
- tool_calls: [{name: lookup, id: call_a}, {name: lookup, id: call_b}]
- text: ok
`)
	th, _ := h.run("assistant", "go", nil)
	msgs, _ := h.store.Messages(context.Background(), th.ID, weft.MessageQuery{Limit: 100})
	tm := msgs[2]
	if tm.Role != weft.RoleTool || tm.Name != "lookup" || tm.ToolCallID != "call_a" || tm.ToolStatus != weft.ToolSuccess ||
		tm.Content != "found it" || tm.Status != weft.MessageCompleted || tm.Side != weft.SideA || tm.Depth != 0 {
		t.Errorf("tool message %+v", tm)
	}
	// Each record, done, keeps its seq and the time it started (both calls are marked running
	// before they run: the first with the reply, the second with the first's result).
	recs, _ := h.store.ToolCalls(context.Background(), th.ID)
	if len(recs) != 2 {
		t.Fatalf("call records %+v", recs)
	}
	for i, rec := range recs {
		if rec.CallID != []string{"call_a", "call_b"}[i] || rec.Seq != int64(i+1) || rec.Status != weft.CallDone ||
			rec.ResultMessageID != msgs[2+i].ID || rec.MessageID != msgs[1].ID ||
			rec.StartedAt == nil || rec.FinishedAt == nil || rec.FinishedAt.Before(*rec.StartedAt) {
			t.Errorf("call record %d: %+v", i, rec)
		}
	}
}

func TestS003_8_errors_as_results(t *testing.T) {
	tool := func(name string, fn func(ctx context.Context) (weft.ToolResult, error)) *weft.Tool {
		return &weft.Tool{Name: name, Description: "d", Args: schema.Object(schema.OptionalField("n", schema.Integer())),
			Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) { return fn(ctx) })}
	}
	tools := []*weft.Tool{
		tool("fails", func(context.Context) (weft.ToolResult, error) {
			return weft.Failure("quota exceeded, retry tomorrow"), nil
		}),
		tool("errs", func(context.Context) (weft.ToolResult, error) { return weft.ToolResult{}, errors.New("disk full") }),
		tool("panics", func(context.Context) (weft.ToolResult, error) { panic("boom") }),
		tool("slow", func(ctx context.Context) (weft.ToolResult, error) { <-ctx.Done(); return weft.ToolResult{}, ctx.Err() }),
	}
	tools[3].Timeout = weft.Duration(10 * time.Millisecond)
	reg := registry(tools, nil)
	h := newHarness(t, reg, `
- tool_calls:
    - {name: nope}
    - {name: fails, arguments: "{not json"}
    - {name: fails, arguments: {n: "seven"}}
    - {name: fails}
    - {name: errs}
    - {name: panics}
    - {name: slow}
- expect: {last_role: tool}
  text: I could not do it.
`)
	th, res := h.run("assistant", "go", nil)
	if res.Last().Reason != weft.StopOnResponse {
		t.Fatalf("the run must go on: %+v", res.Last())
	}
	tr := h.transcript(th.ID)
	wantTranscript(t, tr[2:9],
		`tool:nope: Failed to execute tool: Tool "nope" is not available for this prompt. Available tools: fails, errs, panics, slow`,
		"tool:fails: Failed to execute tool: Tool arguments are not valid JSON: invalid character 'n' looking for beginning of object key string",
		"tool:fails: Failed to execute tool: Tool argument validation failed: /n: got string, want integer",
		"tool:fails: Failed to execute tool: quota exceeded, retry tomorrow",
		"tool:errs: Failed to execute tool: disk full",
		"tool:panics: Failed to execute tool: tool panicked: boom",
		"tool:slow: Failed to execute tool: tool slow timed out after 10ms")
	msgs, _ := h.store.Messages(context.Background(), th.ID, weft.MessageQuery{Limit: 100})
	if st, _ := msgs[7].Metadata["stack"].(string); !strings.Contains(st, "panic") {
		t.Error("a panic's stack is kept in metadata")
	}
	if strings.Contains(msgs[7].Content, "goroutine") {
		t.Error("the stack is never sent to the model")
	}
}

func TestS003_8_validate_args(t *testing.T) {
	type args struct {
		Query string `json:"query"`
		Limit int    `json:"limit,omitempty" jsonschema:"default=5,maximum=20"`
	}
	var got []args
	tool := weft.NewTool("search", "Search.", func(ctx context.Context, st weft.State, a args) (weft.ToolResult, error) {
		got = append(got, a)
		return weft.Success("ok"), nil
	})
	h := newHarness(t, registry([]*weft.Tool{tool}, nil), `
- tool_calls: [{name: search, arguments: {limit: 50}}, {name: search, arguments: {query: go}}]
- text: done
`)
	th, _ := h.run("assistant", "go", nil)
	tr := h.transcript(th.ID)
	if tr[2] != `tool:search: Failed to execute tool: Tool argument validation failed: (root): missing required property "query"; /limit: must be <= 20` {
		t.Errorf("got %s", tr[2])
	}
	// S002_3_4_validate_before_use: only the valid call ran, with the default applied.
	if len(got) != 1 || got[0] != (args{Query: "go", Limit: 5}) {
		t.Errorf("tool saw %+v", got)
	}
}

func TestS002_4_3_actionable_errors_no_secrets(t *testing.T) {
	const secret = "tok-9f8e7d6c5b4a"
	leak := &weft.Tool{Name: "leak", Description: "d", Variables: []weft.VariableDefinition{{Name: "API_TOKEN", Type: weft.VarSecret, Required: true, Description: "token"}},
		Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
			tok, err := st.Env(ctx, "API_TOKEN")
			if err != nil {
				return weft.ToolResult{}, err
			}
			if strings.Contains(string(args), "fail") {
				return weft.ToolResult{}, errors.New("401 for token " + tok + ": check the token")
			}
			return weft.Success("used " + tok), nil
		})}
	h := newHarness(t, registry([]*weft.Tool{leak}, nil), `
- tool_calls: [{name: leak, arguments: {mode: fail}}, {name: leak}]
- expect: {not_contains: `+secret+`, tool_result_contains: "[redacted]"}
  text: done
`)
	th, _ := h.run("assistant", "go", map[string]string{"API_TOKEN": secret})
	tr := h.transcript(th.ID)
	wantTranscript(t, tr[2:4], "tool:leak: Failed to execute tool: 401 for token [redacted]: check the token", "tool:leak: used [redacted]")
	for _, l := range tr {
		if strings.Contains(l, secret) {
			t.Errorf("secret stored: %s", l)
		}
	}
}

func pngBytes(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	copy(b, "\x89PNG\r\n\x1a\n")
	return b
}

func TestAttachments(t *testing.T) {
	small, big := pngBytes(3000), pngBytes(weft.ChunkSize+1234)
	chart := &weft.Tool{Name: "chart", Description: "d", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
		data := small
		if strings.Contains(string(args), "big") {
			data = big
		}
		return weft.ToolResult{Status: weft.ToolSuccess, Result: "Chart generated",
			Attachments: []weft.ToolAttachment{{Name: "chart.png", MimeType: "image/png", Data: data, Width: 800, Height: 600}}}, nil
	})}
	notes := &weft.Tool{Name: "notes", Description: "d", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
		var a struct{ Path string }
		_ = json.Unmarshal(args, &a)
		if a.Path == "" {
			if _, err := st.Files().WriteFile(ctx, "/notes/todo.md", []byte("# todo\n"), weft.WriteOptions{}); err != nil {
				return weft.ToolResult{}, err
			}
			a.Path = "/notes/todo.md"
		}
		return weft.ToolResult{Status: weft.ToolSuccess, Result: "see notes",
			Attachments: []weft.ToolAttachment{{ID: "n1", Path: a.Path, Name: "todo.md", MimeType: "text/markdown"}}}, nil
	})}
	h := newHarness(t, registry([]*weft.Tool{chart, notes}, nil), `
- tool_calls: [{name: chart}, {name: chart, arguments: {size: big}}, {name: notes}, {name: notes, arguments: {path: /../etc/passwd}}, {name: notes, arguments: {path: /missing.md}}]
- text: done
`)
	th, _ := h.run("assistant", "go", nil)
	ctx := context.Background()
	msgs, _ := h.store.Messages(ctx, th.ID, weft.MessageQuery{Limit: 100})
	pathRE := regexp.MustCompile(`^/attachments/\d{13}-[0-9a-z]{8}\.png$`)
	for i, want := range [][]byte{small, big} {
		m := msgs[2+i]
		t.Run([]string{"S002_5_2_attachments_stored", "S004_chunking"}[i], func(t *testing.T) {
			if len(m.Attachments) != 1 || !pathRE.MatchString(m.Attachments[0].Path) {
				t.Fatalf("attachments %+v", m.Attachments)
			}
			a := m.Attachments[0]
			if !strings.HasSuffix(m.Content, `Attachment path for "chart.png": `+a.Path) || a.Width != 800 || a.Size != int64(len(want)) {
				t.Errorf("message %q, attachment %+v", m.Content, a)
			}
			t.Run("S002_5_2_no_downsampling", func(t *testing.T) {
				got, err := h.store.Files().ReadFile(ctx, th.ID, a.Path)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("stored bytes differ (%d vs %d): %v", len(got), len(want), err)
				}
			})
		})
	}
	t.Run("S002_5_3_attachment_refs", func(t *testing.T) {
		m := msgs[4]
		if len(m.Attachments) != 1 || m.Attachments[0].Path != "/notes/todo.md" || m.Attachments[0].Size != 7 || strings.Contains(m.Content, "Attachment path") {
			t.Errorf("ref %+v %q", m.Attachments, m.Content)
		}
		if st, _ := h.store.Files().Stat(ctx, th.ID, "/attachments"); st.IsDir {
			list, _ := h.store.Files().ReadDir(ctx, th.ID, "/attachments")
			if len(list) != 2 {
				t.Errorf("a reference is linked, not copied: %v", list)
			}
		}
		if msgs[6].Content != "Failed to execute tool: attachment \"todo.md\": no file /missing.md in this thread" {
			t.Errorf("missing ref: %q", msgs[6].Content)
		}
	})
	t.Run("S002_5_2_path_traversal", func(t *testing.T) {
		if msgs[5].ToolStatus != weft.ToolError || msgs[5].Content != `Failed to execute tool: attachment "todo.md": invalid path "/../etc/passwd"` {
			t.Errorf("traversal: %q", msgs[5].Content)
		}
	})
}

func TestS002_7_2_abort_signal(t *testing.T) {
	started := make(chan struct{})
	sawCancel := make(chan bool, 1)
	wait := &weft.Tool{Name: "wait", Description: "d", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		close(started)
		select {
		case <-ctx.Done():
			sawCancel <- st.Execution().Stopped()
			return weft.Failure("Execution cancelled"), nil
		case <-time.After(5 * time.Second):
			sawCancel <- false
			return weft.Success("finished"), nil
		}
	})}
	h := newHarness(t, registry([]*weft.Tool{wait}, nil), `
- tool_calls: [{name: wait}, {name: wait}]
`)
	ctx := context.Background()
	th, err := h.eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if err != nil {
		t.Fatal(err)
	}
	h.eng.Send(ctx, th.ID, weft.NewMessage{Content: "go"})
	done := make(chan *engine.RunResult)
	go func() {
		res, _ := h.eng.Run(ctx, th.ID)
		done <- res
	}()
	<-started
	if err := h.eng.Stop(ctx, th.ID); err != nil {
		t.Fatal(err)
	}
	if !<-sawCancel {
		t.Error("the tool's context was not cancelled by the stop")
	}
	res := <-done
	if res.Last().Reason != weft.StopAbortedByUser {
		t.Errorf("stop %+v", res.Last())
	}
	wantTranscript(t, h.transcript(th.ID)[2:],
		"tool:wait: Failed to execute tool: Execution cancelled",
		"tool:wait: Failed to execute tool: Execution stopped by user",
		"system: Execution stopped by user.")
	got, _ := h.store.Thread(ctx, th.ID)
	if got.Status != weft.ThreadStopped {
		t.Errorf("status %s", got.Status)
	}
	// Both calls end done: the cancelled one keeps its start time, the unstarted one is finished by
	// the stop with the stop's result.
	msgs, _ := h.store.Messages(ctx, th.ID, weft.MessageQuery{})
	recs, _ := h.store.ToolCalls(ctx, th.ID)
	if len(recs) != 2 || recs[0].StartedAt == nil || recs[1].ResultMessageID != msgs[3].ID {
		t.Fatalf("call records %+v", recs)
	}
	for i, rec := range recs {
		if rec.Status != weft.CallDone || rec.Seq != int64(i+1) || rec.FinishedAt == nil || rec.ResultMessageID != msgs[2+i].ID {
			t.Errorf("call record %d: %+v", i, rec)
		}
	}
}
