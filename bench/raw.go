package bench

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// The floors: the turn written by hand, in memory and committing its four new messages one
// transaction each (the user message, the tool call, the tool result, the answer) — the fewest
// commits a runtime can make and still lose nothing that a crash could make it repeat.

type rawMsg struct {
	Role   string `json:"role"`
	Text   string `json:"text,omitempty"`
	CallID string `json:"call_id,omitempty"`
	Tool   string `json:"tool,omitempty"`
	Args   string `json:"args,omitempty"`
}

// rawLoop is the bare loop; commit, when set, makes one message durable.
type rawLoop struct {
	c      *Counts
	args   string
	prior  []rawMsg
	commit func(ctx context.Context, thread int, m *rawMsg) error
}

func newRawLoop(cfg Config) *rawLoop {
	l := &rawLoop{c: cfg.Counts, args: argsFor(cfg), prior: []rawMsg{{Role: "system", Text: System}}}
	for i := range Prior {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		l.prior = append(l.prior, rawMsg{Role: role, Text: PriorText(i)})
	}
	return l
}

func newRaw(cfg Config) (Runner, error) { return newRawLoop(cfg), nil }

func (l *rawLoop) Prepare(context.Context, int) error { return nil }
func (l *rawLoop) Close() error                       { return nil }

// model is the fake model of the floors.
func (l *rawLoop) model(msgs []rawMsg) (rawMsg, error) {
	last := msgs[len(msgs)-1]
	call, err := l.c.Reply(len(msgs), last.Role, last.Text)
	if err != nil {
		return rawMsg{}, err
	}
	if call {
		return rawMsg{Role: "assistant", CallID: CallID, Tool: ToolName, Args: l.args}, nil
	}
	return rawMsg{Role: "assistant", Text: Answer}, nil
}

// decodeArgs checks the arguments against Schema by hand: an object with exactly an integer
// order_id.
func decodeArgs(s string) (LookupArgs, error) {
	var a struct {
		OrderID json.RawMessage `json:"order_id"`
	}
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.DisallowUnknownFields()
	if err := d.Decode(&a); err != nil {
		return LookupArgs{}, fmt.Errorf("arguments: %w", err)
	}
	if a.OrderID == nil {
		return LookupArgs{}, errors.New("arguments: order_id is required")
	}
	n, err := strconv.Atoi(string(a.OrderID)) // a JSON string or fraction is refused here
	if err != nil {
		return LookupArgs{}, fmt.Errorf("arguments: order_id is not an integer: %w", err)
	}
	return LookupArgs{OrderID: n}, nil
}

func (l *rawLoop) Turn(ctx context.Context, thread int) (string, error) {
	msgs := make([]rawMsg, len(l.prior), len(l.prior)+4)
	copy(msgs, l.prior)
	add := func(m rawMsg) error {
		msgs = append(msgs, m)
		if l.commit != nil {
			return l.commit(ctx, thread, &msgs[len(msgs)-1])
		}
		return nil
	}
	if err := add(rawMsg{Role: "user", Text: Question}); err != nil {
		return "", err
	}
	for range 4 {
		reply, err := l.model(msgs)
		if err != nil {
			return "", err
		}
		if err := add(reply); err != nil {
			return "", err
		}
		if reply.Tool == "" {
			return reply.Text, nil
		}
		var result string
		if a, err := decodeArgs(reply.Args); err != nil {
			result = err.Error()
		} else if result, err = l.c.Lookup(a); err != nil {
			result = err.Error()
		}
		if err := add(rawMsg{Role: "tool", CallID: reply.CallID, Text: result}); err != nil {
			return "", err
		}
	}
	return "", errors.New("raw: no answer after 4 model calls")
}

// sqlFloor is the bare loop committing to a database; prepared threads hold the prior messages.
type sqlFloor struct {
	*rawLoop
	seq   []int64 // per prepared thread, its last message's seq
	base  int     // thread ids of the current batch start here
	write func(ctx context.Context, thread int, seq int64, m *rawMsg) error
	close func() error
	batch func(ctx context.Context, thread int, msgs []rawMsg) error
	drop  func(ctx context.Context, from, to int) error
	count func(ctx context.Context, thread int) (int, error)
}

// Added counts the rows thread i gained since Prepare.
func (f *sqlFloor) Added(ctx context.Context, i int) (int, error) {
	n, err := f.count(ctx, f.base+i)
	return n - len(f.prior), err
}

func (f *sqlFloor) Close() error { return f.close() }

func (f *sqlFloor) Prepare(ctx context.Context, n int) error {
	if err := f.drop(ctx, f.base, f.base+len(f.seq)); err != nil {
		return err
	}
	f.base += len(f.seq)
	f.seq = make([]int64, n)
	for i := range n {
		if err := f.batch(ctx, f.base+i, f.prior); err != nil {
			return err
		}
		f.seq[i] = int64(len(f.prior))
	}
	return nil
}

func (f *sqlFloor) commitOne(ctx context.Context, thread int, m *rawMsg) error {
	f.seq[thread]++
	return f.write(ctx, f.base+thread, f.seq[thread], m)
}

