package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/postgres"
	"github.com/weft-agents/weft/sqlite"
)

// Weft: an agent whose prompt offers the lookup tool (arguments inferred from LookupArgs and
// validated against that schema), on each store, driven through Engine.Converse — the streaming
// call a library user and the server make — until the thread is quiet. The -ask runners drive
// the same turn through Engine.Ask, the outcome-only call (`weft run`'s, and
// the counterpart of eino's Generate and of the floors' loops), which returns the reply.

type weftRunner struct {
	eng   *engine.Engine
	st    weft.Store
	ids   []string
	close func() error
	ask   bool // Turn calls Ask instead of Converse
}

func weftModel(cfg Config) weft.Provider {
	args := argsFor(cfg)
	return weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		if len(req.Tools) != 1 || req.Tools[0].Name != ToolName {
			return nil, errors.New("fake model: the tool was not offered")
		}
		last := req.Messages[len(req.Messages)-1]
		call, err := cfg.Counts.Reply(len(req.Messages), string(last.Role), last.Content)
		if err != nil {
			return nil, &weft.ProviderError{Type: weft.ErrExpectationFailed, Message: err.Error(), Err: err}
		}
		if call {
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: CallID, Name: ToolName, Arguments: args}},
				FinishReason: "tool_calls", Usage: weft.Usage{InputTokens: 1200, OutputTokens: 12}}, nil
		}
		return &weft.Response{Text: Answer, FinishReason: "stop", Usage: weft.Usage{InputTokens: 1300, OutputTokens: 20}}, nil
	})
}

func newWeft(cfg Config, st weft.Store, close func() error) (Runner, error) {
	return newWeftEngine(cfg, st, close, false)
}

// newWeftEngine is newWeft with, when record is set, every event recorded in the store as the run
// commits it (engine.Options.RecordEvents), as `weft serve` runs for its streams.
func newWeftEngine(cfg Config, st weft.Store, close func() error, record bool) (Runner, error) {
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "fake", Provider: "fake", Model: "fake"})
	reg.AddTool(weft.NewTool(ToolName, ToolDoc, func(ctx context.Context, _ weft.State, a LookupArgs) (weft.ToolResult, error) {
		out, err := cfg.Counts.Lookup(a)
		if err != nil {
			return weft.Failure(err.Error()), nil
		}
		return weft.Success(out), nil
	}))
	reg.AddPrompt(&weft.Prompt{Name: "support", ToolDescription: "Order support.", Model: "fake", IncludeChat: true,
		Prompt: weft.Text(System), Tools: []weft.ToolEntry{{Name: ToolName}}})
	reg.AddAgent(&weft.Agent{Name: "support", SideA: weft.AgentSide{Prompt: "support"}})
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: weftModel(cfg), RecordEvents: record})
	if err != nil {
		close()
		return nil, err
	}
	return &weftRunner{eng: eng, st: st, close: close}, nil
}

func newWeftMemory(cfg Config) (Runner, error) {
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		return nil, err
	}
	return newWeft(cfg, st, st.Close)
}

func newWeftMemoryAsk(cfg Config) (Runner, error) { return asking(newWeftMemory(cfg)) }

func newWeftSQLiteAsk(cfg Config) (Runner, error) { return asking(newWeftSQLite(cfg)) }

func newWeftPostgresAsk(cfg Config) (Runner, error) { return asking(newWeftPostgres(cfg)) }

// asking makes a Weft runner drive its turns through Ask.
func asking(r Runner, err error) (Runner, error) {
	if err != nil {
		return nil, err
	}
	r.(*weftRunner).ask = true
	return r, nil
}

func newWeftSQLite(cfg Config) (Runner, error) { return newWeftSQLiteRecording(cfg, false) }

// newWeftSQLiteServed is weft-sqlite-ask recording its events, as a server does.
func newWeftSQLiteServed(cfg Config) (Runner, error) {
	return asking(newWeftSQLiteRecording(cfg, true))
}

