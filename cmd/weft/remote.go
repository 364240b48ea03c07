package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// remote is a client of a weft serve API: the commands that read or drive threads use it instead
// of a local store when --server (or WEFT_SERVER) is set.
type remote struct {
	base, key string
	http      *http.Client
}

// remoteOf returns the server client the flags or the environment name, or nil for local use.
func remoteOf(g *globals) *remote {
	base := g.server
	if base == "" {
		base = os.Getenv("WEFT_SERVER")
	}
	if base == "" {
		return nil
	}
	key := g.apiKey
	if key == "" {
		key = os.Getenv("WEFT_API_KEY")
	}
	return &remote{base: serverBase(base), key: key, http: &http.Client{}}
}

// serverBase turns what a user passes as --server into the URL the API's paths (/api/…) go
// under: a bare host:port gets http://, and the /api that weft serve prints in its banner
// ("serving http://127.0.0.1:8080/api") is dropped, so that line works when pasted.
func serverBase(s string) string {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	s = strings.TrimRight(s, "/")
	return strings.TrimRight(strings.TrimSuffix(s, "/api"), "/")
}

// apiCodes maps the API's error codes back to the domain's, so that exit codes match local use.
var apiCodes = map[string]weft.Code{"bad_request": weft.EInvalid, "validation_failed": weft.EInvalid,
	"not_found": weft.ENotFound, "conflict": weft.EConflict, "thread_terminated": weft.EConflict,
	"thread_running": weft.EConflict, "thread_busy": weft.EConflict, "missing_required_variables": weft.EMissingVariables,
	"unauthorized": weft.EUnauthorized, "forbidden": weft.EForbidden, "payload_too_large": weft.EInvalid}

