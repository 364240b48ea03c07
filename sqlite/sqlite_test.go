package sqlite

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/envcrypt"
	"github.com/weft-agents/weft/storetest"
)

func openFile(t *testing.T) weft.Store {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "weft.db"), Options{Key: envcrypt.NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openMemory(t *testing.T) weft.Store {
	s, err := Open(t.Context(), MemoryDSN, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformanceFile(t *testing.T)   { storetest.Run(t, openFile) }
func TestConformanceMemory(t *testing.T) { storetest.Run(t, openMemory) }

func TestReopen(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "weft.db")
	key := envcrypt.NewKey()
	s, err := Open(ctx, path, Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(ctx, th, []weft.EnvValue{{Name: "K", Value: "v1", Type: weft.VarText}}); err != nil {
		t.Fatal(err)
	}
	m := &weft.Message{Role: weft.RoleUser, Content: "persisted"}
	if err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
		if err := tx.InsertMessage(m); err != nil {
			return err
		}
		return tx.WriteFile(&weft.FileInfo{Path: "/big.bin"}, bytes.Repeat([]byte("x"), weft.ChunkSize+1))
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 { // re-open twice: migrations are idempotent
		s, err = Open(ctx, path, Options{Key: key})
		if err != nil {
			t.Fatalf("re-open: %v", err)
		}
		got, err := s.Message(ctx, th.ID, m.ID)
		if err != nil || got.Content != "persisted" || got.Seq != 1 {
			t.Errorf("message after re-open: %+v %v", got, err)
		}
		if env, err := s.Env(ctx, weft.EnvThread, th.ID); err != nil || len(env) != 1 || env[0].Value != "v1" {
			t.Errorf("env after re-open: %+v %v", env, err)
		}
		if st, err := s.Files().Stat(ctx, th.ID, "/big.bin"); err != nil || st.Size != weft.ChunkSize+1 {
			t.Errorf("file after re-open: %+v %v", st, err)
		}
		var versions, count int
		if err := s.rdb.QueryRow(`SELECT MAX(version), COUNT(*) FROM schema_migrations`).Scan(&versions, &count); err != nil ||
			versions != SchemaVersion() || count != SchemaVersion() {
			t.Errorf("schema_migrations: max %d count %d (%v), want %d", versions, count, err, SchemaVersion())
		}
		next := &weft.Message{Role: weft.RoleUser}
		if err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error { return tx.InsertMessage(next) }); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
}

// TestRunStateAndLeasesMigrated: a database from before migration 3 keeps each thread's run state
// and lease, moved from their tables into the thread row, and deleting a thread still cascades.
// oldDatabase creates a database file as a Weft of migrations before version before left it, with
// two threads, thr_a and thr_b, and runs stmts on it. The caller closes db before opening a Store.
func oldDatabase(t *testing.T, before int, stmts ...string) (path string, db *sql.DB) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "weft.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	all := []string{`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`}
	for _, m := range ms {
		if m.Version >= before {
			break
		}
		all = append(all, m.SQL, fmt.Sprintf(`INSERT INTO schema_migrations VALUES (%d, '%s', 0)`, m.Version, m.Name))
	}
	all = append(all, `INSERT INTO threads (id, agent, root_id, status, created_at, last_activity_at, doc) VALUES
			('thr_a', 'a', 'thr_a', 'idle', 1, 1, ''), ('thr_b', 'a', 'thr_b', 'idle', 1, 1, '')`)
	for _, q := range append(all, stmts...) {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	return path, db
}

func TestRunStateAndLeasesMigrated(t *testing.T) {
	ctx := t.Context()
	path, db := oldDatabase(t, 3,
		`INSERT INTO exec_state VALUES ('thr_a', 'run', '{"side":"b","stops":2}'), ('thr_a', 'handoff', 'null'),
			('thr_b', 'run', '{"side":"a"}')`,
		fmt.Sprintf(`INSERT INTO leases VALUES ('thr_a', 'node-x', 7, %d)`, time.Now().Add(time.Hour).UnixNano()))
	db.Close()
	s, err := Open(ctx, path, Options{Key: envcrypt.NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for id, want := range map[string]map[string]string{
		"thr_a": {"run": `{"side":"b","stops":2}`, "handoff": "null"},
		"thr_b": {"run": `{"side":"a"}`},
	} {
		got, err := s.ExecState(ctx, id)
		if err != nil || len(got) != len(want) {
			t.Fatalf("%s: exec state %v, %v; want %v", id, got, err, want)
		}
		for k, v := range want {
			if string(got[k]) != v {
				t.Errorf("%s: %s = %s, want %s", id, k, got[k], v)
			}
		}
	}
	// thr_a's lease is still node-x's, with its token; thr_b never had one.
	if _, err := s.AcquireLease(ctx, "thr_a", "node-y", time.Minute); !errors.Is(err, weft.ErrLeaseHeld) {
		t.Errorf("acquiring a migrated live lease: %v, want ErrLeaseHeld", err)
	}
	if f, err := s.AcquireLease(ctx, "thr_b", "node-y", time.Minute); err != nil || f.Token != 1 {
		t.Errorf("first lease of thr_b: %+v, %v", f, err)
	}
	fence := &weft.Fence{Node: "node-x", Token: 7, ThreadID: "thr_a"}
	if err := s.Tx(ctx, "thr_a", fence, func(tx weft.Tx) error { return tx.SetExecState("handoff", nil) }); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ExecState(ctx, "thr_a"); len(got) != 1 || string(got["run"]) != `{"side":"b","stops":2}` {
		t.Errorf("after deleting one document: %v", got)
	}
	if err := s.DeleteThread(ctx, "thr_a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Thread(ctx, "thr_a"); !errors.Is(err, weft.ErrNotFound) {
		t.Errorf("deleted thread: %v", err)
	}
}

// TestMessagesMigratedToWriteOrder: a database from before migration 9, whose messages were
// clustered by thread, keeps every message; histories still read in seq order although the rows
// of the threads are interleaved on disk, new messages follow on, and deleting a thread still
// deletes its messages.
func TestMessagesMigratedToWriteOrder(t *testing.T) {
	ctx := t.Context()
	path, db := oldDatabase(t, 9)
	// Each thread's seqs, written newest first and the threads interleaved, so that neither the
	// rows' order on disk nor their ids' order is the seq order.
	for seq := int64(3); seq >= 1; seq-- {
		for _, th := range []string{"thr_b", "thr_a"} {
			m := &weft.Message{ID: fmt.Sprintf("msg_%s_%d", th, 9-seq), Role: weft.RoleUser, Content: fmt.Sprint(th, " ", seq)}
			if _, err := db.ExecContext(ctx, qInsertMsgByID, th, seq, m.ID, string(m.Role), 0, 0, messageDoc(m, seq, time.Unix(1, 0), nil)); err != nil {
				t.Fatal(err)
			}
		}
	}
	db.Close()
	s, err := Open(ctx, path, Options{Key: envcrypt.NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	contents := func(msgs []*weft.Message) string {
		var b strings.Builder
		for _, m := range msgs {
			fmt.Fprintf(&b, "%d:%s;", m.Seq, m.Content)
		}
		return b.String()
	}
	listed, err := s.Messages(ctx, "thr_a", weft.MessageQuery{Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	ptrs := make([]*weft.Message, len(listed))
	for i := range listed {
		ptrs[i] = &listed[i]
	}
	if got, want := contents(ptrs), "1:thr_a 1;2:thr_a 2;3:thr_a 3;"; got != want {
		t.Errorf("listed %s, want %s", got, want)
	}
	if m, err := s.Message(ctx, "thr_b", "msg_thr_b_8"); err != nil || m.Content != "thr_b 1" {
		t.Errorf("message by id: %+v, %v", m, err)
	}
	fence, start, err := s.BeginRun(ctx, "thr_b", "n", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := contents(start.Rows), "1:thr_b 1;2:thr_b 2;3:thr_b 3;"; got != want {
		t.Errorf("run start's history %s, want %s", got, want)
	}
	next := &weft.Message{Role: weft.RoleAssistant, Content: "thr_b 4"}
	if err := s.Tx(ctx, "thr_b", &fence, func(tx weft.Tx) error { return tx.InsertMessage(next) }); err != nil {
		t.Fatal(err)
	}
	if next.Seq != 4 {
		t.Errorf("next message's seq %d, want 4", next.Seq)
	}
	// Ids stay unique per thread without their own index (migration 0011).
	err = s.Tx(ctx, "thr_b", &fence, func(tx weft.Tx) error {
		return tx.InsertMessage(&weft.Message{ID: "msg_thr_b_8", Role: weft.RoleUser})
	})
	if weft.ErrorCode(err) != weft.EConflict {
		t.Errorf("a migrated message's id inserted again: %v, want a conflict", err)
	}
	if err := s.DeleteThread(ctx, "thr_a"); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := s.rdb.QueryRowContext(ctx, "SELECT count(*) FROM messages").Scan(&left); err != nil || left != 4 {
		t.Errorf("%d messages left after deleting thr_a, %v; want thr_b's 4", left, err)
	}
}

// qInsertMsgByID is qInsertMsg before migration 0012, when messages named their thread by id.
const qInsertMsgByID = `INSERT INTO messages (thread_id, seq, id, role, silent, depth, doc) VALUES (?, ?, ?, ?, ?, ?, ?)`

// TestThreadsNumbered: a database from before migration 12, whose messages, tool calls and logs
// named their thread by id, keeps them all, each with its thread (numbered by its row's rowid);
// a log body stored on another's reads whole; runs go on; deleting a thread, and with it its
// child, deletes their rows and only theirs.
func TestThreadsNumbered(t *testing.T) {
	ctx := t.Context()
	created := time.Unix(1, 0)
	var stmts []string
	var args [][]any
	add := func(q string, a ...any) { stmts, args = append(stmts, q), append(args, a) }
	add(`INSERT INTO threads (id, agent, parent_id, root_id, status, created_at, last_activity_at, doc) VALUES ('thr_c', 'a', 'thr_a', 'thr_a', 'idle', 1, 1, '')`)
	for _, th := range []string{"thr_b", "thr_a", "thr_c"} {
		for seq := int64(1); seq <= 2; seq++ {
			m := &weft.Message{ID: fmt.Sprintf("msg_%s_%d", th, seq), Role: weft.RoleUser, Content: fmt.Sprint(th, " ", seq)}
			add(qInsertMsgByID, th, seq, m.ID, string(m.Role), 0, 0, messageDoc(m, seq, created, nil))
		}
		c := &weft.ToolCallRecord{CallID: "call_" + th, Name: "lookup", Arguments: "{}", Status: weft.CallDone, Seq: 1}
		add(`INSERT INTO tool_calls (thread_id, call_id, seq, status, doc) VALUES (?, ?, 1, 'done', ?)`, th, c.CallID, callDoc(c))
		for i, id := range []string{"log_1_" + th, "log_2_" + th} {
			l := &weft.LogEntry{ID: id, Kind: "llm"}
			base, prefix, body := "", 0, `{"messages":["`+th+`"]}`
			if i == 1 { // stored on the first log's body: the same and one message more
				base, prefix, body = "log_1_"+th, len(body)-2, `,"more"]}`
			}
			add(`INSERT INTO logs (thread_id, id, n, depth, doc, request_base, request_prefix, request_body, response_body) VALUES (?, ?, ?, 0, ?, ?, ?, ?, '{}')`,
				th, id, i+1, logDoc(l, created), base, prefix, body)
		}
	}
	add(`UPDATE threads SET call_seq = 1, log_seq = 2`) // as the store numbered them
	path, db := oldDatabase(t, 12)
	rowids := map[string]int64{}
	for _, th := range []string{"thr_a", "thr_b"} {
		var n int64
		if err := db.QueryRowContext(ctx, `SELECT rowid FROM threads WHERE id = ?`, th).Scan(&n); err != nil {
			t.Fatal(err)
		}
		rowids[th] = n
	}
	for i, q := range stmts {
		if _, err := db.ExecContext(ctx, q, args[i]...); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	db.Close()
	s, err := Open(ctx, path, Options{Key: envcrypt.NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for th, want := range rowids {
		var num int64
		if err := s.row(ctx, `SELECT num FROM threads WHERE id = ?`, []any{&num}, th); err != nil || num != want {
			t.Errorf("%s: num %d, %v; want its rowid %d", th, num, err, want)
		}
	}
	for _, th := range []string{"thr_a", "thr_b", "thr_c"} {
		msgs, err := s.Messages(ctx, th, weft.MessageQuery{Limit: -1})
		if err != nil || len(msgs) != 2 || msgs[0].Content != th+" 1" || msgs[1].Content != th+" 2" {
			t.Errorf("%s: messages %+v, %v", th, msgs, err)
		}
		if m, err := s.Message(ctx, th, "msg_"+th+"_2"); err != nil || m.Content != th+" 2" {
			t.Errorf("%s: message by id %+v, %v", th, m, err)
		}
		calls, err := s.ToolCalls(ctx, th)
		if err != nil || len(calls) != 1 || calls[0].CallID != "call_"+th || calls[0].Status != weft.CallDone {
			t.Errorf("%s: tool calls %+v, %v", th, calls, err)
		}
		logs, err := s.Logs(ctx, th, weft.LogQuery{})
		if err != nil || len(logs) != 2 {
			t.Errorf("%s: logs %+v, %v", th, logs, err)
		}
		l, err := s.Log(ctx, th, "log_2_"+th)
		if want := `{"messages":["` + th + `","more"]}`; err != nil || string(l.RequestBody) != want {
			t.Errorf("%s: log body %s, %v; want %s", th, l.RequestBody, err, want)
		}
	}
	// Another thread's ids find nothing.
	if _, err := s.Message(ctx, "thr_a", "msg_thr_b_1"); !errors.Is(err, weft.ErrNotFound) {
		t.Errorf("thr_b's message through thr_a: %v, want ErrNotFound", err)
	}
	// A run goes on from the migrated rows.
	fence, start, err := s.BeginRun(ctx, "thr_b", "n", time.Minute, nil)
	if err != nil || len(start.Rows) != 2 {
		t.Fatalf("run start: %+v, %v", start, err)
	}
	err = s.Tx(ctx, "thr_b", &fence, func(tx weft.Tx) error {
		if err := tx.InsertMessage(&weft.Message{Role: weft.RoleAssistant, Content: "thr_b 3"}); err != nil {
			return err
		}
		if err := tx.PutToolCall(&weft.ToolCallRecord{CallID: "call_2", Name: "lookup", Arguments: "{}"}); err != nil {
			return err
		}
		return tx.PutLog(&weft.LogEntry{ID: "log_3_thr_b", Kind: "llm", RequestBody: []byte(`{"messages":["thr_b","more","again"]}`)})
	})
	if err != nil {
		t.Fatal(err)
	}
	if msgs, _ := s.Messages(ctx, "thr_b", weft.MessageQuery{Limit: -1}); len(msgs) != 3 || msgs[2].Seq != 3 {
		t.Errorf("after the run's step: %+v", msgs)
	}
	if calls, _ := s.ToolCalls(ctx, "thr_b"); len(calls) != 2 || calls[1].Seq != 2 {
		t.Errorf("calls after the run's step: %+v", calls)
	}
	// The step's call waits in the thread row (migration 0017) until a Tx changes it without
	// writing the row, as a tool's result does: then it is in tool_calls with the migrated one.
	if err := s.Tx(ctx, "thr_b", &fence, func(tx weft.Tx) error {
		return tx.PutToolCall(&weft.ToolCallRecord{CallID: "call_2", Name: "lookup", Arguments: "{}", Status: weft.CallDone})
	}); err != nil {
		t.Fatal(err)
	}
	if l, err := s.Log(ctx, "thr_b", "log_3_thr_b"); err != nil || string(l.RequestBody) != `{"messages":["thr_b","more","again"]}` {
		t.Errorf("new log: %s, %v", l.RequestBody, err)
	}
	var newest int64
	if err := s.row(ctx, `SELECT max(num) FROM threads`, []any{&newest}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteThread(ctx, "thr_a"); err != nil { // and thr_c, its child, the newest
		t.Fatal(err)
	}
	// A number is not used again: the newest thread's went with it.
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	var num int64
	if err := s.row(ctx, `SELECT num FROM threads WHERE id = ?`, []any{&num}, th.ID); err != nil || num <= newest {
		t.Errorf("a new thread's number %d, %v; want one above %d, the deleted newest's", num, err, newest)
	}
	for table, want := range map[string]int{"messages": 3, "tool_calls": 2, "logs": 3} {
		var n, others int
		if err := s.row(ctx, `SELECT count(*), count(*) FILTER (WHERE thread_num <> ?) FROM `+table, []any{&n, &others}, rowids["thr_b"]); err != nil || n != want || others != 0 {
			t.Errorf("%s after deleting thr_a and its child: %d rows, %d not thr_b's, %v; want %d, 0", table, n, others, err, want)
		}
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "weft.db")
	key := envcrypt.NewKey()
	s, err := Open(ctx, path, Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.rawWrite(ctx, func(c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 0)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(ctx, path, Options{Key: key})
	if err == nil || !strings.Contains(err.Error(), "schema version 999 is newer than this Weft supports") {
		t.Fatalf("Open of a newer schema: %v", err)
	}
}

func TestWrongKey(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "weft.db")
	goodKey := envcrypt.NewKey()
	good, _ := envcrypt.New(goodKey)
	s, err := Open(ctx, path, Options{Key: goodKey})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	badKey := envcrypt.NewKey()
	bad, _ := envcrypt.New(badKey)
	_, err = Open(ctx, path, Options{Key: badKey})
	want := "wrong encryption key for this database (key id " + bad.KeyID() + ", database expects " + good.KeyID() + ")"
	if err == nil || err.Error() != want {
		t.Fatalf("Open with the wrong key: %v\nwant %s", err, want)
	}
	var wk *envcrypt.WrongKeyError
	if !errors.As(err, &wk) {
		t.Errorf("error is not a *envcrypt.WrongKeyError")
	}
	if s, err := Open(ctx, path, Options{Key: goodKey}); err != nil {
		t.Errorf("Open with the right key after a failed one: %v", err)
	} else {
		s.Close()
	}
}

func TestKeyFileCreated(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	s, err := Open(ctx, filepath.Join(dir, "weft.db"), Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetEnv(ctx, weft.EnvInstance, "", []weft.EnvValue{{Name: "A", Value: "secret"}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "weft.db.key") {
		t.Errorf("no warning about the created key file: %s", logs.String())
	}
	if fi, err := os.Stat(filepath.Join(dir, "weft.db.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	logs.Reset()
	s, err = Open(ctx, filepath.Join(dir, "weft.db"), Options{Logger: logger})
	if err != nil {
		t.Fatalf("re-open with the key file: %v", err)
	}
	defer s.Close()
	if env, err := s.Env(ctx, weft.EnvInstance, ""); err != nil || len(env) != 1 || env[0].Value != "secret" {
		t.Errorf("env with the key file: %v %v", env, err)
	}
	if logs.Len() != 0 {
		t.Errorf("re-open warned again: %s", logs.String())
	}
}

func TestEnvCiphertext(t *testing.T) {
	ctx := t.Context()
	s := openFile(t).(*Store)
	defer s.Close()
	const secret = "sk-very-secret-plaintext"
	var seen [][]byte
	for range 2 {
		if err := s.SetEnv(ctx, weft.EnvUser, "u1", []weft.EnvValue{{Name: "KEY", Value: secret, Type: weft.VarSecret}}); err != nil {
			t.Fatal(err)
		}
		var doc string
		if err := s.rdb.QueryRow(`SELECT doc FROM env WHERE scope = 'user' AND owner = 'u1' AND name = 'KEY'`).Scan(&doc); err != nil {
			t.Fatal(err)
		}
		e, err := decodeEnv(doc)
		if err != nil || strings.Contains(doc, secret) || e.keyID != s.cipher.KeyID() || e.sealed == "" {
			t.Errorf("stored value %x (key id %s, %v) leaks the plaintext or lacks the key id", doc, e.keyID, err)
		}
		seen = append(seen, []byte(e.sealed))
	}
	if bytes.Equal(seen[0], seen[1]) {
		t.Error("two writes of the same value stored the same ciphertext")
	}
	// Nothing in the database file holds the plaintext.
	s.Close()
	raw, err := os.ReadFile(s.path())
	if err != nil {
		t.Fatal(err)
	}
	wal, _ := os.ReadFile(s.path() + "-wal")
	if bytes.Contains(raw, []byte(secret)) || bytes.Contains(wal, []byte(secret)) {
		t.Error("database file contains the plaintext secret")
	}
}

func TestMemoryStoresAreSeparate(t *testing.T) {
	ctx := t.Context()
	a, b := openMemory(t), openMemory(t)
	defer a.Close()
	defer b.Close()
	th := &weft.Thread{Agent: "a"}
	if err := a.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Thread(ctx, th.ID); !errors.Is(err, weft.ErrNotFound) {
		t.Errorf("second in-memory store sees the first one's thread: %v", err)
	}
	// Readers share the writer's database: a read on the pool sees the committed write.
	if _, err := a.Thread(ctx, th.ID); err != nil {
		t.Errorf("read pool does not share the in-memory database: %v", err)
	}
}

func TestStreamOfReplacedFileFails(t *testing.T) {
	ctx := t.Context()
	s := openFile(t)
	defer s.Close()
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	write := func(b byte) {
		err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
			return tx.WriteFile(&weft.FileInfo{Path: "/f.bin"}, bytes.Repeat([]byte{b}, 2*weft.ChunkSize+1))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	write('a')
	rc, err := s.Files().Open(ctx, th.ID, "/f.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	buf := make([]byte, 10)
	if _, err := io.ReadFull(rc, buf); err != nil || buf[0] != 'a' {
		t.Fatalf("first read: %q %v", buf, err)
	}
	write('b')
	_, err = io.ReadAll(rc)
	if err == nil || !strings.Contains(err.Error(), "changed while being read") {
		t.Errorf("stream of a replaced file: %v", err)
	}
}

func bench(b *testing.B, dsn string, fn func(*testing.B, weft.Store)) {
	if dsn == "" {
		dsn = filepath.Join(b.TempDir(), "weft.db")
	}
	s, err := Open(b.Context(), dsn, Options{Key: envcrypt.NewKey()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	fn(b, s)
}

func BenchmarkStepTx(b *testing.B)          { bench(b, "", storetest.StepTx) }
func BenchmarkToolTurn(b *testing.B)        { bench(b, "", storetest.ToolTurn) }
func BenchmarkMessagesContext(b *testing.B) { bench(b, "", storetest.MessagesContext) }
func BenchmarkBeginRun(b *testing.B)        { bench(b, "", storetest.BeginRun) }
func BenchmarkStepTxMemory(b *testing.B)    { bench(b, MemoryDSN, storetest.StepTx) }

func TestMemoryRemovedOnClose(t *testing.T) {
	s, err := Open(t.Context(), MemoryDSN, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := s.tempDir
	if _, err := os.Stat(filepath.Join(dir, "weft.db")); err != nil {
		t.Fatalf("throwaway database file: %v", err)
	}
	if keys, _ := filepath.Glob(filepath.Join(dir, "*key*")); len(keys) > 0 {
		t.Errorf("throwaway database wrote a key file: %v", keys)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory left after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Thread(t.Context(), "thr_x"); err == nil {
		t.Error("read after Close succeeded")
	}
	if err := s.Tx(t.Context(), "thr_x", nil, func(weft.Tx) error { return nil }); err == nil {
		t.Error("Tx after Close succeeded")
	}
}

// TestPagesPerCommit pins the number of pages the hot transactions write: with modernc each page a
// commit writes to the WAL costs several microseconds (two writes and a checksum), more than most
// statements.
func TestPagesPerCommit(t *testing.T) {
	ctx := t.Context()
	s := openFile(t).(*Store)
	defer s.Close()
	th := &weft.Thread{Agent: "a", UserID: "u1"}
	if err := s.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	// pages runs fn and returns the WAL frames its commits wrote.
	pages := func(fn func() error) int {
		t.Helper()
		ckpt := func(mode string) int {
			s.wmu.Lock()
			defer s.wmu.Unlock()
			var busy, frames, done int
			if err := s.wconn.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &frames, &done); err != nil {
				t.Fatal(err)
			}
			return frames
		}
		ckpt("TRUNCATE")
		if err := fn(); err != nil {
			t.Fatal(err)
		}
		return ckpt("PASSIVE")
	}
	step := func(i int) func() error {
		return func() error {
			return s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
				m := &weft.Message{Role: weft.RoleAssistant, Content: "calling", ToolCalls: []weft.ToolCall{{ID: fmt.Sprint("c", i), Name: "f"}}}
				if err := tx.InsertMessage(m); err != nil {
					return err
				}
				if err := tx.PutToolCall(&weft.ToolCallRecord{CallID: fmt.Sprint("c", i), MessageID: m.ID, Name: "f"}); err != nil {
					return err
				}
				if err := tx.PutLog(&weft.LogEntry{MessageID: m.ID, Kind: "llm", RequestBody: []byte(`{}`)}); err != nil {
					return err
				}
				state := `{"side":"a"}`
				if i >= 10 {
					state = fmt.Sprintf(`{"side":"a","step":%d}`, i)
				}
				return tx.SetExecState("run", []byte(state))
			})
		}
	}
	pages(step(0)) // first rows of each table
	for _, c := range []struct {
		name string
		max  int
		fn   func() error
	}{
		// thread counters, messages + messages_seq (no id index: migration 0011),
		// tool_calls, logs; the exec state is unchanged
		{"step", 5, step(1)},
		// messages + messages_seq: the thread row is not written
		{"message", 2, func() error {
			return s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error { return tx.InsertMessage(&weft.Message{Role: weft.RoleUser}) })
		}},
		{"unchanged exec state", 0, func() error {
			return s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error { return tx.SetExecState("run", []byte(`{"side":"a"}`)) })
		}},
		{"thread without activity", 1, func() error {
			label := "l"
			return s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error { return tx.UpdateThread(weft.ThreadPatch{Label: &label}) })
		}},
		{"begin run", 1, func() error { _, _, err := s.BeginRun(ctx, th.ID, "n", time.Nanosecond, nil); return err }},
		// the pages of a step: the run state is in the thread row
		{"step with a new run state", 5, step(10)},
	} {
		if got := pages(c.fn); got > c.max {
			t.Errorf("%s: %d pages written, want at most %d", c.name, got, c.max)
		}
	}
	// A run's last step: its reply, the thread's status, its run state and the lease's release;
	// the lease is in the thread row, so messages + messages_seq + the thread row.
	fence, err := s.AcquireLease(ctx, th.ID, "n", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := pages(func() error {
		return s.Tx(ctx, th.ID, &fence, func(tx weft.Tx) error {
			idle := weft.ThreadIdle
			return errors.Join(tx.InsertMessage(&weft.Message{Role: weft.RoleAssistant, Content: "done"}),
				tx.UpdateThread(weft.ThreadPatch{Status: &idle}), tx.SetExecState("run", []byte(`{"side":"b"}`)), tx.ReleaseLease())
		})
	})
	if got > 3 {
		t.Errorf("last step: %d pages written, want at most 3", got)
	}
}

// TestJournalsInMemory pins temp_store=MEMORY on the writer and the readers: statement journals and
// group-commit savepoints spill to a temporary file otherwise, a write syscall per journaled page.
func TestJournalsInMemory(t *testing.T) {
	s := openFile(t).(*Store)
	defer s.Close()
	ctx := t.Context()
	var mode int
	s.wmu.Lock()
	err := s.wconn.QueryRowContext(ctx, "PRAGMA temp_store").Scan(&mode)
	s.wmu.Unlock()
	if err != nil || mode != 2 {
		t.Errorf("writer temp_store = %d, %v; want 2 (MEMORY)", mode, err)
	}
	if err := s.rdb.QueryRowContext(ctx, "PRAGMA temp_store").Scan(&mode); err != nil || mode != 2 {
		t.Errorf("reader temp_store = %d, %v; want 2 (MEMORY)", mode, err)
	}
}

// Two stores on one file (as two processes would be) claim each effect exactly once.
func TestEffectClaimTwoStores(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "weft.db")
	key := envcrypt.NewKey()
	var stores [2]*Store
	for i := range stores {
		s, err := Open(ctx, path, Options{Key: key})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[i] = s
	}
	th := &weft.Thread{Agent: "a"}
	if err := stores[0].CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	const n = 40
	for i := range n {
		if err := stores[i%2].ScheduleEffect(ctx, &weft.EffectRecord{ThreadID: th.ID, Name: fmt.Sprint("e", i), RunAt: time.Now().Add(-time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for w := range 6 {
		s, node := stores[w%2], fmt.Sprint("node-", w)
		wg.Go(func() {
			for {
				es, err := s.ClaimEffects(ctx, node, 2, time.Hour)
				if err != nil {
					t.Errorf("ClaimEffects: %v", err)
					return
				}
				if len(es) == 0 {
					return
				}
				mu.Lock()
				for _, e := range es {
					seen[e.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d effects claimed, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("effect %s claimed %d times", id, c)
		}
	}
}

// TestDeletesLeaveNoRows: deleting a thread deletes every row of it and of its descendants in
// every table (the cascade triggers, with foreign keys off), and replacing or removing a chunked
// file deletes its chunks. Every table but the store's own settings is checked, so a table added
// later without a cascade fails here.
func TestDeletesLeaveNoRows(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "weft.db"), Options{Key: envcrypt.NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := bytes.Repeat([]byte("x"), weft.ChunkSize+1)
	counts := func() map[string]int {
		t.Helper()
		rows, err := s.rdb.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
			AND name NOT IN ('settings', 'schema_migrations')`)
		if err != nil {
			t.Fatal(err)
		}
		var tables []string
		for rows.Next() {
			var n string
			rows.Scan(&n)
			tables = append(tables, n)
		}
		rows.Close()
		out := map[string]int{}
		for _, tb := range tables {
			var n int
			if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM `+tb).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				out[tb] = n
			}
		}
		return out
	}

	// Replacing and removing a chunked file leaves only the chunks of what is stored.
	th := &weft.Thread{Agent: "a"}
	if err := s.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error { return tx.WriteFile(&weft.FileInfo{Path: "/big.bin"}, big) }); err != nil {
			t.Fatal(err)
		}
	}
	if got := counts()["file_chunks"]; got != 2 {
		t.Errorf("chunks after replacing a 2-chunk file: %d, want 2", got)
	}
	if err := s.Tx(ctx, th.ID, nil, func(tx weft.Tx) error { return tx.RemoveFile("/big.bin") }); err != nil {
		t.Fatal(err)
	}
	if got := counts()["file_chunks"]; got != 0 {
		t.Errorf("chunks after removing the file: %d", got)
	}
	if err := s.DeleteThread(ctx, th.ID); err != nil {
		t.Fatal(err)
	}

	// A thread, its child and grandchild, each with rows in every table.
	var ids []string
	parent := ""
	for range 3 {
		th := &weft.Thread{Agent: "a", ParentID: parent}
		if err := s.CreateThread(ctx, th, []weft.EnvValue{{Name: "TOKEN", Value: "s3cret", Type: weft.VarSecret}}); err != nil {
			t.Fatal(err)
		}
		ids, parent = append(ids, th.ID), th.ID
		if err := s.PushQueue(ctx, &weft.QueuedMessage{ThreadID: th.ID, Content: "queued"}); err != nil {
			t.Fatal(err)
		}
		if err := s.ScheduleEffect(ctx, &weft.EffectRecord{ThreadID: th.ID, Name: "remind", RunAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		fence, err := s.AcquireLease(ctx, th.ID, "node", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Tx(ctx, th.ID, &fence, func(tx weft.Tx) error {
			m := &weft.Message{Role: weft.RoleAssistant, Content: "hi", ToolCalls: []weft.ToolCall{{ID: "c1", Name: "t"}}}
			return errors.Join(tx.InsertMessage(m), tx.PutToolCall(&weft.ToolCallRecord{CallID: "c1", MessageID: m.ID, Name: "t"}),
				tx.SetExecState("run", json.RawMessage(`{"stops":1}`)), tx.PutLog(&weft.LogEntry{Kind: "llm"}),
				tx.SetKV("k", json.RawMessage(`1`)), tx.WriteFile(&weft.FileInfo{Path: "/dir/big.bin"}, big))
		})
		if err != nil {
			t.Fatal(err)
		}
		// The call, open in the thread row, goes to tool_calls when it changes in a Tx that
		// writes no row (migration 0017).
		if err := s.Tx(ctx, th.ID, &fence, func(tx weft.Tx) error {
			return tx.PutToolCall(&weft.ToolCallRecord{CallID: "c1", Name: "t", Status: weft.CallDone})
		}); err != nil {
			t.Fatal(err)
		}
	}
	populated := counts()
	for _, tb := range []string{"threads", "messages", "tool_calls", "queue", "logs", "kv", "files", "file_chunks", "env", "effects"} {
		if populated[tb] == 0 {
			t.Errorf("table %s was not populated: %v", tb, populated)
		}
	}
	if err := s.DeleteThread(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if left := counts(); len(left) > 0 {
		t.Errorf("rows left after deleting the thread tree: %v", left)
	}
}

// BenchmarkPushQueue: a message queued on a thread that is busy elsewhere (its run drains it).
func BenchmarkPushQueue(b *testing.B) {
	bench(b, "", func(b *testing.B, s weft.Store) {
		ctx := b.Context()
		th := &weft.Thread{Agent: "a"}
		if err := s.CreateThread(ctx, th, nil); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := s.PushQueue(ctx, &weft.QueuedMessage{ThreadID: th.ID, Content: "one more thing", MaxMessages: 1000}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestKeyFilePerDatabase: two databases in one directory get a key file each, named after them;
// neither writes the shared weft.key of earlier versions.
func TestKeyFilePerDatabase(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	var keys [][]byte
	for _, name := range []string{"a.db", "b.db"} {
		s, err := Open(ctx, filepath.Join(dir, name), Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		if !s.KeyCreated() || s.KeyFile() != filepath.Join(dir, name+".key") {
			t.Errorf("%s: created %v, key file %s", name, s.KeyCreated(), s.KeyFile())
		}
		if err := s.SetEnv(ctx, weft.EnvInstance, "", []weft.EnvValue{{Name: "A", Value: "secret " + name}}); err != nil {
			t.Fatal(err)
		}
		s.Close()
		k, err := envcrypt.ReadKeyFile(filepath.Join(dir, name+".key"))
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if bytes.Equal(keys[0], keys[1]) {
		t.Error("two databases share one key")
	}
	if _, err := os.Stat(filepath.Join(dir, envcrypt.KeyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a shared %s was written: %v", envcrypt.KeyFile, err)
	}
	// Removing one database's key file leaves the other readable.
	os.Remove(filepath.Join(dir, "a.db.key"))
	s, err := Open(ctx, filepath.Join(dir, "b.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if env, err := s.Env(ctx, weft.EnvInstance, ""); err != nil || len(env) != 1 || env[0].Value != "secret b.db" {
		t.Errorf("b.db env: %v %v", env, err)
	}
}

// TestKeySharedFileKept: a database made by an earlier version, sealed with its directory's shared
// weft.key, still opens and decrypts; it gets a copy of the key as its own key file (so it stays
// readable when weft.key goes), weft.key stays for the other databases, and nothing warns. A new
// database beside it gets a new key.
func TestKeySharedFileKept(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	shared := envcrypt.NewKey()
	path := filepath.Join(dir, "old.db")
	s, err := Open(ctx, path, Options{Key: shared})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetEnv(ctx, weft.EnvInstance, "", []weft.EnvValue{{Name: "A", Value: "old secret"}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := envcrypt.WriteKeyFile(filepath.Join(dir, envcrypt.KeyFile), shared); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	read := func() {
		t.Helper()
		s, err := Open(ctx, path, Options{Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if env, err := s.Env(ctx, weft.EnvInstance, ""); err != nil || len(env) != 1 || env[0].Value != "old secret" {
			t.Fatalf("env sealed with the shared key: %v %v", env, err)
		}
		if s.KeyCreated() {
			t.Error("a key was created for an existing database")
		}
	}
	read()
	if logs.Len() != 0 {
		t.Errorf("opening an existing database logged: %s", logs.String())
	}
	own, err := envcrypt.ReadKeyFile(path + ".key")
	if err != nil || !bytes.Equal(own, shared) {
		t.Fatalf("own key file: %v, same key %v", err, bytes.Equal(own, shared))
	}
	if fi, err := os.Stat(path + ".key"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("own key file mode: %v %v", fi, err)
	}
	if k, err := envcrypt.ReadKeyFile(filepath.Join(dir, envcrypt.KeyFile)); err != nil || !bytes.Equal(k, shared) {
		t.Fatalf("the shared key file changed: %v", err)
	}
	// Later opens read the database's own file, with or without the shared one.
	os.Remove(filepath.Join(dir, envcrypt.KeyFile))
	read()

	// A shared key file that is not the database's key fails loudly and writes nothing.
	other := filepath.Join(dir, "other.db")
	s, err = Open(ctx, other, Options{Key: envcrypt.NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := envcrypt.WriteKeyFile(filepath.Join(dir, envcrypt.KeyFile), shared); err != nil {
		t.Fatal(err)
	}
	var wk *envcrypt.WrongKeyError
	if _, err := Open(ctx, other, Options{}); !errors.As(err, &wk) {
		t.Fatalf("open with a shared key of another database: %v", err)
	}
	if _, err := os.Stat(other + ".key"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a wrong shared key was copied: %v", err)
	}

	// A new database in the same directory gets a key of its own.
	s, err = Open(ctx, filepath.Join(dir, "new.db"), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if k, err := envcrypt.ReadKeyFile(filepath.Join(dir, "new.db.key")); err != nil || bytes.Equal(k, shared) {
		t.Errorf("new database's key: %v, shared %v", err, bytes.Equal(k, shared))
	}
}
