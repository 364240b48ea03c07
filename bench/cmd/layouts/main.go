// Command layouts replays a tool turn's writes — only the SQL, no engine and no Weft store code —
// under a few table layouts, to bound what a layout could give the SQLite target (issue 22). Run
// it under callgrind once with no turns and once with N and divide the difference by N:
//
//	go build -o /tmp/layouts ./cmd/layouts
//	v() { GOMAXPROCS=1 GOGC=off valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//	        /tmp/layouts "$@" 2>&1 | grep Collected; }
//	v -layout unified -turns 0; v -layout unified -turns 2000
//
// Layouts: floor (raw-sqlite-4tx's table and rows); current (Weft's tables as of migration 0011,
// simplified: messages with a (thread_id, seq) index, tool_calls and logs clustered by thread, the
// thread row with its activity index, and each of the turn's statements), with -byrowid (the
// thread row updated by its rowid) or -intkey messages|all (the thread's messages, or its
// messages, calls and logs, keyed by the thread row's integer rowid instead of its 30-character
// text id, the text id kept unique in the thread row; -intkey all is Weft's layout since
// migration 0012); unified (one
// append-only table of a thread's messages, calls and logs with one index of a thread's entries,
// a step's rows in one INSERT), with -noact (the activity index not updated), -norow (no thread
// row update in the steps) or -minimal (only the four messages, the call and the log folded into
// their documents, the thread row written for the lease alone). Statements are prepared once.
package main

import (
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite"
)

const schemaCurrent = `
CREATE TABLE threads (id TEXT PRIMARY KEY, last_activity_at INTEGER NOT NULL, doc BLOB NOT NULL, run_state BLOB, inbox BLOB, seqs INTEGER NOT NULL DEFAULT 0, lease TEXT NOT NULL DEFAULT '');
CREATE INDEX threads_activity ON threads (last_activity_at);
CREATE TABLE messages (thread_id TEXT NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL, role TEXT NOT NULL, silent INTEGER NOT NULL, depth INTEGER NOT NULL, doc BLOB NOT NULL);
CREATE UNIQUE INDEX messages_seq ON messages (thread_id, seq);
CREATE TABLE tool_calls (thread_id TEXT NOT NULL, call_id TEXT NOT NULL, seq INTEGER NOT NULL, status TEXT NOT NULL, doc BLOB NOT NULL, PRIMARY KEY (thread_id, call_id)) WITHOUT ROWID;
CREATE TABLE logs (thread_id TEXT NOT NULL, id TEXT NOT NULL, n INTEGER NOT NULL, depth INTEGER NOT NULL, doc BLOB NOT NULL, request_body TEXT NOT NULL, response_body TEXT NOT NULL, PRIMARY KEY (thread_id, id)) WITHOUT ROWID;
`

// schemaIntKey is schemaCurrent with a thread's rows keyed by the thread row's integer rowid
// (thread_no, the thread row's "no") instead of its 30-character text id: smaller index entries
// and keys. calls is the key type of tool_calls and logs: INTEGER with -intkey all, TEXT (the id)
// with -intkey messages.
func schemaIntKey(calls string) string {
	return `
CREATE TABLE threads (no INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, last_activity_at INTEGER NOT NULL, doc BLOB NOT NULL, run_state BLOB, inbox BLOB, seqs INTEGER NOT NULL DEFAULT 0, lease TEXT NOT NULL DEFAULT '');
CREATE INDEX threads_activity ON threads (last_activity_at);
CREATE TABLE messages (thread_no INTEGER NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL, role TEXT NOT NULL, silent INTEGER NOT NULL, depth INTEGER NOT NULL, doc BLOB NOT NULL);
CREATE UNIQUE INDEX messages_seq ON messages (thread_no, seq);
CREATE TABLE tool_calls (thread_no ` + calls + ` NOT NULL, call_id TEXT NOT NULL, seq INTEGER NOT NULL, status TEXT NOT NULL, doc BLOB NOT NULL, PRIMARY KEY (thread_no, call_id)) WITHOUT ROWID;
CREATE TABLE logs (thread_no ` + calls + ` NOT NULL, id TEXT NOT NULL, n INTEGER NOT NULL, depth INTEGER NOT NULL, doc BLOB NOT NULL, request_body TEXT NOT NULL, response_body TEXT NOT NULL, PRIMARY KEY (thread_no, id)) WITHOUT ROWID;
`
}

