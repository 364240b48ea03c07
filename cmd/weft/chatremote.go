package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// remoteChat drives a thread of a weft serve API.
type remoteChat struct {
	r      *remote
	agent  string
	mu     sync.Mutex
	thread string
	env    map[string]string // for the thread's creation
	ifBusy weft.IfBusy       // each message's policy when the thread is running (--if-busy)
}

func (c *remoteChat) Thread() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.thread
}

func (c *remoteChat) ensureThread(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.thread != "" {
		return c.thread, nil
	}
	var created struct {
		Thread weft.Thread `json:"thread"`
	}
	if err := c.r.do(ctx, "POST", "/api/threads", map[string]any{"agent": c.agent, "env": c.env}, &created); err != nil {
		if weft.ErrorCode(err) == weft.EMissingVariables {
			return "", fmt.Errorf("%w (set them with /env NAME=VALUE)", err)
		}
		return "", err
	}
	c.thread = created.Thread.ID
	return c.thread, nil
}

func (c *remoteChat) Converse(ctx context.Context, text string, side weft.Side, emit func(engine.Event)) error {
	id, err := c.ensureThread(ctx)
	if err != nil {
		return err
	}
	// The stream opens before the message is posted, at the thread's cursor, so that it holds
	// exactly this conversation.
	after, err := c.r.lastCursor(ctx, id)
	if err != nil {
		return err
	}
	resp, err := c.r.openStream(ctx, id, after)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var input string // the posted message's id
	if text != "" {
		msg := map[string]any{"content": text}
		if c.ifBusy != "" {
			msg["if_busy"] = c.ifBusy
		}
		var posted struct {
			MessageID string `json:"message_id"`
		}
		err = c.r.do(ctx, "POST", threadPath(id)+"/messages", msg, &posted)
		input = posted.MessageID
	} else {
		body := map[string]any{}
		if side != "" {
			body["side"] = side
		}
		err = c.r.do(ctx, "POST", threadPath(id)+"/continue", body, nil)
	}
	if err != nil {
		return err
	}
	return c.follow(ctx, id, input, resp.Body, emit)
}

// follow passes the events of a thread's stream to emit until the thread's run stops. With input
// set (a posted message's id), the events of a run that did not take it (one it interrupts, or one
// running when it was queued) are skipped (inputFilter).
func (c *remoteChat) follow(ctx context.Context, id, input string, stream io.Reader, emit func(engine.Event)) error {
	mine := inputFilter{input: input}
	sc := bufio.NewScanner(stream)
	sc.Buffer(make([]byte, 64<<10), 32<<20)
	var typ string
	for sc.Scan() {
		line := sc.Text()
		if t, ok := strings.CutPrefix(line, "event: "); ok {
			typ = t
			continue
		}
		raw, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var data map[string]any
		if json.Unmarshal([]byte(raw), &data) != nil {
			continue
		}
		if !mine.pass(typ, data) {
			continue
		}
		ev := engine.Event{Type: typ, ThreadID: strIn(data, "thread_id"), Data: engine.Fields(data)}
		delete(data, "type")
		delete(data, "thread_id")
		delete(data, "seq")
		emit(ev)
		if typ == "run_stopped" && ev.ThreadID == id {
			return nil
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("the stream of thread %s ended before its run stopped", id)
}

func (c *remoteChat) Approvals(ctx context.Context) ([]weft.ToolCallRecord, error) {
	var pending []weft.ToolCallRecord
	if err := c.r.do(ctx, "GET", threadPath(c.Thread())+"/approvals", nil, &pending); err != nil {
		return nil, err
	}
	return pending, nil
}

// Decide posts the decision with the thread's stream open, so that the run the server starts
// when no call waits any more is followed from its first event.
func (c *remoteChat) Decide(ctx context.Context, callID string, d engine.Decision, emit func(engine.Event)) (bool, error) {
	id := c.Thread()
	after, err := c.r.lastCursor(ctx, id)
	if err != nil {
		return false, err
	}
	resp, err := c.r.openStream(ctx, id, after)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body := map[string]any{"approve": d.Approve}
	if d.Arguments != nil {
		body["arguments"] = d.Arguments
	}
	if d.Reason != "" {
		body["reason"] = d.Reason
	}
	var out struct{ Ready bool }
	if err := c.r.do(ctx, "POST", threadPath(id)+"/approvals/"+url.PathEscape(callID), body, &out); err != nil || !out.Ready {
		return false, err
	}
	return true, c.follow(ctx, id, "", resp.Body, emit)
}

func (c *remoteChat) Stop(ctx context.Context) error {
	id := c.Thread()
	if id == "" {
		return nil
	}
	return c.r.do(ctx, "POST", threadPath(id)+"/stop", nil, nil)
}

func (c *remoteChat) SetEnv(ctx context.Context, name, value string) (weft.VarType, error) {
	c.mu.Lock()
	id := c.thread
	if id == "" {
		if c.env == nil {
			c.env = map[string]string{}
		}
		c.env[name] = value
	}
	c.mu.Unlock()
	if id == "" {
		return weft.VarSecret, nil
	}
	body := map[string]any{"env": map[string]any{"set": map[string]any{name: map[string]any{"value": value}}}}
	return weft.VarSecret, c.r.do(ctx, "PATCH", threadPath(id), body, nil)
}

func (c *remoteChat) Info(ctx context.Context) (chatThreadInfo, error) {
	var info chatThreadInfo
	err := c.r.do(ctx, "GET", threadPath(c.Thread()), nil, &info)
	return info, err
}

func (c *remoteChat) Document(ctx context.Context) (string, error) {
	doc, err := buildDocument(ctx, remoteSource{c.r}, c.Thread(), &engine.RunResult{}, nil)
	if err != nil {
		return "", err
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	return string(b), nil
}
