package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"strings"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/weft-agents/weft"
)

// Attach gives every tool of kind a2a in the registry its handler (ToolHandler). The CLI calls it
// after loading the definitions.
func Attach(reg *weft.Registry) {
	for _, t := range reg.Tools() {
		if t.A2A != nil && t.Execute == nil {
			t.Execute = ToolHandler(t)
		}
	}
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// httpClient sends the headers with every request.
func httpClient(headers map[string]string) *http.Client {
	return &http.Client{Transport: headerTransport{headers: headers, base: http.DefaultTransport}}
}

// FetchCard fetches and parses the agent card at cardURL, sending the headers.
func FetchCard(ctx context.Context, cardURL string, headers map[string]string) (*sdk.AgentCard, error) {
	i := strings.LastIndex(cardURL, "/")
	if i < 0 || !strings.Contains(cardURL, "://") {
		return nil, fmt.Errorf("card %q: want an http(s) URL of the agent's card", cardURL)
	}
	card, err := agentcard.NewResolver(httpClient(headers)).Resolve(ctx, cardURL[:i], agentcard.WithPath(cardURL[i+1:]))
	if err != nil {
		return nil, fmt.Errorf("card %s: %w", cardURL, err)
	}
	return card, nil
}

// CheckCard lists what makes a card unusable by a kind: a2a tool: no name, no JSON-RPC interface
// of protocol 1.0 with an absolute URL.
func CheckCard(card *sdk.AgentCard) []string {
	var problems []string
	if strings.TrimSpace(card.Name) == "" {
		problems = append(problems, "name is empty")
	}
	ok := false
	for i, in := range card.SupportedInterfaces {
		if in == nil || in.ProtocolBinding != sdk.TransportProtocolJSONRPC {
			continue
		}
		if !strings.HasPrefix(in.URL, "http://") && !strings.HasPrefix(in.URL, "https://") {
			problems = append(problems, fmt.Sprintf("supportedInterfaces[%d].url %q is not an http(s) URL", i, in.URL))
			continue
		}
		ok = true
	}
	if !ok {
		problems = append(problems, "supportedInterfaces has no JSON-RPC interface (the binding Weft speaks)")
	}
	return problems
}

// toolArgs is a kind: a2a tool's input.
type toolArgs struct {
	Message     string   `json:"message"`
	Attachments []string `json:"attachments,omitempty"`
}

// session is what a thread keeps of its conversation with a remote agent (thread KV
// "a2a:TOOL"): the context, and the task waiting for input, if any.
type session struct {
	ContextID string `json:"context_id"`
	TaskID    string `json:"task_id,omitempty"`
}

// ToolHandler calls the remote agent of a kind: a2a tool. It sends the message (and the named
// thread files as file parts) in the thread's context with that agent, streaming: each update
// becomes a tool_progress event. A completed task's result is the agent's reply and its
// artifacts (text and links inline, raw files as the result's attachments); a task that
// needs input is a successful result that says so, and the next call answers it in the same
// task; a failed, rejected or canceled task is an error result.
func ToolHandler(t *weft.Tool) weft.ToolHandler {
	return weft.ToolFunc(func(ctx context.Context, st weft.State, raw json.RawMessage) (weft.ToolResult, error) {
		var args toolArgs
		if err := json.Unmarshal(raw, &args); err != nil {
			return weft.Failure(fmt.Sprintf("the arguments must be {message, attachments?}: %v", err)), nil
		}
		spec := t.A2A
		// The values the card URL and headers read never show in a result: one may be a key.
		var used []string
		lookup := func(n string) (string, bool, error) {
			v, ok, err := st.LookupEnv(ctx, n)
			if ok && v != "" {
				used = append(used, v)
			}
			return v, ok, err
		}
		fail := func(msg string) weft.ToolResult {
			for _, v := range used {
				msg = strings.ReplaceAll(msg, v, "[redacted]")
			}
			return weft.Failure(msg)
		}
		cardURL, err := weft.ExpandEnv(spec.Card, lookup)
		if err != nil {
			return weft.ToolResult{}, err
		}
		headers := map[string]string{}
		for k, v := range spec.Headers {
			if headers[k], err = weft.ExpandEnv(v, lookup); err != nil {
				return weft.ToolResult{}, fmt.Errorf("header %s: %w", k, err)
			}
		}
		card, err := FetchCard(ctx, cardURL, headers)
		if err != nil {
			return fail(err.Error()), nil
		}
		if p := CheckCard(card); len(p) > 0 {
			return fail("the agent card at " + cardURL + " is unusable: " + strings.Join(p, "; ")), nil
		}
		hc := httpClient(headers)
		client, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(hc))
		if err != nil {
			return fail(fmt.Sprintf("agent %s: %v", card.Name, err)), nil
		}
		defer client.Destroy()

		key := "a2a:" + t.Name
		var sess session
		if _, err := st.GetValue(ctx, key, &sess); err != nil {
			return weft.ToolResult{}, err
		}
		msg := sdk.NewMessage(sdk.MessageRoleUser)
		if strings.TrimSpace(args.Message) != "" {
			msg.Parts = append(msg.Parts, sdk.NewTextPart(args.Message))
		}
		for _, p := range args.Attachments {
			data, err := st.Files().ReadFile(ctx, p)
			if err != nil {
				return fail(fmt.Sprintf("attachment %s: %v", p, err)), nil
			}
			part := sdk.NewRawPart(data)
			part.Filename, part.MediaType = path.Base(p), weft.DetectMIME(p, data)
			msg.Parts = append(msg.Parts, part)
		}
		if len(msg.Parts) == 0 {
			return fail("message is empty: give the text to send (and attachments, paths of thread files)"), nil
		}
		msg.ContextID, msg.TaskID = sess.ContextID, sdk.TaskID(sess.TaskID)

		var last sdk.Event
		for ev, err := range client.SendStreamingMessage(ctx, &sdk.SendMessageRequest{Message: msg}) {
			if err != nil {
				return fail(fmt.Sprintf("agent %s: %v", card.Name, err)), nil
			}
			last = ev
			_ = st.Emit(ctx, "tool_progress", progress(t.Name, ev))
		}
		task, reply, err := outcome(ctx, client, last)
		if err != nil {
			return fail(fmt.Sprintf("agent %s: %v", card.Name, err)), nil
		}
		if task == nil { // a direct reply, no task
			if reply != nil && reply.ContextID != "" {
				sess = session{ContextID: reply.ContextID}
				if err := st.SetValue(ctx, key, sess); err != nil {
					return weft.ToolResult{}, err
				}
			}
			return weft.Success(partsText(reply.Parts)), nil
		}
		sess = session{ContextID: task.ContextID}
		if task.Status.State == sdk.TaskStateInputRequired || task.Status.State == sdk.TaskStateAuthRequired {
			sess.TaskID = string(task.ID)
		}
		if err := st.SetValue(ctx, key, sess); err != nil {
			return weft.ToolResult{}, err
		}
		return taskResult(ctx, st, t.Name, card.Name, task)
	})
}

