package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// The scale figures: many threads at once, and what threads cost once they are idle.

// ScaleRunners lists the runners of the concurrency figure: the SQLite floor with group commit
// (the denominator) and Weft on SQLite, whose store commits the same way, through Converse and
// through Ask.
func ScaleRunners() []Def {
	return []Def{
		{Name: "raw-sqlite-group", Kind: SQLite, Floor: true, New: newRawSQLiteGroup},
		{Name: "weft-sqlite", Kind: SQLite, New: newWeftSQLite},
		{Name: "weft-sqlite-ask", Kind: SQLite, New: newWeftSQLiteAsk},
	}
}

// Concurrent prepares n threads and runs one turn on each, all at once, and returns the turns
// per second. Every answer is checked.
func Concurrent(ctx context.Context, r Runner, n int) (float64, error) {
	if err := r.Prepare(ctx, n); err != nil {
		return 0, err
	}
	runtime.GC()
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			got, err := r.Turn(ctx, i)
			if err == nil && got != Answer {
				err = fmt.Errorf("thread %d answered %q", i, got)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return float64(n) / elapsed.Seconds(), nil
}

// Footprint is what a runner holds for its idle threads.
type Footprint struct {
	Threads int
	// Goroutines is how many more goroutines run than before the threads existed.
	Goroutines int
	// HeapBytes is the live heap beyond what the runner held before the threads existed, after a
	// collection.
	HeapBytes int64
}

// BytesPerThread is HeapBytes over Threads.
func (f Footprint) BytesPerThread() float64 { return float64(f.HeapBytes) / float64(f.Threads) }

// Idle builds a runner of def, prepares n threads, runs one turn on each (so everything a turn
// sets up has been set up and should have been let go), and measures what stays: goroutines and
// live heap, against the runner before its threads.
func Idle(ctx context.Context, def Def, cfg Config, n int) (f Footprint, err error) {
	r, err := def.New(cfg)
	if err != nil {
		return f, err
	}
	defer func() { err = errors.Join(err, r.Close()) }()
	if err := r.Prepare(ctx, 0); err != nil {
		return f, err
	}
	g0, h0 := settle()
	if err := r.Prepare(ctx, n); err != nil {
		return f, err
	}
	for i := range n {
		if got, err := r.Turn(ctx, i); err != nil || got != Answer {
			return f, errors.Join(err, fmt.Errorf("thread %d answered %q", i, got))
		}
	}
	g1, h1 := settle()
	return Footprint{Threads: n, Goroutines: g1 - g0, HeapBytes: int64(h1) - int64(h0)}, nil
}

// settle waits for goroutines that are finishing to exit, collects, and returns the goroutine
// count and the live heap. A count is settled when it holds for 100 ms: Weft's engine keeps the
// goroutines that ran a turn for 50 ms in case another comes (engine/gopool.go).
func settle() (goroutines int, heap uint64) {
	prev := -1
	for range 50 {
		runtime.GC()
		n := runtime.NumGoroutine()
		if n == prev {
			break
		}
		prev = n
		time.Sleep(100 * time.Millisecond)
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapAlloc
}

// newRawSQLiteGroup is the SQLite floor as a store serving many threads at once would run it:
// each of the turn's four messages is durable before the turn goes on, as in raw-sqlite-4tx, but
// the writes that arrive while a commit is under way wait for it and then commit together in one
// transaction (group commit), so that one commit serves many threads.
func newRawSQLiteGroup(cfg Config) (Runner, error) {
	db, ins, err := openFloorSQLite(cfg)
	if err != nil {
		return nil, err
	}
	g := &groupWriter{db: db, ins: ins, reqs: make(chan *groupReq, 4096), done: make(chan struct{})}
	go g.loop()
	f := &sqlFloor{rawLoop: newRawLoop(cfg)}
	f.commit = f.commitOne
	f.write = func(ctx context.Context, thread int, seq int64, m *rawMsg) error {
		body, err := json.Marshal(m)
		if err != nil {
			return err
		}
		return g.write(ctx, []groupRow{{thread, seq, m.Role, body}})
	}
	f.batch = func(ctx context.Context, thread int, msgs []rawMsg) error {
		rows := make([]groupRow, len(msgs))
		for i := range msgs {
			body, err := json.Marshal(&msgs[i])
			if err != nil {
				return err
			}
			rows[i] = groupRow{thread, int64(i + 1), msgs[i].Role, body}
		}
		return g.write(ctx, rows)
	}
	f.drop, f.count = sqliteDrop(db), sqliteCount(db)
	f.close = func() error {
		close(g.reqs)
		<-g.done
		ins.Close()
		return db.Close()
	}
	return f, nil
}

type groupRow struct {
	thread int
	seq    int64
	role   string
	body   []byte
}

type groupReq struct {
	rows []groupRow
	err  chan error
}

// groupWriter commits the writes waiting for it together: one transaction per batch of up to
// maxGroupRows requests, each request answered once its batch has committed.
type groupWriter struct {
	db   *sql.DB
	ins  *sql.Stmt
	reqs chan *groupReq
	done chan struct{}
}

const maxGroupRows = 256

func (g *groupWriter) write(ctx context.Context, rows []groupRow) error {
	r := &groupReq{rows: rows, err: make(chan error, 1)}
	g.reqs <- r
	return <-r.err
}

func (g *groupWriter) loop() {
	defer close(g.done)
	var batch []*groupReq
	for r := range g.reqs {
		batch = append(batch[:0], r)
	fill:
		for len(batch) < maxGroupRows {
			select {
			case r, ok := <-g.reqs:
				if !ok {
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		err := g.commit(batch)
		for _, r := range batch {
			r.err <- err
		}
	}
}

func (g *groupWriter) commit(batch []*groupReq) error {
	ctx := context.Background()
	tx, err := g.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	st := tx.StmtContext(ctx, g.ins)
	for _, r := range batch {
		for _, row := range r.rows {
			if _, err := st.ExecContext(ctx, row.thread, row.seq, row.role, row.body); err != nil {
				tx.Rollback()
				return err
			}
		}
	}
	return tx.Commit()
}
