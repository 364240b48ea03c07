package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/dispatch"
	"github.com/weft-agents/weft/engine/redact"
	"github.com/weft-agents/weft/engine/vars"
	"github.com/weft-agents/weft/schema"
)

// TestCalls: a call's later record starts from the one noted for it, a copy; an unknown call gets
// a new one; Done finishes it.
func TestCalls(t *testing.T) {
	var cs dispatch.Calls
	c := weft.ToolCall{ID: "call_1", Name: "add", Arguments: `{"a":1}`}
	if rec := cs.Of(c, "msg_1"); rec.CallID != "call_1" || rec.MessageID != "msg_1" || rec.Name != "add" || rec.Seq != 0 {
		t.Fatalf("new record = %+v", rec)
	}
	cs.Note(&weft.ToolCallRecord{CallID: "call_1", MessageID: "msg_1", Name: "add", Seq: 7})
	rec := cs.Of(c, "msg_1")
	if rec.Seq != 7 {
		t.Fatalf("noted record's seq lost: %+v", rec)
	}
	rec.Seq = 9
	if cs.Of(c, "msg_1").Seq != 7 {
		t.Fatal("Of returned the noted record itself, not a copy")
	}
	now := time.Unix(100, 0)
	done := cs.Done(c, "msg_1", now)
	if done.Status != weft.CallDone || !done.FinishedAt.Equal(now) || done.Seq != 7 {
		t.Fatalf("done = %+v", done)
	}
	cs.Note(done)
	if n := len(cs.All()); n != 1 {
		t.Fatalf("%d records after noting one call twice, want 1", n)
	}
}

// TestApproval: the approval state round-trips through a record's meta, keeping its other keys,
// and a decision edits, denies or keeps a call waiting.
func TestApproval(t *testing.T) {
	rec := &weft.ToolCallRecord{CallID: "c", Name: "rm", Meta: json.RawMessage(`{"other":1}`)}
	if a := dispatch.ApprovalOf(rec); a.Status != "" {
		t.Fatalf("state of a record without one = %+v", a)
	}
	c := weft.ToolCall{ID: "c", Name: "rm", Arguments: `{"path":"/"}`}
	if _, done, waiting := dispatch.Decided(rec, &c); done || !waiting {
		t.Fatalf("undecided call: done %v waiting %v", done, waiting)
	}
	if dispatch.MarksRunning(rec, true) {
		t.Fatal("an unapproved call that needs approval is marked running")
	}
	rec.Meta = dispatch.WithApproval(rec.Meta, dispatch.ApprovalState{Status: dispatch.Approved, Arguments: json.RawMessage(`{"path":"/tmp"}`)})
	if !strings.Contains(string(rec.Meta), `"other":1`) {
		t.Fatalf("meta lost its other keys: %s", rec.Meta)
	}
	if _, done, waiting := dispatch.Decided(rec, &c); done || waiting || c.Arguments != `{"path":"/tmp"}` {
		t.Fatalf("approved call: done %v waiting %v arguments %s", done, waiting, c.Arguments)
	}
	if !dispatch.MarksRunning(rec, true) {
		t.Fatal("an approved call is not marked running")
	}
	rec.Idempotent = true
	if dispatch.MarksRunning(rec, false) {
		t.Fatal("an idempotent call is marked running")
	}
	rec.Meta = dispatch.WithApproval(rec.Meta, dispatch.ApprovalState{Status: dispatch.Denied})
	if res, done, _ := dispatch.Decided(rec, &c); !done || res.Status != weft.ToolError || res.Error != "denied: the call was not approved" {
		t.Fatalf("denied call: done %v result %+v", done, res)
	}
}

// fakeState is the State a client tool's call sees: its thread and call.
type fakeState struct {
	weft.State
	thread string
	call   *weft.ToolCall
}

func (s fakeState) ThreadID() string          { return s.thread }
func (s fakeState) Execution() weft.Execution { return fakeExec{call: s.call} }
func (x fakeExec) ToolCall() *weft.ToolCall   { return x.call }
func (r records) ToolCalls(context.Context, string, ...weft.CallStatus) ([]weft.ToolCallRecord, error) {
	return r, nil
}

// fakeExec is a call's Execution.
type fakeExec struct {
	weft.Execution
	call *weft.ToolCall
}

// records are a thread's call records.
type records []weft.ToolCallRecord

