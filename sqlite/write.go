package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/weft-agents/weft"
)

var errClosed = errors.New("sqlite: store is closed")

// writer is the write connection with its prepared statements, cached by SQL text. It is used only
// while Store.wmu is held.
type writer struct {
	conn  *sql.Conn
	cache map[string]*sql.Stmt
}

func (s *Store) prepareWriter(ctx context.Context) error {
	s.w = &writer{conn: s.wconn, cache: map[string]*sql.Stmt{}}
	for _, q := range hotWrites() {
		if _, err := s.w.stmt(ctx, q); err != nil {
			return fmt.Errorf("sqlite: prepare: %w", err)
		}
	}
	return nil
}

func (w *writer) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := w.cache[q]; ok {
		return st, nil
	}
	st, err := w.conn.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	w.cache[q] = st
	return st, nil
}

func (w *writer) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	st, err := w.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// execN runs a statement and returns the number of rows it changed.
func (w *writer) execN(ctx context.Context, q string, args ...any) (int64, error) {
	r, err := w.exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}

// row runs a query and scans its first row into dest; sql.ErrNoRows when there is none.
func (w *writer) row(ctx context.Context, q string, dest []any, args ...any) error {
	st, err := w.stmt(ctx, q)
	if err != nil {
		return err
	}
	return st.QueryRowContext(ctx, args...).Scan(dest...)
}

func (w *writer) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := w.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (w *writer) close() {
	for _, st := range w.cache {
		st.Close()
	}
}

