// Package bench runs one agent turn through Weft and through the floors and peers it is measured
// against, so that every figure in the table comes from the same run on the same machine.
//
// The turn: a thread already holds a system prompt and 20 prior messages; a user message arrives;
// the model asks for lookup(order_id=42); the arguments are checked against the tool's schema; the
// tool runs; the model, having read the result, answers. Every runner talks to an in-process fake
// model written against its own model interface, and the fake refuses any conversation other than
// the expected one, so a runner that skips a step fails instead of looking fast.
//
// The package lives in its own module so that the peers (eino, Google's ADK for Go) never enter
// Weft's dependencies.
package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// The turn every runner performs.
const (
	System   = "You are the order-support assistant for an online shop. Answer briefly."
	Question = "Where is my order 42? It was supposed to arrive yesterday."
	ToolName = "lookup"
	ToolDoc  = "Look up the current status of an order by its numeric id."
	CallID   = "call_lookup_1"
	Args     = `{"order_id":42}`
	// Result is what the tool answers for order 42.
	Result = "order 42: shipped 2 days ago via ParcelCo, tracking PC123456789, expected delivery tomorrow"
	// Answer is the model's reply once it has read Result.
	Answer = "Your order 42 has shipped and should arrive tomorrow (tracking PC123456789)."

	// Prior is how many messages precede the question: 20 alternating user and assistant texts of
	// PriorBytes each. With the system prompt the model's first call sees Prior+2 messages.
	Prior      = 20
	PriorBytes = 200
)

// Schema is the lookup tool's argument schema, for runners that take one rather than infer it.
const Schema = `{"type":"object","properties":{"order_id":{"type":"integer","description":"Numeric id of the order"}},"required":["order_id"],"additionalProperties":false}`

// LookupArgs are the lookup tool's arguments.
type LookupArgs struct {
	OrderID int `json:"order_id" jsonschema:"description=Numeric id of the order"`
}

// PriorText is the text of the i-th prior message (user on even i, assistant on odd).
func PriorText(i int) string {
	role := "user"
	if i%2 == 1 {
		role = "assistant"
	}
	s := strings.Repeat(fmt.Sprintf("[%s %02d] the parcel left the warehouse on monday and the customer asked about it. ", role, i), 4)
	return s[:PriorBytes]
}

// Counts is what a runner's fake model and tool saw; the honesty tests read it.
type Counts struct {
	ModelCalls atomic.Int64
	ToolRuns   atomic.Int64
	// Rejected counts model calls whose conversation the fake refused.
	Rejected atomic.Int64
	// ToolErrors counts tool messages the model read that were not the tool's result (a
	// validation error, when the arguments were bad).
	ToolErrors atomic.Int64
}

// ErrConversation is the fake model's answer to a conversation it does not expect.
var ErrConversation = errors.New("fake model: unexpected conversation")

// Reply decides the fake model's answer from the conversation it was sent: n messages (system
// prompt included), the last one's role ("user" or "tool") and text. It answers the question with
// the tool call and the tool's message with Answer (counting it in ToolErrors when it is not the
// tool's result); anything else is an error.
func (c *Counts) Reply(n int, role, text string) (callTool bool, err error) {
	c.ModelCalls.Add(1)
	switch {
	case n == Prior+2 && role == "user" && text == Question:
		return true, nil
	case n == Prior+4 && role == "tool":
		if text != Result {
			c.ToolErrors.Add(1)
		}
		return false, nil
	}
	c.Rejected.Add(1)
	return false, fmt.Errorf("%w: %d messages, the last from %s: %.60q", ErrConversation, n, role, text)
}

// Lookup is the tool's body, called with the arguments the runner decoded.
func (c *Counts) Lookup(a LookupArgs) (string, error) {
	c.ToolRuns.Add(1)
	if a.OrderID != 42 {
		return "", fmt.Errorf("no order %d", a.OrderID)
	}
	return Result, nil
}

// Runner is one way of running the turn.
type Runner interface {
	// Prepare readies n threads that each hold the prior messages, for turns 0..n-1; it runs
	// outside the timed region, and is called again (with the earlier threads dropped) when a
	// benchmark needs more.
	Prepare(ctx context.Context, n int) error
	// Turn runs the turn on prepared thread i and returns the model's final text.
	Turn(ctx context.Context, i int) (string, error)
	// Close releases what the runner holds.
	Close() error
}

// Config is what a runner is built from.
type Config struct {
	Counts *Counts
	// Dir is a scratch directory for runners that keep files.
	Dir string
	// PostgresURL names a database runners on PostgreSQL may create a schema in.
	PostgresURL string
	// BadArgs makes the fake model ask for lookup with arguments that break the schema (the
	// honesty test of validation): the runner must not run the tool with them.
	BadArgs bool
}

// BadArgs are the arguments sent when Config.BadArgs is set: a string where the schema wants an
// integer.
const BadArgs = `{"order_id":"forty-two"}`

// Kind groups runners by what they persist, which decides the floor they are compared with.
type Kind string

// The kinds of runner.
const (
	Memory   Kind = "memory"
	SQLite   Kind = "sqlite"
	Postgres Kind = "postgres"
)

// Def names a runner.
type Def struct {
	Name string
	Kind Kind
	// Floor marks the bare loop of its kind, the denominator of its kind's ratios.
	Floor bool
	New   func(Config) (Runner, error)
}

// Runners lists every runner in the order the table prints them.
func Runners() []Def {
	return []Def{
		{Name: "raw", Kind: Memory, Floor: true, New: newRaw},
		{Name: "eino-react", Kind: Memory, New: newEino},
		{Name: "adk-go", Kind: Memory, New: newADK},
		{Name: "weft-memstore", Kind: Memory, New: newWeftMemory},
		{Name: "weft-memstore-ask", Kind: Memory, New: newWeftMemoryAsk},
		{Name: "raw-sqlite-4tx", Kind: SQLite, Floor: true, New: newRawSQLite},
		{Name: "weft-sqlite", Kind: SQLite, New: newWeftSQLite},
		{Name: "weft-sqlite-ask", Kind: SQLite, New: newWeftSQLiteAsk},
		{Name: "weft-sqlite-served", Kind: SQLite, New: newWeftSQLiteServed},
		{Name: "raw-postgres-4tx", Kind: Postgres, Floor: true, New: newRawPostgres},
		{Name: "weft-postgres", Kind: Postgres, New: newWeftPostgres},
		{Name: "weft-postgres-ask", Kind: Postgres, New: newWeftPostgresAsk},
		{Name: "weft-postgres-served", Kind: Postgres, New: newWeftPostgresServed},
	}
}

// argsFor is the arguments the fake model sends.
func argsFor(cfg Config) string {
	if cfg.BadArgs {
		return BadArgs
	}
	return Args
}

// batch is how many threads Turns prepares at a time, outside the timer.
const batch = 256

// Turns runs b.N turns of r, each on a thread prepared (in batches, with a collection after each,
// outside the timer) for it alone. It returns the first error, or a wrong answer, and stops there.
func Turns(ctx context.Context, b *testing.B, r Runner) error {
	b.ReportAllocs()
	next, have := 0, 0
	for i := 0; i < b.N; i++ {
		if next == have {
			b.StopTimer()
			have, next = min(batch, b.N-i), 0
			if err := r.Prepare(ctx, have); err != nil {
				return err
			}
			runtime.GC()
			b.StartTimer()
		}
		if got, err := r.Turn(ctx, next); err != nil || got != Answer {
			return errors.Join(err, fmt.Errorf("answered %q", got))
		}
		next++
	}
	return nil
}