// TestClientTools: names and parameters are checked; the first result a client delivers stands and
// answers the call.
func TestClientTools(t *testing.T) {
	if err := dispatch.CheckClientTools([]dispatch.ClientTool{{Name: "a b"}}); weft.ErrorCode(err) != weft.EInvalid {
		t.Fatalf("bad name: %v", err)
	}
	if err := dispatch.CheckClientTools([]dispatch.ClientTool{{Name: "a"}, {Name: "a"}}); weft.ErrorCode(err) != weft.EInvalid {
		t.Fatalf("name twice: %v", err)
	}
	ct := dispatch.ClientTool{Name: "pick", Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}
	if err := dispatch.CheckClientTools([]dispatch.ClientTool{ct}); err != nil {
		t.Fatal(err)
	}
	rec := weft.ToolCallRecord{CallID: "c", Name: "pick"}
	if !dispatch.KeepClientResult(&rec, weft.Success("7")) || dispatch.KeepClientResult(&rec, weft.Success("8")) {
		t.Fatal("the first result given does not stand alone")
	}
	tool, args, ok := ct.Tool(dispatch.ClientResult(records{rec}))
	if !ok || args == nil || tool.Approval != weft.ApprovalRequired || tool.Description != "Tool pick of the client." {
		t.Fatalf("tool = %+v, args %v, ok %v", tool, args, ok)
	}
	res, err := tool.Execute.Call(context.Background(), fakeState{thread: "thr", call: &weft.ToolCall{ID: "c", Name: "pick"}}, nil)
	if err != nil || res.Result != "7" {
		t.Fatalf("result = %+v, %v", res, err)
	}
	res, _ = tool.Execute.Call(context.Background(), fakeState{thread: "thr", call: &weft.ToolCall{ID: "other", Name: "pick"}}, nil)
	if res.Status != weft.ToolError {
		t.Fatalf("a call without a delivered result = %+v", res)
	}
}

// TestArguments: size, JSON and schema errors are the call's error text; bound parameters come
// from the prompt's arguments.
func TestArguments(t *testing.T) {
	if text, errText := dispatch.ArgumentsText("  "); text != "{}" || errText != "" {
		t.Fatalf("empty arguments: %q %q", text, errText)
	}
	if _, errText := dispatch.ArgumentsText(strings.Repeat("x", weft.MaxToolArgumentsBytes+1)); errText == "" {
		t.Fatal("oversized arguments accepted")
	}
	params := schema.Object(schema.Field("n", schema.Integer()), schema.Field("who", schema.String()))
	if _, errText := dispatch.Arguments("t", "{", params, schema.Compile, nil, nil, false); !strings.HasPrefix(errText, "Tool arguments are not valid JSON") {
		t.Fatalf("bad JSON: %q", errText)
	}
	if _, errText := dispatch.Arguments("t", `{"n":"x","who":"a"}`, params, schema.Compile, nil, nil, false); !strings.HasPrefix(errText, "Tool argument validation failed") {
		t.Fatalf("invalid: %q", errText)
	}
	args, errText := dispatch.Arguments("t", `{"n":2}`, params, schema.Compile, map[string]string{"who": "user"}, map[string]any{"user": "ada"}, false)
	if errText != "" || args["who"] != "ada" {
		t.Fatalf("bound: %v %q", args, errText)
	}
}

// TestResults: a result's text, its size limit, its metadata, and a tool run's timeout.
func TestResults(t *testing.T) {
	if got := dispatch.Content(weft.ToolSuccess, " "); got != "Tool executed successfully" {
		t.Fatalf("empty success = %q", got)
	}
	if got := dispatch.Content(weft.ToolError, "boom"); got != "Failed to execute tool: boom" {
		t.Fatalf("error = %q", got)
	}
	red := redact.New([]string{"s3cret"})
	if res := dispatch.ToStore(weft.Success(strings.Repeat("x", weft.MaxToolResultBytes+1)), red); res.Status != weft.ToolError {
		t.Fatal("an oversized result is not refused")
	}
	if res := dispatch.ToStore(weft.Success("the s3cret"), red); strings.Contains(res.Result, "s3cret") {
		t.Fatal("a stored result is not redacted")
	}
	for _, tc := range []struct{ args, want string }{
		{`{"message":"done!"}`, "done!"}, {`{"message":""}`, "Tool executed successfully"}, {`{"message":1}`, "ok"}, {`{`, "ok"},
	} {
		if got := dispatch.ResultContent(weft.Success("ok"), tc.args, "message"); got != tc.want {
			t.Errorf("session tool's message for %s = %q, want %q", tc.args, got, tc.want)
		}
	}
	m := &weft.Message{Content: "ok"}
	dispatch.AddAttachments(m, []dispatch.NewFile{{Att: weft.Attachment{Name: "a.png", Path: "/attachments/1-a.png"}}}, []weft.Attachment{{Path: "/b"}}, true)
	if len(m.Attachments) != 2 || !strings.Contains(m.Content, `Attachment path for "a.png": /attachments/1-a.png`) {
		t.Fatalf("message with attachments = %+v", m)
	}
	if m := dispatch.ResultMeta(weft.ToolResult{Stack: "at s3cret"}, red); m["stack"] == "at s3cret" {
		t.Fatalf("stack not redacted: %v", m)
	}
	if dispatch.ResultMeta(weft.Success("ok"), red) != nil {
		t.Fatal("metadata for a plain result")
	}
	slow := weft.ToolFunc(func(ctx context.Context, _ weft.State, _ json.RawMessage) (weft.ToolResult, error) {
		<-ctx.Done()
		return weft.ToolResult{}, ctx.Err()
	})
	tool := &weft.Tool{Name: "slow", Timeout: weft.Duration(time.Millisecond)}
	res := dispatch.RunTool(context.Background(), context.Background(), nil, "slow", tool, slow, nil)
	if !strings.Contains(res.Error, "timed out") {
		t.Fatalf("timeout = %+v", res)
	}
	if res := dispatch.RunTool(context.Background(), context.Background(), nil, "none", &weft.Tool{}, nil, nil); !strings.Contains(res.Error, "no implementation") {
		t.Fatalf("no handler = %+v", res)
	}
}

