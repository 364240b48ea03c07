package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

// encodeThread is a thread's doc.
func encodeThread(t *weft.Thread) ([]byte, error) {
	c := *t
	c.CreatedAt, c.UpdatedAt, c.LastActivityAt = t.CreatedAt.UTC(), t.UpdatedAt.UTC(), t.LastActivityAt.UTC()
	if c.Tags == nil {
		c.Tags = []string{}
	}
	if c.Properties == nil {
		c.Properties = map[string]any{}
	}
	if c.Arguments == nil {
		c.Arguments = map[string]any{}
	}
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, weft.Errorf(weft.EInvalid, "thread %s: %v", t.ID, err)
	}
	return b, nil
}

// decodeThread reads a thread's doc; empty tags and maps come back empty, not nil.
func decodeThread(doc []byte) (*weft.Thread, error) {
	t := &weft.Thread{}
	if err := json.Unmarshal(doc, t); err != nil {
		return nil, fmt.Errorf("postgres: thread record: %w", err)
	}
	if t.Tags == nil {
		t.Tags = []string{}
	}
	if t.Properties == nil {
		t.Properties = map[string]any{}
	}
	if t.Arguments == nil {
		t.Arguments = map[string]any{}
	}
	return t, nil
}

// threadCols are the filter and sort columns of a thread, in qInsertThread's order after id.
func threadCols(t *weft.Thread) []any {
	tags := make([]string, len(t.Tags))
	for i, s := range t.Tags {
		tags[i] = text(s)
	}
	return []any{text(t.UserID), text(t.Agent), text(t.Label), text(t.Preview), tags, string(t.Status),
		nanos(t.CreatedAt), nanos(t.LastActivityAt)}
}

const qInsertThread = `INSERT INTO threads (id, parent_id, root_id, user_id, agent, label, preview, tags, status,
	created_at, last_activity_at, doc, forked_from) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`

// CreateThread stores t and its thread-layer env values in one transaction. Empty fields get
// defaults, written back to t: ID (thr_…), OriginAgent (Agent), RootID (own id, or the parent's
// root), Status (idle), times (now). A parent that does not exist is ErrNotFound; an existing id
// is a conflict.
func (s *Store) CreateThread(ctx context.Context, t *weft.Thread, env []weft.EnvValue) error {
	if err := storecontract.PrepareThread(t, env); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return s.insertThread(ctx, tx, t, env) })
	return pgErr("create thread", err)
}

// CreateThreadTx creates t as CreateThread does and runs fn on it as an unfenced Tx, in the same
// transaction: the thread is stored with fn's writes, or neither is.
func (s *Store) CreateThreadTx(ctx context.Context, t *weft.Thread, env []weft.EnvValue, fn func(weft.Tx) error) error {
	if err := storecontract.PrepareThread(t, env); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	unlock := s.locks.lock(t.ID)
	defer unlock()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return pgErr("create thread", err)
	}
	defer conn.Release()
	x := &tx{s: s, ctx: ctx, c: conn, id: t.ID}
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		return pgErr("create thread "+t.ID+": begin", err)
	}
	x.began = true
	err = s.insertThread(ctx, conn, t, env)
	if err == nil {
		// Locked as Tx locks its thread's row; the new thread has no queue yet.
		err = x.row.scan(conn.QueryRow(ctx, qLockThread, t.ID))
	}
	if err != nil {
		x.rollback()
		return pgErr("create thread", err)
	}
	return x.run(fn)
}

// pgConn is what insertThread writes through: a pgx.Tx, or a connection in a transaction.
type pgConn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// insertThread stores a prepared thread and its env values within the transaction of c.
func (s *Store) insertThread(ctx context.Context, c pgConn, t *weft.Thread, env []weft.EnvValue) error {
	var parent *string
	if t.ParentID != "" {
		var root string
		err := c.QueryRow(ctx, "SELECT root_id FROM threads WHERE id = $1 FOR SHARE", t.ParentID).Scan(&root)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("thread %s: parent thread %s: %w", t.ID, t.ParentID, weft.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if t.RootID == "" {
			t.RootID = root
		}
		parent = &t.ParentID
	}
	var forkedFrom *string
	if t.ForkedFrom != nil {
		forkedFrom = &t.ForkedFrom.Thread
	}
	now := s.nowUTC()
	storecontract.DefaultThread(t, now)
	doc, err := encodeThread(t)
	if err != nil {
		return err
	}
	args := append([]any{t.ID, parent, t.RootID}, threadCols(t)...)
	if _, err := c.Exec(ctx, qInsertThread, append(args, doc, forkedFrom)...); err != nil {
		if isCode(err, uniqueViolation) {
			return weft.Errorf(weft.EConflict, "thread %s already exists", t.ID)
		}
		return err
	}
	return s.setEnvTx(ctx, c, weft.EnvThread, t.ID, env, now)
}

// Thread returns a thread or ErrNotFound.
func (s *Store) Thread(ctx context.Context, id string) (*weft.Thread, error) {
	var doc []byte
	err := s.pool.QueryRow(ctx, "SELECT doc FROM threads WHERE id = $1", id).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, threadNotFound(id)
	}
	if err != nil {
		return nil, pgErr("thread "+id, err)
	}
	return decodeThread(doc)
}