// outcome is the task (fetched whole) or the message the stream ended with.
func outcome(ctx context.Context, c *a2aclient.Client, last sdk.Event) (*sdk.Task, *sdk.Message, error) {
	switch e := last.(type) {
	case nil:
		return nil, nil, fmt.Errorf("the stream ended without an event")
	case *sdk.Message:
		return nil, e, nil
	}
	id := last.TaskInfo().TaskID
	task, err := c.GetTask(ctx, &sdk.GetTaskRequest{ID: id})
	if err != nil {
		return nil, nil, fmt.Errorf("task %s: %w", id, err)
	}
	return task, nil, nil
}

// taskResult turns a finished (or interrupted) task into the tool's result.
func taskResult(ctx context.Context, st weft.State, tool, agent string, task *sdk.Task) (weft.ToolResult, error) {
	var reply string
	if task.Status.Message != nil {
		reply = partsText(task.Status.Message.Parts)
	}
	switch task.Status.State {
	case sdk.TaskStateCompleted:
	case sdk.TaskStateInputRequired, sdk.TaskStateAuthRequired:
		return weft.Success(fmt.Sprintf("The agent %s needs input before it can go on (task %s is %s). It says: %s\nCall %s again with your answer; the conversation continues in the same task.",
			agent, task.ID, task.Status.State, orNone(reply), tool)), nil
	default:
		return weft.Failure(fmt.Sprintf("the agent %s's task %s ended %s: %s", agent, task.ID, task.Status.State, orNone(reply))), nil
	}
	res := weft.Success(reply)
	var texts []string
	for _, a := range task.Artifacts {
		for _, p := range a.Parts {
			switch c := p.Content.(type) {
			case sdk.Text:
				texts = append(texts, fmt.Sprintf("[artifact %s] %s", orNone(a.Name), string(c)))
			case sdk.Raw:
				name := p.Filename
				if name == "" {
					name = string(a.ID)
				}
				res.Attachments = append(res.Attachments, weft.ToolAttachment{Name: path.Base(name), MimeType: orDefault(p.MediaType, weft.DetectMIME(name, c)), Data: []byte(c)})
			case sdk.URL:
				texts = append(texts, fmt.Sprintf("[artifact %s] %s", orNone(a.Name), string(c)))
			case sdk.Data:
				b, _ := json.Marshal(c.Value)
				texts = append(texts, fmt.Sprintf("[artifact %s] %s", orNone(a.Name), b))
			}
		}
	}
	if len(texts) > 0 {
		res.Result = strings.TrimSpace(res.Result + "\n\n" + strings.Join(texts, "\n"))
	}
	if res.Result == "" && len(res.Attachments) == 0 {
		res.Result = "The agent " + agent + " completed the task without a reply."
	}
	return res, nil
}

// progress describes a stream event for a tool_progress event.
func progress(tool string, ev sdk.Event) map[string]any {
	out := map[string]any{"tool": tool, "task": string(ev.TaskInfo().TaskID)}
	switch e := ev.(type) {
	case *sdk.Task:
		out["state"] = string(e.Status.State)
	case *sdk.TaskStatusUpdateEvent:
		out["state"] = string(e.Status.State)
		if e.Status.Message != nil {
			out["text"] = partsText(e.Status.Message.Parts)
		}
	case *sdk.TaskArtifactUpdateEvent:
		if e.Artifact != nil {
			out["artifact"] = e.Artifact.Name
		}
	case *sdk.Message:
		out["text"] = partsText(e.Parts)
	}
	return out
}

// partsText joins the text parts.
func partsText(parts sdk.ContentParts) string {
	var texts []string
	for _, p := range parts {
		if p != nil {
			if s := p.Text(); s != "" {
				texts = append(texts, s)
			}
		}
	}
	return strings.Join(texts, "\n")
}

func orNone(s string) string { return orDefault(s, "(nothing)") }

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
