package engine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/sqlite"
)

// TestLostConnectionKeepsToolResult: the database connection breaks (PostgreSQL restarting) at
// each write of a turn with a non-idempotent tool, the process lives on. Once the database
// answers again the turn finishes; a tool that had finished keeps its result — it is not
// answered "interrupted" (which made the model call it again) nor run twice (issue 47, row 11).
func TestLostConnectionKeepsToolResult(t *testing.T) {
	lost := fmt.Errorf("postgres: append: conn closed: %w", weft.ErrUnavailable)
	for after := int32(0); after <= 4; after++ {
		t.Run(fmt.Sprint("lost_after_", after), func(t *testing.T) {
			var charges atomic.Int32
			reg := registry([]*weft.Tool{countTool("charge", &charges), countTool("lookup", new(atomic.Int32))}, nil)
			db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "w.db"), sqlite.Options{Key: make([]byte, 32)})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			fs := &faultyStore{Store: db, after: after}
			fs.fault.Store(&lost)
			ctx := context.Background()
			eng, _ := engine.New(engine.Options{Registry: reg, Store: fs, Override: modelByHistory, LeaseTTL: time.Second})
			th, _ := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
			_, _ = eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "pay"}})
			ran := charges.Load()
			fs.fault.Store(nil)
			if _, err := eng.Ask(ctx, th.ID, engine.Input{}); err != nil {
				t.Fatalf("after the database came back: %v", err)
			}
			msgs, _ := db.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
			last := msgs[len(msgs)-1].Content
			if !strings.HasPrefix(last, "final: ") || charges.Load() > 1 {
				t.Fatalf("not finished (last %q) or the tool ran %d times", last, charges.Load())
			}
			if ran == 1 && !strings.Contains(last, "charge ok") {
				t.Errorf("the tool finished before the connection broke, but the model saw: %q", last)
			}
		})
	}
}