// threadOrder is the ORDER BY of each thread listing order; ties are broken by id.
var threadOrder = [...]string{
	storecontract.SortByActivity: "last_activity_at DESC, id DESC",
	storecontract.SortByCreated:  "created_at DESC, id DESC",
	storecontract.SortByOldest:   "created_at, id",
}

// asciiLower lowercases ASCII letters only, in SQL, as storecontract.ASCIILower does in Go.
func asciiLower(col string) string {
	return "translate(" + col + ", 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')"
}

// Threads lists threads matching q (see weft.ThreadQuery; Limit 0 means no limit) and the number
// matching before paging.
func (s *Store) Threads(ctx context.Context, q weft.ThreadQuery) ([]*weft.Thread, int, error) {
	by, err := storecontract.ParseThreadSort(q.Sort)
	if err != nil {
		return nil, 0, err
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if q.UserID != "" {
		where = append(where, "user_id = "+arg(text(q.UserID)))
	}
	if q.Agent != "" {
		where = append(where, "agent = "+arg(text(q.Agent)))
	}
	if q.ParentID != "" {
		where = append(where, "parent_id = "+arg(q.ParentID))
	} else if q.RootsOnly {
		where = append(where, "parent_id IS NULL")
	}
	if q.Status != "" {
		where = append(where, "status = "+arg(string(q.Status)))
	}
	if q.ForkedFrom != "" {
		where = append(where, "forked_from = "+arg(q.ForkedFrom))
	}
	if q.Tag != "" {
		where = append(where, arg(text(q.Tag))+" = ANY (tags)")
	}
	if q.Search != "" {
		p := arg(text(storecontract.ASCIILower(q.Search)))
		where = append(where, fmt.Sprintf("(strpos(%s, %s) > 0 OR strpos(%s, %s) > 0 OR strpos(%s, %s) > 0)",
			asciiLower("label"), p, asciiLower("preview"), p, asciiLower("agent"), p))
	}
	if q.Queued {
		where = append(where, "EXISTS (SELECT 1 FROM queue WHERE queue.thread_id = threads.id)")
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	page := ""
	if q.Limit > 0 {
		page += " LIMIT " + strconv.Itoa(q.Limit)
	}
	if q.Offset > 0 {
		page += " OFFSET " + strconv.Itoa(q.Offset)
	}
	rows, err := s.pool.Query(ctx, "SELECT doc, count(*) OVER () FROM threads"+cond+" ORDER BY "+threadOrder[by]+page, args...)
	if err != nil {
		return nil, 0, pgErr("list threads", err)
	}
	var out []*weft.Thread
	total := 0
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc, &total); err != nil {
			rows.Close()
			return nil, 0, pgErr("list threads", err)
		}
		t, err := decodeThread(doc)
		if err != nil {
			rows.Close()
			return nil, 0, err
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, pgErr("list threads", err)
	}
	if len(out) == 0 && q.Offset > 0 {
		// Paged past the end: the window counted nothing.
		if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM threads"+cond, args...).Scan(&total); err != nil {
			return nil, 0, pgErr("count threads", err)
		}
	}
	return out, total, nil
}

// qSubtree lists a thread and its descendants.
const qSubtree = `WITH RECURSIVE tree(id) AS (
	SELECT id FROM threads WHERE id = $1
	UNION ALL SELECT t.id FROM threads t JOIN tree ON t.parent_id = tree.id)
	SELECT id FROM tree`

// DeleteThread deletes a thread, its descendants and all their rows, effects and env values.
func (s *Store) DeleteThread(ctx context.Context, id string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, qSubtree, id)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return threadNotFound(id)
		}
		for _, d := range ids {
			s.known.drop(d)
		}
		if _, err := tx.Exec(ctx, "DELETE FROM env WHERE scope = 'thread' AND owner = ANY ($1)", ids); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "DELETE FROM threads WHERE id = $1", id)
		return err
	})
	return pgErr("delete thread "+id, err)
}

// thread returns the thread record this transaction writes back, decoding it on first use.
func (t *tx) thread() (*weft.Thread, error) {
	if t.meta == nil {
		m, err := decodeThread(t.row.doc)
		if err != nil {
			return nil, err
		}
		t.meta = m
	}
	return t.meta, nil
}

// UpdateThread changes thread fields; UpdatedAt becomes now.
func (t *tx) UpdateThread(p weft.ThreadPatch) error {
	m, err := t.thread()
	if err != nil {
		return err
	}
	if p.Tags != nil {
		m.Tags = slices.Clone(p.Tags)
	}
	if p.Properties != nil {
		if _, err := json.Marshal(p.Properties); err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: properties: %v", t.id, err)
		}
		m.Properties = p.Properties
	}
	if p.Arguments != nil {
		if _, err := json.Marshal(p.Arguments); err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: arguments: %v", t.id, err)
		}
		m.Arguments = p.Arguments
	}
	storecontract.ApplyThreadPatch(m, p, t.clock())
	return nil
}