// write runs fn in a BEGIN IMMEDIATE transaction on the write connection: committed when fn returns
// nil, rolled back when it fails or panics.
func (s *Store) write(ctx context.Context, fn func(w *writer) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	w := s.w
	if w == nil {
		return errClosed
	}
	if _, err := w.exec(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	done := false
	defer func() {
		if !done { // fn panicked
			w.exec(context.Background(), "ROLLBACK")
		}
	}()
	err = fn(w)
	done = true
	if err == nil {
		if _, err = w.exec(ctx, "COMMIT"); err == nil {
			return nil
		}
		err = fmt.Errorf("sqlite: commit: %w", err)
	}
	w.exec(context.Background(), "ROLLBACK")
	return err
}

// Write statements; hotWrites are prepared at Open.
const (
	qThreadExists = `SELECT 1 FROM threads WHERE id = ?`
	qFence        = `SELECT l.owner, l.token, l.expires_at FROM threads t LEFT JOIN leases l ON l.thread_id = ?2 WHERE t.id = ?1`
	// The messages_seq trigger advances threads.msg_seq.
	qInsertMsg = `INSERT INTO messages (thread_id, seq, id, role, side, content, name, tool_calls, tool_call_id, tool_status,
		status, silent, depth, parent_id, prompt, reasoning, attachments, metadata, log_id, run_id, created_at)
		VALUES (?1, (SELECT msg_seq + 1 FROM threads WHERE id = ?1), ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,
		?15, ?16, ?17, ?18, ?19, ?20) RETURNING seq`
	qUpdateMsg = `UPDATE messages SET content = COALESCE(?3, content), status = COALESCE(?4, status),
		tool_calls = COALESCE(?5, tool_calls), attachments = COALESCE(?6, attachments), metadata = COALESCE(?7, metadata),
		silent = COALESCE(?8, silent), reasoning = COALESCE(?9, reasoning), log_id = COALESCE(?10, log_id)
		WHERE thread_id = ?1 AND id = ?2`
	qDeleteMsg  = `DELETE FROM messages WHERE thread_id = ? AND id = ?`
	qPutToolCal = `INSERT INTO tool_calls (thread_id, call_id, seq, message_id, name, arguments, status, result_message_id,
		idempotent, meta, started_at, finished_at)
		VALUES (?1, ?2, (SELECT call_seq + 1 FROM threads WHERE id = ?1), ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
		ON CONFLICT (thread_id, call_id) DO UPDATE SET message_id = excluded.message_id, name = excluded.name,
		arguments = excluded.arguments, status = excluded.status, result_message_id = excluded.result_message_id,
		idempotent = excluded.idempotent, meta = excluded.meta, started_at = excluded.started_at, finished_at = excluded.finished_at
		RETURNING seq`
	qSetExec = `INSERT INTO exec_state (thread_id, key, value) VALUES (?, ?, ?)
		ON CONFLICT (thread_id, key) DO UPDATE SET value = excluded.value`
	qDelExec = `DELETE FROM exec_state WHERE thread_id = ? AND key = ?`
	qPutLog  = `INSERT INTO logs (thread_id, id, run_id, message_id, parent_log_id, retry_of_log_id, kind, provider, model,
		model_id, prompt, side, depth, status_code, finish_reason, error, error_type, error_origin, is_complete,
		input_tokens, cached_tokens, output_tokens, reasoning_tokens, total_tokens, cost_input, cost_cached, cost_output,
		cost_total, latency_ms, time_to_first_token_ms, generation_ms, request_body, response_body, tools_offered,
		tools_called, queued_tools, tool_choice, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (thread_id, id) DO UPDATE SET run_id = excluded.run_id, message_id = excluded.message_id,
		parent_log_id = excluded.parent_log_id, retry_of_log_id = excluded.retry_of_log_id, kind = excluded.kind,
		provider = excluded.provider, model = excluded.model, model_id = excluded.model_id, prompt = excluded.prompt,
		side = excluded.side, depth = excluded.depth, status_code = excluded.status_code,
		finish_reason = excluded.finish_reason, error = excluded.error, error_type = excluded.error_type,
		error_origin = excluded.error_origin, is_complete = excluded.is_complete, input_tokens = excluded.input_tokens,
		cached_tokens = excluded.cached_tokens, output_tokens = excluded.output_tokens,
		reasoning_tokens = excluded.reasoning_tokens, total_tokens = excluded.total_tokens,
		cost_input = excluded.cost_input, cost_cached = excluded.cost_cached, cost_output = excluded.cost_output,
		cost_total = excluded.cost_total, latency_ms = excluded.latency_ms,
		time_to_first_token_ms = excluded.time_to_first_token_ms, generation_ms = excluded.generation_ms,
		request_body = excluded.request_body, response_body = excluded.response_body,
		tools_offered = excluded.tools_offered, tools_called = excluded.tools_called, queued_tools = excluded.queued_tools,
		tool_choice = excluded.tool_choice, created_at = excluded.created_at`
	qUpdateThread = `UPDATE threads SET agent = COALESCE(?2, agent), label = COALESCE(?3, label), tags = COALESCE(?4, tags),
		properties = COALESCE(?5, properties), arguments = COALESCE(?6, arguments), status = COALESCE(?7, status),
		stop_reason = COALESCE(?8, stop_reason), last_activity_at = COALESCE(?9, last_activity_at),
		preview = COALESCE(?10, preview), updated_at = ?11 WHERE id = ?1`
	qSetKV = `INSERT INTO kv (thread_id, key, value, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (thread_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`
	qDelKV      = `DELETE FROM kv WHERE thread_id = ? AND key = ?`
	qDrainQueue = `SELECT ` + queueCols + ` FROM queue WHERE thread_id = ? ORDER BY seq`
	qDelQueue   = `DELETE FROM queue WHERE thread_id = ? AND seq <= ?`
)

// hotWrites lists the statements prepared at Open.
func hotWrites() []string {
	return []string{"BEGIN IMMEDIATE", "COMMIT", "ROLLBACK", qThreadExists, qFence, qInsertMsg,
		qUpdateMsg, qPutToolCal, qSetExec, qDelExec, qPutLog, qUpdateThread, qSetKV, qDrainQueue, qDelQueue}
}

// Tx runs fn in one BEGIN IMMEDIATE transaction on the write connection: committed when fn returns
// nil, rolled back when it returns an error or panics. Transactions of all threads run one at a time
// (SQLite has one writer); fn may read through the Store (it sees committed data) but must not
// start another Tx or other write, nor keep the Tx after returning. With a fence, the lease of
// fence.ThreadID (the Tx's thread when empty) must be live and held with fence's node and token,
// checked inside the transaction, else ErrLeaseLost and nothing is written. An unknown thread is
// ErrNotFound.
func (s *Store) Tx(ctx context.Context, threadID string, fence *weft.Fence, fn func(weft.Tx) error) error {
	return s.write(ctx, func(w *writer) error {
		if fence == nil {
			var one int
			if err := w.row(ctx, qThreadExists, []any{&one}, threadID); err != nil {
				return s.noThread(threadID, err)
			}
		} else {
			leaseThread := fence.ThreadID
			if leaseThread == "" {
				leaseThread = threadID
			}
			var owner sql.NullString
			var token, expires sql.NullInt64
			if err := w.row(ctx, qFence, []any{&owner, &token, &expires}, threadID, leaseThread); err != nil {
				return s.noThread(threadID, err)
			}
			if owner.String != fence.Node || token.Int64 != fence.Token || s.now().UnixNano() >= expires.Int64 {
				return fmt.Errorf("thread %s: lease token %d of %s: %w", leaseThread, fence.Token, fence.Node, weft.ErrLeaseLost)
			}
		}
		t := tx{s: s, w: w, ctx: ctx, id: threadID}
		return fn(&t)
	})
}

// noThread maps a missing row to ErrNotFound naming the thread.
func (s *Store) noThread(threadID string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("thread %s: %w", threadID, weft.ErrNotFound)
	}
	return fmt.Errorf("sqlite: thread %s: %w", threadID, err)
}

