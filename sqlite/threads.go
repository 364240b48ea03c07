package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/storecontract"
)

// threadPad is the room a new thread's row holds for its first run (migration 0018), in bytes:
// about the user's message BeginRun puts in it and an open call.
const threadPad = "384"

// Thread write statements. hotWrites lists those prepared at Open.
const (
	qThreadDoc = `SELECT doc FROM threads WHERE id = ?`
)

const qThread = `SELECT doc FROM threads WHERE id = ?`

// scanThread scans a row of a thread doc, followed by the extra columns into extra.
func scanThread(sc scanner, extra ...any) (*weft.Thread, error) {
	var doc string
	if err := sc.Scan(append([]any{&doc}, extra...)...); err != nil {
		return nil, err
	}
	return decodeThread(doc)
}

// CreateThread stores t and its thread-layer env values in one transaction. Empty fields get
// defaults, written back to t: ID (thr_…), OriginAgent (Agent), RootID (own id, or the parent's
// root), Status (idle), times (now). A missing parent is ErrNotFound; an existing id a conflict.
func (s *Store) CreateThread(ctx context.Context, t *weft.Thread, env []weft.EnvValue) error {
	return s.CreateThreadTx(ctx, t, env, nil)
}

// CreateThreadTx creates t as CreateThread does and runs fn on it as Tx runs it, unfenced, in the
// same write transaction: the thread is stored with fn's writes, or neither is.
func (s *Store) CreateThreadTx(ctx context.Context, t *weft.Thread, env []weft.EnvValue, fn func(weft.Tx) error) error {
	if err := storecontract.PrepareThread(t, env); err != nil {
		return err
	}
	tags := t.Tags
	if tags == nil {
		tags = []string{}
	}
	tagsJSON, err := marshal(tags)
	if err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: tags: %v", t.ID, err)
	}
	props, err := mapJSON(t.Properties)
	if err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: properties: %v", t.ID, err)
	}
	args, err := mapJSON(t.Arguments)
	if err != nil {
		return weft.Errorf(weft.EInvalid, "thread %s: arguments: %v", t.ID, err)
	}
	var forkedFrom any
	if t.ForkedFrom != nil {
		forkedFrom = t.ForkedFrom.Thread
	}
	return s.writeOwn(ctx, func(w *writer) (err error) {
		w.rows.drop(t.ID) // a new row: only its own thread's entry (none) could be touched
		if fn != nil {
			defer func() {
				if err != nil {
					// Rolled back: nothing kept of the thread that was not stored.
					w.rows.drop(t.ID)
					w.rows.hist.drop(t.ID)
				}
			}()
		}
		var parent any
		if t.ParentID != "" {
			parent = t.ParentID
			var root string
			if err := w.row(ctx, `SELECT root_id FROM threads WHERE id = ?`, []any{&root}, t.ParentID); err != nil {
				if errors.Is(err, sql.ErrNoRows) {
					return fmt.Errorf("thread %s: parent thread %s: %w", t.ID, t.ParentID, weft.ErrNotFound)
				}
				return err
			}
			if t.RootID == "" {
				t.RootID = root
			}
		}
		now := s.now().UTC()
		storecontract.DefaultThread(t, now)
		stored := *t
		stored.Tags = tags
		doc := threadDoc(&stored, props, args)
		res, err := w.exec(ctx, `INSERT INTO threads (id, agent, user_id, parent_id, root_id, label, tags, status, preview,
			created_at, last_activity_at, doc, forked_from, pad) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, zeroblob(`+threadPad+`))`,
			t.ID, t.Agent, t.UserID, parent, t.RootID, t.Label, string(tagsJSON), string(t.Status), t.Preview,
			nanos(t.CreatedAt), nanos(t.LastActivityAt), doc, forkedFrom)
		if isConstraint(err, "UNIQUE") {
			return weft.Errorf(weft.EConflict, "thread %s already exists", t.ID)
		}
		if err != nil {
			return fmt.Errorf("sqlite: create thread %s: %w", t.ID, err)
		}
		w.rows.hist.put(t.ID, nil, 0) // a new thread's history: none yet
		// And its row, as the columns' defaults leave it, with its env when it has none; its
		// parent has a child now.
		rowid, err := res.LastInsertId()
		if err != nil {
			rowid = 0 // found by id
		}
		w.rows.putIdle(t.ID, cachedRow{rowid: rowid, doc: string(doc), queueKnown: true, around: around{known: len(env) == 0}, maxMsgKnown: true,
			calls: openCallsState{read: true, exact: true, storedKnown: true}})
		if t.ParentID != "" {
			w.rows.childAdded(t.ParentID)
		}
		if err := s.setEnv(ctx, w, weft.EnvThread, t.ID, env, now); err != nil || fn == nil {
			return err
		}
		return s.txIn(ctx, w, t.ID, nil, fn)
	})
}

