package mcp_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/mcp"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/project"
	"github.com/weft-agents/weft/scripted"
)

// serverFixture is an engine over mcp/testdata/project with two users' threads, each with an
// attached file.
type serverFixture struct {
	eng          *engine.Engine
	alice, bob   string // thread ids
	aliceFile    string // the path of alice's attachment
	aliceContent string
}

func newServerFixture(t *testing.T) *serverFixture {
	t.Helper()
	reg, diags := project.Open("testdata/project", project.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	mcp.AddPromptAgents(reg)
	script, err := scripted.Parse("s", []byte("- text: Noted.\n- text: Noted.\n"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: scripted.New(script)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f := &serverFixture{eng: eng, aliceContent: "alice's notes: the launch is on Tuesday"}
	for _, u := range []struct {
		user, content string
		id            *string
	}{{"alice", f.aliceContent, &f.alice}, {"bob", "bob's notes", &f.bob}} {
		th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "desk", UserID: u.user})
		if err != nil {
			t.Fatal(err)
		}
		*u.id = th.ID
		msg := &weft.NewMessage{Role: weft.RoleUser, Content: "Keep these notes.",
			Attachments: []weft.ToolAttachment{{Name: "notes.txt", MimeType: "text/plain", Data: []byte(u.content)}}}
		if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: msg}); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := st.Messages(ctx, f.alice, weft.MessageQuery{Roles: []weft.Role{weft.RoleUser}})
	if err != nil || len(msgs) != 1 || len(msgs[0].Attachments) != 1 {
		t.Fatalf("alice's message: %v %+v", err, msgs)
	}
	f.aliceFile = msgs[0].Attachments[0].Path
	return f
}

// connect serves the fixture's engine as user (""=local) over in-memory transports.
func (f *serverFixture) connect(t *testing.T, user string) *sdk.ClientSession {
	t.Helper()
	opt := mcp.ServerOptions{Engine: f.eng}
	if user != "" {
		opt.UserID = func(sdk.Request) string { return user }
	}
	srv := mcp.NewServer(opt)
	ct, st := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestServerPrompts: prompts/list offers the exposed prompts with their inputs as arguments;
// prompts/get renders them (arguments converted to the schema's types, defaults applied) or fails
// with invalid params naming the rule.
func TestServerPrompts(t *testing.T) {
	f := newServerFixture(t)
	cs := f.connect(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	listed := map[string]*sdk.Prompt{}
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		listed[p.Name] = p
	}
	if len(listed) != 2 || listed["brief"] == nil || listed["helper"] == nil {
		t.Fatalf("prompts/list: %v", listed)
	}
	if b := listed["brief"]; b.Description != "Write a brief about a topic." || len(b.Arguments) != 2 ||
		b.Arguments[0].Name != "topic" || !b.Arguments[0].Required || b.Arguments[0].Description != "What the brief is about" ||
		b.Arguments[1].Name != "points" || b.Arguments[1].Required {
		t.Fatalf("brief: %+v args %+v", b, b.Arguments)
	}
	if len(listed["helper"].Arguments) != 0 {
		t.Errorf("helper has arguments: %+v", listed["helper"].Arguments)
	}
	cases := []struct {
		name    string
		prompt  string
		args    map[string]string
		want    []string // role: text of each message
		errCode int64
		errText string
	}{
		{"template with default", "brief", map[string]string{"topic": "tides"},
			[]string{"user: You write briefs of 3 points.", "user: Brief me on tides."}, 0, ""},
		{"number argument parsed", "brief", map[string]string{"topic": "moons", "points": "5"},
			[]string{"user: You write briefs of 5 points.", "user: Brief me on moons."}, 0, ""},
		{"plain prompt", "helper", nil, []string{"user: You help people."}, 0, ""},
		{"wrong type", "brief", map[string]string{"topic": "x", "points": "many"}, nil, jsonrpc.CodeInvalidParams, "points"},
		{"missing required", "brief", map[string]string{}, nil, jsonrpc.CodeInvalidParams, "topic"},
		{"unknown prompt", "hidden", nil, nil, 0, "hidden"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: c.prompt, Arguments: c.args})
			if c.errText != "" {
				var we *jsonrpc.Error
				if err == nil || !strings.Contains(err.Error(), c.errText) || (c.errCode != 0 && (!errors.As(err, &we) || we.Code != c.errCode)) {
					t.Fatalf("err %v, want code %d mentioning %q", err, c.errCode, c.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range res.Messages {
				tc, ok := m.Content.(*sdk.TextContent)
				if !ok {
					t.Fatalf("content %T", m.Content)
				}
				got = append(got, string(m.Role)+": "+strings.TrimSpace(tc.Text))
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Fatalf("messages %q, want %q", got, c.want)
			}
		})
	}
}

// TestServerResources: resources/list names the caller's threads' transcripts and files only;
// resources/read returns them, and another user's (or a missing) resource is not found.
func TestServerResources(t *testing.T) {
	f := newServerFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	transcript := func(id string) string { return "weft://threads/" + id + "/transcript" }
	file := "weft://threads/" + f.alice + "/files" + f.aliceFile
	cases := []struct {
		user     string
		listed   []string // URIs that must be listed
		unlisted []string // URIs that must not be
	}{
		{"alice", []string{transcript(f.alice), file}, []string{transcript(f.bob)}},
		{"bob", []string{transcript(f.bob)}, []string{transcript(f.alice), file}},
		{"", []string{transcript(f.alice), transcript(f.bob), file}, nil},
	}
	for _, c := range cases {
		t.Run("user="+c.user, func(t *testing.T) {
			cs := f.connect(t, c.user)
			res, err := cs.ListResources(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			uris := map[string]bool{}
			for _, r := range res.Resources {
				uris[r.URI] = true
			}
			for _, u := range c.listed {
				if !uris[u] {
					t.Errorf("resources/list lacks %s: %v", u, uris)
				}
				if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: u}); err != nil {
					t.Errorf("read %s: %v", u, err)
				}
			}
			for _, u := range c.unlisted {
				if uris[u] {
					t.Errorf("resources/list shows %s to %q", u, c.user)
				}
				if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: u}); err == nil || !strings.Contains(err.Error(), "not found") {
					t.Errorf("read %s as %q: %v, want not found", u, c.user, err)
				}
			}
			tpl, err := cs.ListResourceTemplates(ctx, nil)
			if err != nil || len(tpl.ResourceTemplates) != 2 {
				t.Fatalf("templates: %v %+v", err, tpl)
			}
		})
	}
	cs := f.connect(t, "alice")
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: file})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != f.aliceContent || res.Contents[0].MIMEType != "text/plain" {
		t.Fatalf("file: %v %+v", err, res)
	}
	res, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: transcript(f.alice)})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Contents[0].Text
	for _, want := range []string{"## user", "Keep these notes.", "## assistant", "Noted.", "attachment notes.txt (text/plain): " + file} {
		if !strings.Contains(text, want) {
			t.Errorf("transcript lacks %q:\n%s", want, text)
		}
	}
	for _, bad := range []string{"weft://threads/" + f.alice + "/files/nope.txt", "weft://threads/" + f.alice + "/other", "weft://threads//transcript"} {
		if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: bad}); err == nil {
			t.Errorf("read %s: no error", bad)
		}
	}
}
