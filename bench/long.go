package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/sqlite"
)

// A long conversation on SQLite: one thread, turn after turn (a user message, a model answer),
// through Engine.Ask, with a fake model that reports its request body as every provider does —
// the JSON of every message so far — so that each call's log carries the conversation. The body
// is built incrementally (each message marshalled once, the body copied once a call): a provider
// builds it in any framework, and this keeps that cost small in the figure.

// LongRow is one window of a long conversation's turns.
type LongRow struct {
	Turns       int           // turns so far
	PerTurn     time.Duration // mean time of the window's turns
	RequestSize int           // bytes of the last request body
	LogGrowth   int64         // bytes the logs table's rows grew by a turn over the window
	LogBytes    int64         // bytes the logs table's rows hold at the end of the window
}

// longModel answers every message; it reports the request body as described above.
type longModel struct {
	msgs []byte // the messages' JSON so far, comma-separated
	n    int    // messages in msgs
}

func (m *longModel) call(_ context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
	if len(req.Messages) < m.n {
		return nil, fmt.Errorf("long model: %d messages after %d", len(req.Messages), m.n)
	}
	for _, lm := range req.Messages[m.n:] {
		b, err := json.Marshal(lm)
		if err != nil {
			return nil, err
		}
		if m.n > 0 {
			m.msgs = append(m.msgs, ',')
		}
		m.msgs = append(m.msgs, b...)
		m.n++
	}
	body := make([]byte, 0, len(m.msgs)+64)
	body = append(body, `{"model":"fake","messages":[`...)
	body = append(append(body, m.msgs...), `],"stream":true}`...)
	return &weft.Response{Text: "Noted: " + strings.Repeat("answer ", 25), FinishReason: "stop",
		RequestBody: body, ResponseBody: []byte(`{"choices":[{"finish_reason":"stop"}]}`),
		Usage: weft.Usage{InputTokens: len(body) / 4, OutputTokens: 50}}, nil
}

// LongThread runs turns turns of one conversation on a SQLite file in dir and reports every
// window turns; at each it reads the last log back and checks its request body is the one the
// model reported.
func LongThread(ctx context.Context, dir string, turns, window int) ([]LongRow, error) {
	path := filepath.Join(dir, "long.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{Key: make([]byte, 32)})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "fake", Provider: "fake", Model: "fake"})
	reg.AddPrompt(&weft.Prompt{Name: "chat", Model: "fake", IncludeChat: true, Prompt: weft.Text(System)})
	reg.AddAgent(&weft.Agent{Name: "chat", SideA: weft.AgentSide{Prompt: "chat"}})
	model := &longModel{}
	var last []byte // the last request body the model reported
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: weft.ProviderFunc(
		func(ctx context.Context, req *weft.Request, chunk func(weft.Chunk)) (*weft.Response, error) {
			resp, err := model.call(ctx, req, chunk)
			if err == nil {
				last = resp.RequestBody
			}
			return resp, err
		})})
	if err != nil {
		return nil, err
	}
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "chat"})
	if err != nil {
		return nil, err
	}
	var rows []LongRow
	var spent time.Duration
	var before int64
	for i := 1; i <= turns; i++ {
		msg := &weft.NewMessage{Role: weft.RoleUser, Content: fmt.Sprintf("Question %d: %s", i, strings.Repeat("words ", 30))}
		start := time.Now()
		if _, err := eng.Ask(ctx, th.ID, engine.Input{Message: msg}); err != nil {
			return nil, fmt.Errorf("turn %d: %w", i, err)
		}
		spent += time.Since(start)
		if i%window != 0 {
			continue
		}
		logs, err := st.Logs(ctx, th.ID, weft.LogQuery{})
		if err != nil || len(logs) != i {
			return nil, fmt.Errorf("turn %d: %d logs, %v", i, len(logs), err)
		}
		l, err := st.Log(ctx, th.ID, logs[i-1].ID)
		if err != nil || string(l.RequestBody) != string(last) {
			return nil, fmt.Errorf("turn %d: the last log's request body reads %d bytes, the model reported %d (%v)", i, len(l.RequestBody), len(last), err)
		}
		logBytes, err := logsBytes(path)
		if err != nil {
			return nil, err
		}
		rows = append(rows, LongRow{Turns: i, PerTurn: spent / time.Duration(window), RequestSize: len(last),
			LogGrowth: (logBytes - before) / int64(window), LogBytes: logBytes})
		spent, before = 0, logBytes
	}
	return rows, nil
}

// logsBytes is what the logs table's rows hold (docs and bodies), read on a connection of its own.
func logsBytes(path string) (int64, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int64
	err = db.QueryRow(`SELECT COALESCE(sum(length(doc) + length(request_body) + length(response_body)), 0) FROM logs`).Scan(&n)
	return n, err
}