// TestStructured: a structured value is encoded compactly; stored values are redacted.
func TestStructured(t *testing.T) {
	if got := dispatch.CanonicalJSON(map[string]any{"a": "<b>"}); got != `{"a":"<b>"}` {
		t.Fatalf("canonical = %s", got)
	}
	red := redact.New([]string{"s3cret"})
	v := dispatch.RedactValue(red, map[string]any{"k": []any{"s3cret"}}).(map[string]any)
	if v["k"].([]any)[0] == "s3cret" {
		t.Fatal("value not redacted")
	}
}

// TestEnvRequest: a request names the missing and required variables, and its result names the
// request; a stored request loads, expired once its time is past.
func TestEnvRequest(t *testing.T) {
	now := time.Unix(1000, 0)
	decls := map[string]*vars.Declaration{
		"B": {VariableDefinition: weft.VariableDefinition{Name: "B", Required: true, Type: weft.VarText}},
		"A": {VariableDefinition: weft.VariableDefinition{Name: "A", Required: true, Type: weft.VarSecret}},
		"C": {VariableDefinition: weft.VariableDefinition{Name: "C"}},
	}
	req := dispatch.NewEnvRequest("thr_p", "helper", now, weft.ToolEntry{Name: "helper"}, nil, weft.SideA, decls, []vars.MissingVar{{Name: "A"}})
	if len(req.Required) != 2 || req.Required[0].Name != "A" || req.Missing[0] != "A" || req.Status != "pending" {
		t.Fatalf("request = %+v", req)
	}
	res := req.Result()
	if res.ErrorCode != "subagent_env_required" || !strings.Contains(res.Error, req.Endpoint()) {
		t.Fatalf("result = %+v", res)
	}
	doc, _ := json.Marshal(req)
	docs := map[string]json.RawMessage{dispatch.EnvRequestKey(req.RequestID): doc}
	got, err := dispatch.LoadEnvRequest(docs, "thr_p", req.RequestID, now)
	if err != nil || got.Status != "pending" || got.Agent != "helper" {
		t.Fatalf("loaded %+v, %v", got, err)
	}
	if got, _ := dispatch.LoadEnvRequest(docs, "thr_p", req.RequestID, now.Add(dispatch.EnvRequestTTL)); got.Status != "expired" {
		t.Fatalf("status after its time = %s", got.Status)
	}
	if _, err := dispatch.LoadEnvRequest(docs, "thr_p", "envreq_x", now); weft.ErrorCode(err) != weft.ENotFound {
		t.Fatalf("unknown request: %v", err)
	}
}

// TestMCPWithoutClient: an engine without an MCP client lists no tools and answers a call with an
// error result.
func TestMCPWithoutClient(t *testing.T) {
	m := dispatch.MCP{Log: discard()}
	srv := &weft.MCPServer{Name: "fs"}
	if _, err := m.Tools(context.Background(), srv, nil); err == nil {
		t.Fatal("tools listed without a client")
	}
	res := m.Call(context.Background(), context.Background(), weft.Target{Name: "read", MCP: srv}, nil, nil)
	if res.Status != weft.ToolError {
		t.Fatalf("call = %+v", res)
	}
	if dispatch.MCPTimeout(srv) != time.Minute {
		t.Fatalf("default timeout = %s", dispatch.MCPTimeout(srv))
	}
}