// tx is the weft.Tx of one Store.Tx call.
type tx struct {
	s   *Store
	w   *writer
	ctx context.Context
	id  string
	now time.Time
}

func (t *tx) clock() time.Time {
	if t.now.IsZero() {
		t.now = t.s.now().UTC()
	}
	return t.now
}

func (t *tx) fail(what string, err error) error {
	return fmt.Errorf("sqlite: thread %s: %s: %w", t.id, what, err)
}

// UpdateThread changes the thread's fields; UpdatedAt becomes now.
func (t *tx) UpdateThread(p weft.ThreadPatch) error {
	var tags, props, args, act any
	if p.Tags != nil {
		b, err := marshal(p.Tags)
		if err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: tags: %v", t.id, err)
		}
		tags = string(b)
	}
	if p.Properties != nil {
		b, err := marshal(p.Properties)
		if err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: properties: %v", t.id, err)
		}
		props = string(b)
	}
	if p.Arguments != nil {
		b, err := marshal(p.Arguments)
		if err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: arguments: %v", t.id, err)
		}
		args = string(b)
	}
	if p.LastActivityAt != nil {
		act = nanos(*p.LastActivityAt)
	}
	_, err := t.w.exec(t.ctx, qUpdateThread, t.id, strPtr(p.Agent), strPtr(p.Label), tags, props, args,
		strPtr((*string)(p.Status)), strPtr((*string)(p.StopReason)), act, strPtr(p.Preview), nanos(t.clock()))
	if err != nil {
		return t.fail("update thread", err)
	}
	return nil
}

