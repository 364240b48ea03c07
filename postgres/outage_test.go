package postgres_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/envcrypt"
	"github.com/weft-agents/weft/internal/pgtest"
	"github.com/weft-agents/weft/postgres"
)

// TestConnectionsKilledMidRun: while the model answers after the tool ran, every connection of
// the store is terminated (pg_terminate_backend, as when the database restarts or a proxy drops
// them). The run ends with the store's error naming the cause instead of writing half of the
// step, and the thread stays running (it is not failed: a server resumes it when the database
// answers again); the thread keeps exactly what was committed; continuing once the database is
// reachable again finishes the conversation without running the (non-idempotent) tool a second
// time.
func TestConnectionsKilledMidRun(t *testing.T) {
	_, dsn := pgtest.Schema(t)
	app := "weft_outage_" + strings.TrimPrefix(t.Name(), "Test")
	ctx := context.Background()
	st, err := postgres.Open(ctx, dsn+"&application_name="+app, postgres.Options{Key: envcrypt.NewKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	killer, err := pgx.Connect(ctx, pgtest.BaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer killer.Close(ctx)

	var runs, killed atomic.Int32
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "m", Provider: "test", Model: "m"})
	reg.AddTool(weft.NewTool("charge", "Charge the card (not idempotent).",
		func(ctx context.Context, _ weft.State, _ struct{}) (weft.ToolResult, error) {
			runs.Add(1)
			return weft.Success("charged"), nil
		}))
	reg.AddPrompt(&weft.Prompt{Name: "p", ToolDescription: "Pays.", Model: "m", Prompt: weft.Text("Charge the card once, then confirm."),
		Tools: []weft.ToolEntry{{Name: "charge"}}})
	reg.AddAgent(&weft.Agent{Name: "a", SideA: weft.AgentSide{Prompt: "p"}})
	model := weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		for _, m := range req.Messages {
			if m.Role == weft.RoleTool {
				if killed.CompareAndSwap(0, 1) {
					_, err := killer.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", app)
					if err != nil {
						t.Errorf("terminate: %v", err)
					}
				}
				return &weft.Response{Text: "Charged once."}, nil
			}
		}
		return &weft.Response{ToolCalls: []weft.ToolCall{{ID: "call_1", Name: "charge", Arguments: "{}"}}}, nil
	})
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: model})
	if err != nil {
		t.Fatal(err)
	}
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "a"})
	if err != nil {
		t.Fatal(err)
	}
	res1, err := eng.Ask(ctx, th.ID, engine.Input{Message: &weft.NewMessage{Content: "Pay my order."}})
	if !st.Unavailable(err) || killed.Load() == 0 || !strings.Contains(err.Error(), "terminating connection") {
		ms, _ := st.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
		for _, m := range ms {
			t.Logf("%s %s %q", m.Role, m.Status, m.Content)
		}
		t.Fatalf("the step after the connections were killed: err %v (killed %d) %+v", err, killed.Load(), res1)
	}
	if got, _ := st.Thread(ctx, th.ID); got == nil || got.Status != weft.ThreadRunning {
		t.Fatalf("after the outage the thread is %+v, want running (resumed when the store answers, not failed)", got)
	}
	msgs, err := st.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
	if err != nil {
		t.Fatalf("reading after the outage: %v", err)
	}
	var roles []string
	for _, m := range msgs {
		if m.Status == weft.MessagePending {
			t.Errorf("a half-written (pending) %s message was left: %+v", m.Role, m)
		}
		roles = append(roles, string(m.Role))
	}
	if got := strings.Join(roles, " "); got != "user assistant tool" {
		t.Fatalf("after the failed step the thread holds %q, want the committed steps only (user assistant tool)", got)
	}

	res, err := eng.Continue(ctx, th.ID, "")
	if err != nil {
		t.Fatalf("continue after the outage: %v", err)
	}
	msgs, _ = st.Messages(ctx, th.ID, weft.MessageQuery{Limit: -1})
	if last := msgs[len(msgs)-1]; last.Role != weft.RoleAssistant || last.Content != "Charged once." || res.Last().Reason != weft.StopOnResponse {
		t.Fatalf("after continuing: last message %+v, stop %+v", last, res.Last())
	}
	if runs.Load() != 1 {
		t.Fatalf("the tool ran %d times", runs.Load())
	}
}