func (r *remote) request(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, rd)
	if err != nil {
		return nil, exit(exitUsage, fmt.Errorf("--server %s: %w", r.base, err))
	}
	if r.key != "" {
		req.Header.Set("Authorization", "Bearer "+r.key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// do sends a request and decodes a JSON answer into out (when non-nil); an error answer becomes a
// *weft.Error with the API's message.
func (r *remote) do(ctx context.Context, method, path string, body, out any) error {
	req, err := r.request(ctx, method, path, body)
	if err != nil {
		return err
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return fmt.Errorf("--server %s: %w", r.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error struct{ Code, Message string }
		}
		_ = json.Unmarshal(data, &e)
		code, ok := apiCodes[e.Error.Code]
		if !ok {
			code = weft.EInternal
		}
		msg := e.Error.Message
		if msg == "" {
			msg = resp.Status
		}
		if resp.StatusCode == http.StatusUnauthorized {
			msg = r.keyHint(msg)
		}
		return &weft.Error{Code: code, Message: msg}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("--server %s: %s %s: %w", r.base, method, path, err)
		}
	}
	return nil
}

// keyHint rewrites the server's 401 message in the CLI's terms: the flag and variable that give
// the key, not the HTTP header the server asks for.
func (r *remote) keyHint(msg string) string {
	if r.key == "" {
		return "--server " + r.base + " needs an API key: pass --api-key KEY or set WEFT_API_KEY " +
			"(weft keys create --db DB, on the server's store, makes one)"
	}
	return msg + " (the key given by --api-key or WEFT_API_KEY)"
}

// remoteExit is the exit code of a failed server call, as for the same failure locally.
func remoteExit(err error) error {
	switch weft.ErrorCode(err) {
	case weft.ENotFound, weft.EUnauthorized, weft.EForbidden, weft.EInvalid, weft.EConflict:
		return exit(exitUsage, err)
	case weft.EMissingVariables:
		return exit(exitCreation, err)
	}
	return exit(exitFailure, err)
}

func (r *remote) threadsList(cmd *cobra.Command, agent string, limit int) error {
	q := url.Values{"limit": {strconv.Itoa(min(max(limit, 1), 500))}}
	if agent != "" {
		q.Set("agent", agent)
	}
	var out struct {
		Items []*weft.Thread `json:"items"`
		Total int            `json:"total"`
	}
	if err := r.do(cmd.Context(), "GET", "/api/threads?"+q.Encode(), nil, &out); err != nil {
		return remoteExit(err)
	}
	// The server redacts what it answers.
	printThreads(cmd, out.Items, out.Total, func(_, preview string) string { return preview })
	return nil
}

// messages reads all of a thread's messages (every depth, silent ones included), page by page.
func (r *remote) messages(ctx context.Context, id string) ([]weft.Message, error) {
	var all []weft.Message
	for offset := 0; ; {
		var page struct {
			Items   []weft.Message `json:"items"`
			HasMore bool           `json:"has_more"`
		}
		path := fmt.Sprintf("/api/threads/%s/messages?limit=500&offset=%d&include_silent=true&depth=1048576", url.PathEscape(id), offset)
		if err := r.do(ctx, "GET", path, nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Items...)
		offset += len(page.Items)
		if !page.HasMore || len(page.Items) == 0 {
			return all, nil
		}
	}
}

func (r *remote) threadsShow(cmd *cobra.Command, id string) error {
	msgs, err := r.messages(cmd.Context(), id)
	if err != nil {
		return remoteExit(err)
	}
	var recs []weft.ToolCallRecord
	if err := r.do(cmd.Context(), "GET", "/api/threads/"+url.PathEscape(id)+"/tool-calls", nil, &recs); err != nil {
		return remoteExit(err)
	}
	printMessages(cmd.OutOrStdout(), msgs, approvalNotes(recs))
	return nil
}

// threadsAction stops or deletes a thread on the server.
func (r *remote) threadsAction(cmd *cobra.Command, method, path, done string) error {
	if err := r.do(cmd.Context(), method, path, nil, nil); err != nil {
		return remoteExit(err)
	}
	fmt.Fprintln(cmd.OutOrStdout(), done)
	return nil
}

// apiLog is a log row as the API answers it.
type apiLog struct {
	ID           string          `json:"id"`
	Kind         string          `json:"kind"`
	Model        string          `json:"model"`
	Depth        int             `json:"depth"`
	FinishReason string          `json:"finish_reason"`
	Error        string          `json:"error"`
	ErrorType    string          `json:"error_type"`
	InputTokens  int             `json:"input_tokens"`
	OutputTokens int             `json:"output_tokens"`
	CostTotal    *float64        `json:"cost_total"`
	LatencyMS    int64           `json:"latency_ms"`
	CreatedAt    time.Time       `json:"created_at"`
	RequestBody  json.RawMessage `json:"request_body"`
	ResponseBody json.RawMessage `json:"response_body"`
}

func (l apiLog) entry() weft.LogEntry {
	e := weft.LogEntry{ID: l.ID, Kind: l.Kind, Model: l.Model, Depth: l.Depth, FinishReason: l.FinishReason,
		Error: l.Error, ErrorType: l.ErrorType, InputTokens: l.InputTokens, OutputTokens: l.OutputTokens,
		CostTotal: l.CostTotal, LatencyMS: l.LatencyMS, CreatedAt: l.CreatedAt}
	if string(l.RequestBody) != "null" {
		e.RequestBody = l.RequestBody
	}
	if string(l.ResponseBody) != "null" {
		e.ResponseBody = l.ResponseBody
	}
	return e
}

func (r *remote) logs(cmd *cobra.Command, id string, full, asJSON bool) error {
	ctx := cmd.Context()
	var rows []apiLog
	for offset := 0; ; {
		var page struct {
			Items   []apiLog `json:"items"`
			HasMore bool     `json:"has_more"`
		}
		if err := r.do(ctx, "GET", fmt.Sprintf("/api/threads/%s/logs?limit=500&offset=%d", url.PathEscape(id), offset), nil, &page); err != nil {
			return remoteExit(err)
		}
		rows = append(rows, page.Items...)
		offset += len(page.Items)
		if !page.HasMore || len(page.Items) == 0 {
			break
		}
	}
	if full || asJSON {
		for i := range rows {
			if err := r.do(ctx, "GET", "/api/threads/"+url.PathEscape(id)+"/logs/"+url.PathEscape(rows[i].ID), nil, &rows[i]); err != nil {
				return remoteExit(err)
			}
		}
	}
	out := cmd.OutOrStdout()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	logs := make([]weft.LogEntry, len(rows))
	for i, l := range rows {
		logs[i] = l.entry()
	}
	writeLogs(out, logs, full)
	return nil
}

// run creates a thread on the server (or uses --thread), posts the message and prints the reply
// as it streams; the exit status follows the run's stop reason as for a local run.
func (r *remote) run(cmd *cobra.Command, f *runFlags, args []string) error {
	if f.asJSON || f.script != "" || f.trace != "" {
		return exit(exitUsage, fmt.Errorf("--json, --model-script and --trace-requests apply to local runs only (not with --server)"))
	}
	message, err := readMessage(cmd.InOrStdin(), args)
	if err != nil {
		return err
	}
	env, err := parseEnv(f.env, f.envFile)
	if err != nil {
		return exit(exitUsage, err)
	}
	threadArgs, err := parseArgs(f.args, f.argsJSON)
	if err != nil {
		return exit(exitUsage, err)
	}
	files, err := readAttachments(f.attach)
	if err != nil {
		return exit(exitUsage, err)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	id := f.thread
	if id == "" {
		var created struct {
			Thread weft.Thread `json:"thread"`
		}
		body := map[string]any{"agent": args[0], "env": env, "arguments": threadArgs}
		if err := r.do(ctx, "POST", "/api/threads", body, &created); err != nil {
			if c := weft.ErrorCode(err); c == weft.EInvalid || c == weft.EMissingVariables {
				return exit(exitCreation, err)
			}
			return remoteExit(err)
		}
		id = created.Thread.ID
	}
	if message == "" && len(files) == 0 {
		return exit(exitUsage, fmt.Errorf("a message is needed with --server (continue a thread over the API with POST /api/threads/%s/continue)", id))
	}
	// The stream starts before the message is posted, from the thread's current cursor, so that
	// it sees exactly this message's runs.
	var after int64
	if f.thread != "" {
		after, err = r.lastCursor(ctx, id)
		if err != nil {
			return remoteExit(err)
		}
	}
	resp, err := r.openStream(ctx, id, after)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg := map[string]any{"content": message}
	if f.ifBusy != "" {
		msg["if_busy"] = f.ifBusy
	}
	if len(files) > 0 {
		atts := make([]map[string]any, len(files))
		for i, a := range files {
			atts[i] = map[string]any{"name": a.Name, "mime_type": a.MimeType, "data": base64.StdEncoding.EncodeToString(a.Data)}
		}
		msg["attachments"] = atts
	}
	var posted struct {
		MessageID string `json:"message_id"`
	}
	if err := r.do(ctx, "POST", "/api/threads/"+url.PathEscape(id)+"/messages", msg, &posted); err != nil {
		return remoteExit(err)
	}
	return r.follow(ctx, cmd, f, id, posted.MessageID, resp)
}

// openStream opens a thread's SSE stream after the cursor.
func (r *remote) openStream(ctx context.Context, id string, after int64) (*http.Response, error) {
	req, err := r.request(ctx, "GET", fmt.Sprintf("/api/threads/%s/events?after=%d", url.PathEscape(id), after), nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return nil, exit(exitFailure, fmt.Errorf("--server %s: %w", r.base, err))
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, remoteExit(weft.Errorf(weft.ENotFound, "thread %s: %s", id, resp.Status))
	}
	return resp, nil
}

// follow prints a thread's run from its stream as weft run prints it, until the run stops: the
// reply's text as it streams, the calls waiting for approval (exit 6), a failed stop (exit 1).
func (r *remote) follow(ctx context.Context, cmd *cobra.Command, f *runFlags, id, input string, resp *http.Response) error {
	out, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	streamed, last := false, ""
	// Until the posted message input is stored, what comes is of a run that did not take it: one
	// it interrupts (--if-busy interrupt, rollback) or that was running when it was queued.
	mine := inputFilter{input: input}
	// On a terminal, standard error shows the run's progress, as for a local run.
	var progress *runProgress
	if !f.quiet && !f.verbose {
		progress = newRunProgress(stderr)
	}
	if progress != nil {
		progress.follow(id)
		defer progress.done()
	}
	sameTerminal := progress != nil && isTerminal(out)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 32<<20)
	var typ string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			typ = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			var data map[string]any
			if json.Unmarshal([]byte(line[len("data: "):]), &data) != nil {
				continue
			}
			if f.verbose && !f.quiet {
				fmt.Fprintf(stderr, "· %s\n", typ)
			}
			if progress != nil {
				thread, _ := data["thread_id"].(string)
				progress.event(engine.Event{Type: typ, ThreadID: thread, Data: engine.Fields(data)})
			}
			if !mine.pass(typ, data) {
				continue
			}
			switch typ {
			case "message_chunk":
				if d, _ := data["depth"].(float64); d == 0 {
					delta, _ := data["delta"].(string)
					if sameTerminal {
						progress.text(out, delta)
					} else {
						fmt.Fprint(out, delta)
					}
					streamed = true
				}
			case "message":
				if m, ok := data["message"].(map[string]any); ok && m["role"] == "assistant" && m["side"] == "a" {
					if d, _ := m["depth"].(float64); d == 0 {
						last, _ = m["content"].(string)
					}
				}
			case "run_stopped":
				reason, _ := data["reason"].(string)
				if progress != nil {
					progress.done()
				}
				switch {
				case !streamed && last != "":
					fmt.Fprintln(out, last)
				case streamed:
					fmt.Fprintln(out)
				}
				if awaiting(weft.StopReason(reason)) {
					if !f.quiet {
						r.waitingCalls(ctx, stderr, id)
					}
					return exit(exitApproval, nil)
				}
				if !weft.StopReason(reason).OK() {
					if !f.quiet {
						fmt.Fprintf(stderr, "weft: run stopped: %s", reason)
						if e, _ := data["error"].(string); e != "" {
							fmt.Fprintf(stderr, ": %s", e)
						}
						fmt.Fprintf(stderr, " (thread %s)\n", id)
					}
					return exit(exitFailure, nil)
				}
				if !f.quiet {
					fmt.Fprintf(stderr, "thread %s\n", id)
				}
				return nil
			}
		}
	}
	if ctx.Err() != nil {
		// Interrupted or out of time: the run is stopped on the server, as a local run would be.
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := r.do(stopCtx, "POST", "/api/threads/"+url.PathEscape(id)+"/stop", nil, nil); err != nil {
			fmt.Fprintf(stderr, "weft: stopping thread %s: %v\n", id, err)
		}
		if cmd.Context().Err() != nil {
			return exit(exitInterrupted, nil)
		}
		return exit(exitFailure, fmt.Errorf("thread %s: no answer within --timeout %s; its run was stopped", id, f.timeout))
	}
	return exit(exitFailure, fmt.Errorf("the stream of thread %s ended before its run stopped", id))
}