// strPtr turns an optional string into a bind value (NULL when absent).
func strPtr(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

// InsertMessage inserts m with the next seq, assigning ID (when empty), ThreadID, Seq and CreatedAt
// (when zero).
func (t *tx) InsertMessage(m *weft.Message) error {
	calls, err := jsonText(m.ToolCalls)
	if err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: message tool calls: %v", t.id, err)
	}
	atts, err := jsonText(m.Attachments)
	if err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: message attachments: %v", t.id, err)
	}
	md, err := mapText(m.Metadata)
	if err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: message metadata: %v", t.id, err)
	}
	if m.ID == "" {
		m.ID = weft.NewID("msg_")
	}
	created := m.CreatedAt
	if created.IsZero() {
		created = t.clock()
	}
	var seq int64
	err = t.w.row(t.ctx, qInsertMsg, []any{&seq}, t.id, m.ID, string(m.Role), string(m.Side), m.Content, m.Name, calls,
		m.ToolCallID, string(m.ToolStatus), string(m.Status), boolInt(m.Silent), m.Depth, m.ParentID, m.Prompt,
		m.Reasoning, atts, md, m.LogID, m.RunID, nanos(created))
	switch {
	case isConstraint(err, "UNIQUE"):
		return weft.Errorf(weft.EConflict, "thread %s: message %s already exists", t.id, m.ID)
	case isConstraint(err, "NOT NULL"): // no thread row to take a seq from
		return fmt.Errorf("thread %s: %w", t.id, weft.ErrNotFound)
	case err != nil:
		return t.fail("insert message", err)
	}
	m.ThreadID, m.Seq, m.CreatedAt = t.id, seq, created.UTC()
	return nil
}

// UpdateMessage changes a message; ErrNotFound if it does not exist.
func (t *tx) UpdateMessage(id string, ch weft.MessageChange) error {
	var calls, atts, md any
	if ch.ToolCalls != nil {
		v, err := jsonText(*ch.ToolCalls)
		if err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: message %s tool calls: %v", t.id, id, err)
		}
		calls = v
	}
	if ch.Attachments != nil {
		v, err := jsonText(*ch.Attachments)
		if err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: message %s attachments: %v", t.id, id, err)
		}
		atts = v
	}
	if ch.Metadata != nil {
		v, err := mapText(ch.Metadata)
		if err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: message %s metadata: %v", t.id, id, err)
		}
		md = v
	}
	var silent any
	if ch.Silent != nil {
		silent = boolInt(*ch.Silent)
	}
	n, err := t.w.execN(t.ctx, qUpdateMsg, t.id, id, strPtr(ch.Content), strPtr((*string)(ch.Status)), calls, atts, md,
		silent, strPtr(ch.Reasoning), strPtr(ch.LogID))
	if err != nil {
		return t.fail("update message "+id, err)
	}
	if n == 0 {
		return fmt.Errorf("thread %s: message %s: %w", t.id, id, weft.ErrNotFound)
	}
	return nil
}

// DeleteMessage removes a message; its seq is not reused.
func (t *tx) DeleteMessage(id string) error {
	n, err := t.w.execN(t.ctx, qDeleteMsg, t.id, id)
	if err != nil {
		return t.fail("delete message "+id, err)
	}
	if n == 0 {
		return fmt.Errorf("thread %s: message %s: %w", t.id, id, weft.ErrNotFound)
	}
	return nil
}

// PutToolCall inserts or replaces a tool-call record, assigning ThreadID and Seq (kept from the
// first insert); Status defaults to pending.
func (t *tx) PutToolCall(c *weft.ToolCallRecord) error {
	if c.CallID == "" {
		return weft.Errorf(weft.EInvalid, "thread %s: tool call without id", t.id)
	}
	if len(c.Meta) > 0 && !json.Valid(c.Meta) {
		return weft.Errorf(weft.EInvalid, "thread %s: tool call %s: meta is not valid JSON", t.id, c.CallID)
	}
	if c.Status == "" {
		c.Status = weft.CallPending
	}
	var seq int64
	err := t.w.row(t.ctx, qPutToolCal, []any{&seq}, t.id, c.CallID, c.MessageID, c.Name, c.Arguments, string(c.Status),
		c.ResultMessageID, boolInt(c.Idempotent), string(c.Meta), nanosPtr(c.StartedAt), nanosPtr(c.FinishedAt))
	if err != nil {
		return t.fail("put tool call "+c.CallID, err)
	}
	c.ThreadID, c.Seq = t.id, seq
	return nil
}