// Thread returns a thread or ErrNotFound.
func (s *Store) Thread(ctx context.Context, id string) (*weft.Thread, error) {
	row, err := s.rowOf(ctx, qThread, id)
	if err != nil {
		return nil, err
	}
	t, err := scanThread(row)
	if err != nil {
		return nil, s.noThread(id, err)
	}
	return t, nil
}

// threadOrder is the ORDER BY clause of each thread listing order.
var threadOrder = [...]string{
	storecontract.SortByActivity: "last_activity_at DESC, id DESC",
	storecontract.SortByCreated:  "created_at DESC, id DESC",
	storecontract.SortByOldest:   "created_at ASC, id ASC",
}

// Threads lists threads matching q (see weft.ThreadQuery; Limit 0 means no limit) and the number
// matching before paging. Search matches label, preview and agent, ignoring ASCII case.
//
// By activity, a running thread is ordered by its activity as its run's last write of
// last_activity_at left it (the run's steps leave theirs pending, migration 0016) until the run
// ends; each listed thread's LastActivityAt is its doc's, the newest.
func (s *Store) Threads(ctx context.Context, q weft.ThreadQuery) ([]*weft.Thread, int, error) {
	by, err := storecontract.ParseThreadSort(q.Sort)
	if err != nil {
		return nil, 0, err
	}
	order := threadOrder[by]
	cond, args := threadsWhere(q)
	// A page needs the count of every match; the whole list is its own count.
	paged := q.Limit > 0 || q.Offset > 0
	var total int
	if paged {
		if err := s.row(ctx, "SELECT COUNT(*) FROM threads"+cond, []any{&total}, args...); err != nil {
			return nil, 0, fmt.Errorf("sqlite: list threads: %w", err)
		}
	}
	limit := q.Limit
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.query(ctx, "SELECT doc FROM threads"+cond+" ORDER BY "+order+" LIMIT ? OFFSET ?",
		append(args, limit, max(q.Offset, 0))...)
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite: list threads: %w", err)
	}
	defer rows.Close()
	var out []*weft.Thread
	for rows.Next() {
		t, err := scanThread(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, t)
	}
	if !paged {
		total = len(out)
	}
	return out, total, rows.Err()
}