// newWeftSQLiteRecording is Weft on a SQLite file in cfg.Dir, recording its events when record is
// set (newWeftEngine).
func newWeftSQLiteRecording(cfg Config, record bool) (Runner, error) {
	st, err := sqlite.Open(context.Background(), filepath.Join(cfg.Dir, "weft.db"), sqlite.Options{Key: make([]byte, 32)})
	if err != nil {
		return nil, err
	}
	return newWeftEngine(cfg, st, st.Close, record)
}

func newWeftPostgres(cfg Config) (Runner, error) { return newWeftPostgresRecording(cfg, false) }

// newWeftPostgresServed is weft-postgres-ask recording every event, as weft serve runs.
func newWeftPostgresServed(cfg Config) (Runner, error) {
	return asking(newWeftPostgresRecording(cfg, true))
}

// newWeftPostgresRecording is Weft on a schema of its own in cfg.PostgresURL's database,
// recording its events when record is set (newWeftEngine).
func newWeftPostgresRecording(cfg Config, record bool) (Runner, error) {
	if cfg.PostgresURL == "" {
		return nil, ErrNoPostgres
	}
	ctx := context.Background()
	_, dsn, drop, err := pgSchema(ctx, cfg.PostgresURL)
	if err != nil {
		return nil, err
	}
	st, err := postgres.Open(ctx, dsn, postgres.Options{Key: make([]byte, 32)})
	if err != nil {
		drop()
		return nil, err
	}
	return newWeftEngine(cfg, st, func() error { return errors.Join(st.Close(), drop()) }, record)
}

func (w *weftRunner) Close() error { return w.close() }

// Prepare deletes the previous batch's threads (so the store holds one batch, whatever the
// benchmark's length) and creates n threads holding the prior messages.
func (w *weftRunner) Prepare(ctx context.Context, n int) error {
	for _, id := range w.ids {
		if err := w.st.DeleteThread(ctx, id); err != nil {
			return err
		}
	}
	w.ids = w.ids[:0]
	for range n {
		th, err := w.eng.CreateThread(ctx, engine.NewThread{Agent: "support"})
		if err != nil {
			return err
		}
		err = w.st.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
			for i := range Prior {
				m := &weft.Message{Role: weft.RoleUser, Side: weft.SideB, Content: PriorText(i), Status: weft.MessageCompleted}
				if i%2 == 1 {
					m.Role, m.Side, m.Prompt = weft.RoleAssistant, weft.SideA, "support"
				}
				if err := tx.InsertMessage(m); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		w.ids = append(w.ids, th.ID)
	}
	return nil
}

func (w *weftRunner) Turn(ctx context.Context, i int) (string, error) {
	if w.ask {
		return w.turnAsk(ctx, i)
	}
	var answer string
	for ev, err := range w.eng.Converse(ctx, w.ids[i], engine.Input{Message: &weft.NewMessage{Content: Question}}) {
		if err != nil {
			return "", err
		}
		if d, ok := ev.Data.(engine.MessageData); ok && d.Message.Role == weft.RoleAssistant && len(d.Message.ToolCalls) == 0 {
			answer = d.Message.Content
		}
	}
	return answer, nil
}

// turnAsk runs the turn through Ask, which returns the reply.
func (w *weftRunner) turnAsk(ctx context.Context, i int) (string, error) {
	res, err := w.eng.Ask(ctx, w.ids[i], engine.Input{Message: &weft.NewMessage{Content: Question}})
	if err != nil {
		return "", err
	}
	if !res.Last().Reason.OK() {
		return "", fmt.Errorf("the run stopped with %s: %s", res.Last().Reason, res.Last().Error)
	}
	if res.Reply == nil {
		return "", errors.New("no reply")
	}
	return res.Reply.Content, nil
}

// Added counts the messages thread i gained since Prepare.
func (w *weftRunner) Added(ctx context.Context, i int) (int, error) {
	msgs, err := w.st.Messages(ctx, w.ids[i], weft.MessageQuery{})
	return len(msgs) - Prior, err
}