// DrainQueue removes and returns the queued messages in order.
func (t *tx) DrainQueue() ([]weft.QueuedMessage, error) {
	rows, err := t.w.query(t.ctx, qDrainQueue, t.id)
	if err != nil {
		return nil, t.fail("drain queue", err)
	}
	out, err := scanQueue(rows)
	if err != nil {
		return nil, t.fail("drain queue", err)
	}
	if len(out) > 0 {
		if _, err := t.w.exec(t.ctx, qDelQueue, t.id, out[len(out)-1].Seq); err != nil {
			return nil, t.fail("drain queue", err)
		}
	}
	return out, nil
}

// SetExecState stores a run-state document (nil deletes it).
func (t *tx) SetExecState(key string, value json.RawMessage) error {
	if err := checkExecState(t.id, key, value); err != nil {
		return err
	}
	var err error
	if value == nil {
		_, err = t.w.exec(t.ctx, qDelExec, t.id, key)
	} else {
		_, err = t.w.exec(t.ctx, qSetExec, t.id, key, string(value))
	}
	if err != nil {
		return t.fail("exec state "+key, err)
	}
	return nil
}

// PutLog inserts or replaces a log row (keyed by id; a replaced row keeps its place), assigning ID
// (when empty), ThreadID and CreatedAt (when zero).
func (t *tx) PutLog(l *weft.LogEntry) error {
	if l.ID == "" {
		l.ID = weft.NewID("log_")
	}
	for _, b := range []json.RawMessage{l.RequestBody, l.ResponseBody} {
		if len(b) > 0 && !json.Valid(b) {
			return weft.Errorf(weft.EInvalid, "thread %s: log %s: body is not valid JSON", t.id, l.ID)
		}
	}
	offered, err1 := jsonText(l.ToolsOffered)
	called, err2 := jsonText(l.ToolsCalled)
	queued, err3 := jsonText(l.QueuedTools)
	if err := errors.Join(err1, err2, err3); err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: log %s: %v", t.id, l.ID, err)
	}
	created := l.CreatedAt
	if created.IsZero() {
		created = t.clock()
	}
	_, err := t.w.exec(t.ctx, qPutLog, t.id, l.ID, l.RunID, l.MessageID, l.ParentLogID, l.RetryOfLogID, l.Kind, l.Provider,
		l.Model, l.ModelID, l.Prompt, string(l.Side), l.Depth, l.StatusCode, l.FinishReason, l.Error, l.ErrorType,
		l.ErrorOrigin, boolInt(l.IsComplete), l.InputTokens, l.CachedTokens, l.OutputTokens, l.ReasoningTokens,
		l.TotalTokens, floatPtr(l.CostInput), floatPtr(l.CostCached), floatPtr(l.CostOutput), floatPtr(l.CostTotal),
		l.LatencyMS, l.TimeToFirstTokenMS, l.GenerationMS, string(l.RequestBody), string(l.ResponseBody), offered,
		called, queued, l.ToolChoice, nanos(created))
	if err != nil {
		return t.fail("put log "+l.ID, err)
	}
	l.ThreadID, l.CreatedAt = t.id, created.UTC()
	return nil
}

func floatPtr(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

// SetKV stores a JSON value (nil deletes it).
func (t *tx) SetKV(key string, value json.RawMessage) error {
	if err := checkKV(t.id, key, value); err != nil {
		return err
	}
	var err error
	if value == nil {
		_, err = t.w.exec(t.ctx, qDelKV, t.id, key)
	} else {
		_, err = t.w.exec(t.ctx, qSetKV, t.id, key, string(value), nanos(t.clock()))
	}
	if err != nil {
		return t.fail("kv "+key, err)
	}
	return nil
}

func marshal(v any) ([]byte, error) { return json.Marshal(v) }