// discard is a logger that writes nothing.
func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestOpenReplies: a completed reply with a call no tool message answers is open; answered,
// streaming or call-less replies are not.
func TestOpenReplies(t *testing.T) {
	done := weft.MessageCompleted
	rows := []*weft.Message{
		{ID: "1", Role: weft.RoleAssistant, Status: done, ToolCalls: []weft.ToolCall{{ID: "a"}, {ID: "b"}}},
		{ID: "2", Role: weft.RoleTool, ToolCallID: "a"},
		{ID: "3", Role: weft.RoleAssistant, Status: done, ToolCalls: []weft.ToolCall{{ID: "c"}}},
		{ID: "4", Role: weft.RoleTool, ToolCallID: "c"},
		{ID: "5", Role: weft.RoleAssistant, Status: done, Content: "no calls"},
	}
	open, answered := dispatch.OpenReplies(rows)
	if len(open) != 1 || open[0].ID != "1" || !answered["a"] || !answered["c"] || answered["b"] {
		t.Fatalf("open %v, answered %v", open, answered)
	}
}

// TestAttachments: data becomes a new file under /attachments/ with the name's extension; a path
// refers to an existing file, and one that is missing or a directory is an error.
func TestAttachments(t *testing.T) {
	now := func() time.Time { return time.UnixMilli(1234) }
	stat := func(p string) (weft.FileInfo, error) {
		switch p {
		case "/a.txt":
			return weft.FileInfo{Path: p, Name: "a.txt", MimeType: "text/plain", Size: 3}, nil
		case "/dir":
			return weft.FileInfo{Path: p, IsDir: true}, nil
		}
		return weft.FileInfo{}, errors.New("not found")
	}
	files, refs, err := dispatch.Attachments([]weft.ToolAttachment{{Name: "x.PNG", MimeType: "image/png", Data: []byte{1}}, {Path: "/a.txt"}}, now, stat)
	if err != nil || len(files) != 1 || len(refs) != 1 {
		t.Fatalf("files %v refs %v: %v", files, refs, err)
	}
	if p := files[0].Info.Path; !strings.HasPrefix(p, "/attachments/1234-") || !strings.HasSuffix(p, ".png") || files[0].Att.Path != p {
		t.Fatalf("new file at %s", p)
	}
	if refs[0].Name != "a.txt" || refs[0].MimeType != "text/plain" || refs[0].Size != 3 {
		t.Fatalf("reference = %+v", refs[0])
	}
	for _, bad := range []weft.ToolAttachment{{Path: "/dir"}, {Path: "/gone"}, {Name: "empty"}} {
		if _, _, err := dispatch.Attachments([]weft.ToolAttachment{bad}, now, stat); err == nil {
			t.Fatalf("%+v accepted", bad)
		}
	}
}

// TestDecide: only a call that waits can be decided; the decision makes it pending with its
// state, and counts the calls of its reply still waiting; a call no longer waiting was decided
// meanwhile.
func TestDecide(t *testing.T) {
	rec := &weft.ToolCallRecord{CallID: "a", MessageID: "m", Status: weft.CallDone}
	if err := dispatch.Decidable(rec); weft.ErrorCode(err) != weft.EConflict {
		t.Fatalf("done call: %v", err)
	}
	rec.Status = weft.CallAwaitingApproval
	if err := dispatch.Decidable(rec); err != nil {
		t.Fatal(err)
	}
	at := time.Unix(5, 0)
	a := dispatch.Decision{Approve: true, By: "u"}.State(at)
	if a.Status != dispatch.Approved || a.By != "u" || !a.At.Equal(at) {
		t.Fatalf("state = %+v", a)
	}
	if a := (dispatch.Decision{Reason: "no"}).State(at); a.Status != dispatch.Denied || a.Reason != "no" {
		t.Fatalf("denial = %+v", a)
	}
	waiting := []weft.ToolCallRecord{*rec, {CallID: "b", MessageID: "m"}, {CallID: "c", MessageID: "other"}}
	up, others, err := dispatch.DecideCall(rec, a, waiting)
	if err != nil || others != 1 || up.Status != weft.CallPending || dispatch.ApprovalOf(&up).Status != dispatch.Approved {
		t.Fatalf("decided %+v, others %d: %v", up, others, err)
	}
	if _, _, err := dispatch.DecideCall(rec, a, waiting[1:]); weft.ErrorCode(err) != weft.EConflict {
		t.Fatalf("decided meanwhile: %v", err)
	}
	if err := dispatch.Decidable(&up); err == nil {
		t.Fatal("a decided call is decidable again")
	}
}