// lastCursor returns the cursor of the thread's newest recorded event (the thread's event_seq).
func (r *remote) lastCursor(ctx context.Context, id string) (int64, error) {
	var t map[string]any
	if err := r.do(ctx, "GET", "/api/threads/"+url.PathEscape(id), nil, &t); err != nil {
		return 0, err
	}
	if seq, ok := t["event_seq"].(float64); ok {
		return int64(seq), nil
	}
	return 0, nil
}

// waitingCalls prints the thread's calls that wait for approval and how to decide them.
func (r *remote) waitingCalls(ctx context.Context, w io.Writer, id string) {
	var pending []struct {
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	if err := r.do(ctx, "GET", "/api/threads/"+url.PathEscape(id)+"/approvals", nil, &pending); err != nil {
		fmt.Fprintf(w, "weft: thread %s waits for approvals: %v\n", id, err)
		return
	}
	for _, p := range pending {
		fmt.Fprintf(w, "weft: %s(%s) waits for approval: POST %s/api/threads/%s/approvals/%s {\"approve\": true|false}\n",
			p.Name, p.Arguments, r.base, id, p.CallID)
	}
}

// inputFilter tells the events of the run that takes a posted message (input, its id; "" = every
// event) from those of a run before it: events until the message is stored are skipped, and so
// are the streamed chunks of a reply begun before it. Chunks are not recorded events, so a stream
// may deliver a late one of the interrupted run's reply after the message: its message id was
// seen before.
type inputFilter struct {
	input  string
	taken  bool
	before map[string]bool // replies (message ids) that streamed before the input was stored
}

func (f *inputFilter) pass(typ string, data map[string]any) bool {
	chunk := typ == "message_chunk" || typ == "reasoning_chunk"
	if f.input == "" {
		return true
	}
	if f.taken {
		id, _ := data["message_id"].(string)
		return !chunk || !f.before[id]
	}
	if chunk {
		if id, _ := data["message_id"].(string); id != "" {
			if f.before == nil {
				f.before = map[string]bool{}
			}
			f.before[id] = true
		}
		return false
	}
	m, ok := data["message"].(map[string]any)
	if !ok || typ != "message" || m["id"] != f.input {
		return false
	}
	f.taken = true
	return true
}