const schemaUnified = `
CREATE TABLE threads (id TEXT PRIMARY KEY, last_activity_at INTEGER NOT NULL, doc BLOB NOT NULL, run_state BLOB, inbox BLOB, seqs INTEGER NOT NULL DEFAULT 0, lease TEXT NOT NULL DEFAULT '');
CREATE INDEX threads_activity ON threads (last_activity_at);
CREATE TABLE entries (rid INTEGER PRIMARY KEY, thread_id TEXT NOT NULL, kind INTEGER NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL, status TEXT NOT NULL, doc BLOB NOT NULL);
CREATE INDEX entries_thread ON entries (thread_id, kind, seq);
`

const schemaFloor = `CREATE TABLE messages (thread BIGINT NOT NULL, seq BIGINT NOT NULL, role TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (thread, seq));`

var (
	msg  = strings.Repeat("m", 250)
	call = strings.Repeat("c", 150)
	logd = strings.Repeat("l", 300)
	tdoc = strings.Repeat("t", 400)
	rs   = strings.Repeat("r", 200)
)

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func main() {
	layout := flag.String("layout", "current", "current, unified or floor")
	threads := flag.Int("threads", 2000, "")
	turns := flag.Int("turns", 0, "")
	noact := flag.Bool("noact", false, "")
	norow := flag.Bool("norow", false, "no thread row updates in the steps")
	intkey := flag.String("intkey", "", "with current: messages, or all (messages, tool_calls and logs), keyed by the thread row's integer rowid, not its text id")
	byRowid := flag.Bool("byrowid", false, "with current: the thread row updated by its rowid (implied by -intkey)")
	minimal := flag.Bool("minimal", false, "with unified: only the four messages, the call and log folded into their docs; no thread row writes but the lease")
	flag.Parse()
	dir, _ := os.MkdirTemp("", "layout")
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "x.db")+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	must(err)
	db.SetMaxOpenConns(2)
	switch *layout {
	case "current":
		switch *intkey {
		case "":
			_, err = db.Exec(schemaCurrent)
		case "messages":
			_, err = db.Exec(schemaIntKey("TEXT"))
		case "all":
			_, err = db.Exec(schemaIntKey("INTEGER"))
		default:
			err = fmt.Errorf("-intkey %q: messages or all", *intkey)
		}
	case "unified":
		_, err = db.Exec(schemaUnified)
	case "floor":
		_, err = db.Exec(schemaFloor)
	}
	must(err)
	tid := func(i int) string { return fmt.Sprintf("thr_01m8g%021d", i) }
	// A thread's rows name it by its text id, or with -intkey by its rowid (the thread row keeps
	// the text id, unique, for lookups by id): msgKey for messages, callKey for tool_calls and logs.
	// The thread row is updated by rowKey in rowWhere.
	text := func(i int) any { return tid(i) }
	rowid := func(i int) any { return i + 1 }
	msgKey, callKey, rowKey := text, text, text
	callCol, rowWhere := "thread_id", "id"
	if *intkey != "" {
		msgKey, rowKey, rowWhere, callCol = rowid, rowid, "no", "thread_no"
	}
	if *intkey == "all" {
		callKey = rowid
	}
	if *byRowid && *intkey == "" {
		rowKey, rowWhere = rowid, "rowid"
	}
	seq := make([]int, *threads)
	id := 0
	nid := func() string { id++; return fmt.Sprintf("msg_01m8h%021d", id) }
	now := int64(1)
	tx := func(fn func(*sql.Tx)) {
		t, err := db.Begin()
		must(err)
		fn(t)
		must(t.Commit())
	}
	stmts := map[string]*sql.Stmt{}
	ex := func(t *sql.Tx, q string, a ...any) {
		st, ok := stmts[q]
		if !ok {
			var err error
			st, err = db.Prepare(q)
			must(err)
			stmts[q] = st
		}
		_, err := t.Stmt(st).Exec(a...)
		must(err)
	}
	// prepare: each thread with 21 messages
	for i := range *threads {
		tx(func(t *sql.Tx) {
			switch *layout {
			case "floor":
				for range 21 {
					seq[i]++
					ex(t, `INSERT INTO messages VALUES (?, ?, 'user', ?)`, i, seq[i], msg)
				}
			default:
				now++
				if *intkey != "" {
					ex(t, `INSERT INTO threads (no, id, last_activity_at, doc) VALUES (?, ?, ?, ?)`, i+1, tid(i), now, tdoc)
				} else {
					ex(t, `INSERT INTO threads (id, last_activity_at, doc) VALUES (?, ?, ?)`, tid(i), now, tdoc)
				}
				for range 21 {
					seq[i]++
					if *layout == "current" {
						ex(t, `INSERT INTO messages VALUES (?, ?, ?, 'user', 0, 0, ?)`, msgKey(i), seq[i], nid(), msg)
					} else {
						ex(t, `INSERT INTO entries (thread_id, kind, key, seq, status, doc) VALUES (?, 0, ?, ?, '', ?)`, tid(i), nid(), seq[i], msg)
					}
				}
			}
		})
	}
	for k := range *turns {
		i := k % *threads
		th := tid(i)
		switch *layout {
		case "floor":
			for range 4 {
				tx(func(t *sql.Tx) { seq[i]++; ex(t, `INSERT INTO messages VALUES (?, ?, 'user', ?)`, i, seq[i], msg) })
			}
		case "current":
			th, tc, tr := msgKey(i), callKey(i), rowKey(i)
			tx(func(t *sql.Tx) { ex(t, `UPDATE threads SET inbox = ?, lease = 'n' WHERE `+rowWhere+` = ?`, msg, tr) })
			tx(func(t *sql.Tx) {
				seq[i]++
				ex(t, `INSERT INTO messages VALUES (?, ?, ?, 'user', 0, 0, ?)`, th, seq[i], nid(), msg)
				seq[i]++
				ex(t, `INSERT INTO messages VALUES (?, ?, ?, 'assistant', 0, 0, ?)`, th, seq[i], nid(), msg)
				ex(t, `INSERT INTO tool_calls VALUES (?, ?, 1, 'pending', ?)`, tc, nid(), call)
				ex(t, `INSERT INTO logs VALUES (?, ?, 1, 0, ?, '', '')`, tc, nid(), logd)
				now++
				ex(t, `UPDATE threads SET last_activity_at = ?, doc = ?, run_state = ?, inbox = NULL, seqs = seqs + 1 WHERE `+rowWhere+` = ?`, now, tdoc, rs, tr)
			})
			tx(func(t *sql.Tx) {
				seq[i]++
				ex(t, `INSERT INTO messages VALUES (?, ?, ?, 'tool', 0, 0, ?)`, th, seq[i], nid(), msg)
				ex(t, `UPDATE tool_calls SET status = 'done', doc = ? WHERE `+callCol+` = ? AND call_id = (SELECT MAX(call_id) FROM tool_calls WHERE `+callCol+` = ?)`, call, tc, tc)
			})
			tx(func(t *sql.Tx) {
				seq[i]++
				ex(t, `INSERT INTO messages VALUES (?, ?, ?, 'assistant', 0, 0, ?)`, th, seq[i], nid(), msg)
				ex(t, `INSERT INTO logs VALUES (?, ?, 2, 0, ?, '', '')`, tc, nid(), logd)
				now++
				ex(t, `UPDATE threads SET last_activity_at = ?, doc = ?, run_state = ?, lease = '', seqs = seqs + 1 WHERE `+rowWhere+` = ?`, now, tdoc, rs, tr)
			})
		case "unified":
			if *minimal {
				big, bigger := msg+call, msg+logd
				tx(func(t *sql.Tx) {
					seq[i]++
					ex(t, `INSERT INTO entries (thread_id, kind, key, seq, status, doc) VALUES (?, 0, ?, ?, '', ?)`, th, nid(), seq[i], msg)
					ex(t, `UPDATE threads SET lease = 'n' WHERE id = ?`, th)
				})
				tx(func(t *sql.Tx) {
					seq[i]++
					ex(t, `INSERT INTO entries (thread_id, kind, key, seq, status, doc) VALUES (?, 0, ?, ?, '', ?)`, th, nid(), seq[i], bigger+call)
				})
				tx(func(t *sql.Tx) {
					seq[i]++
					ex(t, `INSERT INTO entries (thread_id, kind, key, seq, status, doc) VALUES (?, 0, ?, ?, '', ?)`, th, nid(), seq[i], big)
				})
				tx(func(t *sql.Tx) {
					seq[i]++
					ex(t, `INSERT INTO entries (thread_id, kind, key, seq, status, doc) VALUES (?, 0, ?, ?, '', ?)`, th, nid(), seq[i], bigger)
					ex(t, `UPDATE threads SET lease = '' WHERE id = ?`, th)
				})
				continue
			}
			tx(func(t *sql.Tx) { ex(t, `UPDATE threads SET inbox = ?, lease = 'n' WHERE id = ?`, msg, th) })
			tx(func(t *sql.Tx) {
				seq[i] += 2
				ex(t, `INSERT INTO entries (thread_id, kind, key, seq, status, doc) VALUES (?, 0, ?, ?, '', ?), (?, 0, ?, ?, '', ?), (?, 1, ?, ?, 'pending', ?), (?, 2, ?, ?, '', ?)`,
					th, nid(), seq[i]-1, msg, th, nid(), seq[i], msg, th, nid(), seq[i], call, th, nid(), seq[i], logd)
				now++
				switch {
				case *norow:
				case *noact:
					ex(t, `UPDATE threads SET doc = ?, run_state = ?, inbox = NULL, seqs = seqs + 1 WHERE id = ?`, tdoc, rs, th)
				default:
					ex(t, `UPDATE threads SET last_activity_at = ?, doc = ?, run_state = ?, inbox = NULL, seqs = seqs + 1 WHERE id = ?`, now, tdoc, rs, th)
				}
			})
			tx(func(t *sql.Tx) {
				seq[i]++
				// the call's final state as a new entry (its pending one stays, superseded)
				ex(t, `INSERT INTO entries (thread_id, kind, key, seq, status, doc) VALUES (?, 0, ?, ?, '', ?), (?, 1, ?, ?, 'done', ?)`, th, nid(), seq[i], msg, th, nid(), seq[i], call)
			})
			tx(func(t *sql.Tx) {
				seq[i]++
				ex(t, `INSERT INTO entries (thread_id, kind, key, seq, status, doc) VALUES (?, 0, ?, ?, '', ?), (?, 2, ?, ?, '', ?)`, th, nid(), seq[i], msg, th, nid(), seq[i], logd)
				now++
				switch {
				case *norow:
					ex(t, `UPDATE threads SET lease = '' WHERE id = ?`, th)
				case *noact:
					ex(t, `UPDATE threads SET doc = ?, run_state = ?, lease = '', seqs = seqs + 1 WHERE id = ?`, tdoc, rs, th)
				default:
					ex(t, `UPDATE threads SET last_activity_at = ?, doc = ?, run_state = ?, lease = '', seqs = seqs + 1 WHERE id = ?`, now, tdoc, rs, th)
				}
			})
		}
	}
}