const floorTable = `CREATE TABLE IF NOT EXISTS messages (
	thread BIGINT NOT NULL,
	seq    BIGINT NOT NULL,
	role   TEXT   NOT NULL,
	body   TEXT   NOT NULL,
	PRIMARY KEY (thread, seq)
)`

// openFloorSQLite opens the floors' SQLite file in WAL mode with synchronous=NORMAL, as Weft opens
// it, through one connection, with the floor's table and its insert statement.
func openFloorSQLite(cfg Config) (*sql.DB, *sql.Stmt, error) {
	dsn := "file:" + filepath.Join(cfg.Dir, "floor.db") + "?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(5000)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, nil, err
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(floorTable); err != nil {
		db.Close()
		return nil, nil, err
	}
	ins, err := db.Prepare(`INSERT INTO messages (thread, seq, role, body) VALUES (?, ?, ?, ?)`)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, ins, nil
}

// sqliteDrop deletes the floor's rows of threads [from, to).
func sqliteDrop(db *sql.DB) func(ctx context.Context, from, to int) error {
	return func(ctx context.Context, from, to int) error {
		_, err := db.ExecContext(ctx, `DELETE FROM messages WHERE thread >= ? AND thread < ?`, from, to)
		return err
	}
}

// sqliteCount counts a thread's rows in the floor's table.
func sqliteCount(db *sql.DB) func(ctx context.Context, thread int) (int, error) {
	return func(ctx context.Context, thread int) (n int, err error) {
		err = db.QueryRowContext(ctx, `SELECT count(*) FROM messages WHERE thread = ?`, thread).Scan(&n)
		return n, err
	}
}

// newRawSQLite is the floor on a SQLite file, each message committed in its own transaction.
func newRawSQLite(cfg Config) (Runner, error) {
	db, ins, err := openFloorSQLite(cfg)
	if err != nil {
		return nil, err
	}
	f := &sqlFloor{rawLoop: newRawLoop(cfg)}
	f.commit = f.commitOne
	insert := func(ctx context.Context, tx *sql.Tx, thread int, seq int64, m *rawMsg) error {
		body, err := json.Marshal(m)
		if err != nil {
			return err
		}
		_, err = tx.StmtContext(ctx, ins).ExecContext(ctx, thread, seq, m.Role, body)
		return err
	}
	inTx := func(ctx context.Context, fn func(*sql.Tx) error) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	}
	f.write = func(ctx context.Context, thread int, seq int64, m *rawMsg) error {
		return inTx(ctx, func(tx *sql.Tx) error { return insert(ctx, tx, thread, seq, m) })
	}
	f.batch = func(ctx context.Context, thread int, msgs []rawMsg) error {
		return inTx(ctx, func(tx *sql.Tx) error {
			for i := range msgs {
				if err := insert(ctx, tx, thread, int64(i+1), &msgs[i]); err != nil {
					return err
				}
			}
			return nil
		})
	}
	f.drop, f.count = sqliteDrop(db), sqliteCount(db)
	f.close = func() error { ins.Close(); return db.Close() }
	return f, nil
}

// newRawPostgres is the floor on PostgreSQL through a pgx pool, each message committed with the
// server's default (durable) synchronous_commit, in a schema of its own.
func newRawPostgres(cfg Config) (Runner, error) {
	if cfg.PostgresURL == "" {
		return nil, ErrNoPostgres
	}
	ctx := context.Background()
	_, dsn, cleanup, err := pgSchema(ctx, cfg.PostgresURL)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		cleanup()
		return nil, err
	}
	if _, err := pool.Exec(ctx, floorTable); err != nil {
		pool.Close()
		cleanup()
		return nil, err
	}
	const insert = `INSERT INTO messages (thread, seq, role, body) VALUES ($1, $2, $3, $4)`
	f := &sqlFloor{rawLoop: newRawLoop(cfg)}
	f.commit = f.commitOne
	f.write = func(ctx context.Context, thread int, seq int64, m *rawMsg) error {
		body, err := json.Marshal(m)
		if err != nil {
			return err
		}
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, insert, thread, seq, m.Role, string(body))
			return err
		})
	}
	f.batch = func(ctx context.Context, thread int, msgs []rawMsg) error {
		var b pgx.Batch
		for i := range msgs {
			body, err := json.Marshal(&msgs[i])
			if err != nil {
				return err
			}
			b.Queue(insert, thread, i+1, msgs[i].Role, string(body))
		}
		return pool.SendBatch(ctx, &b).Close()
	}
	f.drop = func(ctx context.Context, from, to int) error {
		_, err := pool.Exec(ctx, `DELETE FROM messages WHERE thread >= $1 AND thread < $2`, from, to)
		return err
	}
	f.count = func(ctx context.Context, thread int) (n int, err error) {
		err = pool.QueryRow(ctx, `SELECT count(*) FROM messages WHERE thread = $1`, thread).Scan(&n)
		return n, err
	}
	f.close = func() error { pool.Close(); return cleanup() }
	return f, nil
}

// ErrNoPostgres is returned by the PostgreSQL runners when no database is named.
var ErrNoPostgres = errors.New("no PostgreSQL database: set WEFT_TEST_POSTGRES_URL")
