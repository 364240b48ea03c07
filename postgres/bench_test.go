package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weft-agents/weft/internal/pgtest"
	"github.com/weft-agents/weft/postgres"
	"github.com/weft-agents/weft/storetest"
)

func BenchmarkStepTx(b *testing.B)   { storetest.StepTx(b, openB(b)) }
func BenchmarkToolTurn(b *testing.B) { storetest.ToolTurn(b, openB(b)) }
func BenchmarkBeginRun(b *testing.B) { storetest.BeginRun(b, openB(b)) }

func openB(b *testing.B) *postgres.Store {
	_, dsn := pgtest.Schema(b)
	s, err := postgres.Open(context.Background(), dsn, postgres.Options{Key: make([]byte, 32)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkFloorToolTurn is the floor a tool turn on PostgreSQL is measured against: a bare pgx
// loop that commits the four rows of a tool turn (the user message, the tool call, the tool
// result, the answer), each on its own, as a turn must make each durable before the next step.
func BenchmarkFloorToolTurn(b *testing.B) {
	_, dsn := pgtest.Schema(b)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE rows (thread_id text, seq bigint, doc json, PRIMARY KEY (thread_id, seq))`); err != nil {
		b.Fatal(err)
	}
	docs := []string{
		`{"role":"user","content":"Where is my order 42?"}`,
		`{"call_id":"call_1","name":"lookup","arguments":"{\"order_id\":42}","status":"pending"}`,
		`{"role":"tool","tool_call_id":"call_1","content":"{\"status\":\"shipped\"}"}`,
		`{"role":"assistant","content":"Your order 42 has shipped."}`,
	}
	b.ReportAllocs()
	seq := 0
	for b.Loop() {
		for _, d := range docs {
			seq++
			if _, err := pool.Exec(ctx, `INSERT INTO rows (thread_id, seq, doc) VALUES ($1, $2, $3)`, "thr_floor", seq, []byte(d)); err != nil {
				b.Fatal(fmt.Errorf("floor insert: %w", err))
			}
		}
	}
}