// threadsWhere is the WHERE clause (with its leading space, or "") and the arguments of the
// threads q lists.
func threadsWhere(q weft.ThreadQuery) (string, []any) {
	var where []string
	var args []any
	add := func(cond string, a ...any) {
		where = append(where, cond)
		args = append(args, a...)
	}
	if q.UserID != "" {
		// The second term is implied; it lets the planner use threads_user_activity, which
		// indexes only threads with a user (migration 0008).
		add("user_id = ? AND user_id <> ''", q.UserID)
	}
	if q.Agent != "" {
		add("agent = ?", q.Agent)
	}
	if q.ParentID != "" {
		add("parent_id = ?", q.ParentID)
	} else if q.RootsOnly {
		add("parent_id IS NULL")
	}
	if q.Status != "" {
		add("status = ?", string(q.Status))
	}
	if q.ForkedFrom != "" {
		add("forked_from = ?", q.ForkedFrom)
	}
	if q.Queued {
		add("(threads.inbox IS NOT NULL OR EXISTS (SELECT 1 FROM queue WHERE queue.thread_id = threads.id))")
	}
	if q.Tag != "" {
		add("EXISTS (SELECT 1 FROM json_each(threads.tags) WHERE value = ?)", q.Tag)
	}
	if q.Search != "" {
		s := storecontract.ASCIILower(q.Search)
		add("(instr(lower(label), ?) > 0 OR instr(lower(preview), ?) > 0 OR instr(lower(agent), ?) > 0)", s, s, s)
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	return cond, args
}

// DeleteThread deletes a thread, its descendants and all their rows and env values.
func (s *Store) DeleteThread(ctx context.Context, id string) error {
	return s.write(ctx, func(w *writer) error {
		_, err := w.exec(ctx, `WITH RECURSIVE sub(id) AS (
				SELECT id FROM threads WHERE id = ?1
				UNION ALL SELECT t.id FROM threads t JOIN sub ON t.parent_id = sub.id)
			DELETE FROM env WHERE scope = 'thread' AND owner IN (SELECT id FROM sub)`, id)
		if err != nil {
			return fmt.Errorf("sqlite: delete thread %s: %w", id, err)
		}
		n, err := w.execN(ctx, `DELETE FROM threads WHERE id = ?`, id) // cascades to rows and descendants
		if err != nil {
			return fmt.Errorf("sqlite: delete thread %s: %w", id, err)
		}
		if n == 0 {
			return fmt.Errorf("thread %s: %w", id, weft.ErrNotFound)
		}
		return nil
	})
}

// threadUpdate is the thread row as UpdateThread left it, written by flush.
type threadUpdate struct {
	th       weft.Thread
	tags     any // JSON text, or nil to keep the column
	activity bool
	// names: the agent, the label or the tags changed (written only then: a run's steps change
	// the status and preview, and binding the others costs a copy each).
	names bool
	doc   []byte
}

// UpdateThread changes the thread's fields; UpdatedAt becomes now.
func (t *tx) UpdateThread(p weft.ThreadPatch) error {
	if !t.docRead {
		if err := t.w.row(t.ctx, qThreadDoc, []any{&t.doc}, t.id); err != nil {
			return t.fail("update thread", err)
		}
		t.docRead = true
	}
	var th weft.Thread
	oldProps, oldArgs, err := decodeThreadDoc(t.doc, &th)
	if err != nil {
		return t.fail("update thread", err)
	}
	props, args := []byte(oldProps), []byte(oldArgs)
	var tags any // NULL keeps the tags column
	if p.Tags != nil {
		b, err := marshal(p.Tags)
		if err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: tags: %v", t.id, err)
		}
		th.Tags, tags = p.Tags, string(b)
	}
	if p.Properties != nil {
		if props, err = mapJSON(p.Properties); err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: properties: %v", t.id, err)
		}
	}
	if p.Arguments != nil {
		if args, err = mapJSON(p.Arguments); err != nil {
			return weft.Errorf(weft.EInvalid, "thread %s: arguments: %v", t.id, err)
		}
	}
	agent, label := th.Agent, th.Label
	storecontract.ApplyThreadPatch(&th, p, t.clock())
	u := t.thread
	if u == nil {
		u = &threadUpdate{}
		t.thread = u
	}
	if tags != nil {
		u.tags = tags
	}
	u.names = u.names || tags != nil || th.Agent != agent || th.Label != label
	u.th, u.activity = th, u.activity || p.LastActivityAt != nil
	u.doc = threadDoc(&th, props, args)
	t.doc = string(u.doc)
	return nil
}
