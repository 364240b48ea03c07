package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// The invariants every run keeps, checked centrally over generated runs, after a clean run and
// after a crash at every commit point followed by recovery:
//
//   - every message row change (insert, update, delete) is committed with exactly one event for
//     it, in the same transaction, so the log has one event per change, in order, without gaps;
//   - no row, call record, run-state document, event, log body or model request holds a secret,
//     raw or in any encoding (JSON-escaped, \u-escaped, percent-encoded, in JSON nested in text);
//   - no non-idempotent tool (the stop tool included) runs twice for one call.

// ledger is what committed transactions wrote, in commit order.
type ledger struct {
	mu      sync.Mutex
	commits []txWrites
}

// txWrites is one committed transaction's writes.
type txWrites struct {
	thread  string
	changes []string // "m:ID" for an inserted or updated message, "d:ID" for a deleted one
	events  []weft.EventRecord
	texts   []string // every row, record, run-state document and log body written, as JSON
}

// auditTx records what a transaction attempt writes.
type auditTx struct {
	weft.Tx
	w *txWrites
}

func (a *auditTx) text(v any) {
	b, _ := json.Marshal(v)
	a.w.texts = append(a.w.texts, string(b))
}

func (a *auditTx) InsertMessage(m *weft.Message) error {
	if err := a.Tx.InsertMessage(m); err != nil {
		return err
	}
	a.w.changes = append(a.w.changes, "m:"+m.ID)
	a.text(m)
	return nil
}

func (a *auditTx) UpdateMessage(id string, c weft.MessageChange) error {
	if err := a.Tx.UpdateMessage(id, c); err != nil {
		return err
	}
	a.w.changes = append(a.w.changes, "m:"+id)
	a.text(c)
	return nil
}

func (a *auditTx) DeleteMessage(id string) error {
	if err := a.Tx.DeleteMessage(id); err != nil {
		return err
	}
	a.w.changes = append(a.w.changes, "d:"+id)
	return nil
}

func (a *auditTx) PutToolCall(c *weft.ToolCallRecord) error {
	a.text(c)
	return a.Tx.PutToolCall(c)
}

func (a *auditTx) PutLog(l *weft.LogEntry) error {
	a.w.texts = append(a.w.texts, string(l.RequestBody), string(l.ResponseBody), l.Error)
	return a.Tx.PutLog(l)
}

func (a *auditTx) SetExecState(key string, v json.RawMessage) error {
	a.w.texts = append(a.w.texts, string(v))
	return a.Tx.SetExecState(key, v)
}

func (a *auditTx) AppendEvents(evs []weft.EventRecord) error {
	if err := a.Tx.AppendEvents(evs); err != nil {
		return err
	}
	a.w.events = append(a.w.events, evs...)
	return nil
}

// auditStore keeps a ledger of committed transactions and, when after > 0, dies after that many
// fenced commits as crashStore does (every later fenced write fails; the lease is not released).
type auditStore struct {
	weft.Store
	led   *ledger
	after int
	mu    sync.Mutex
	n     int
}

func (s *auditStore) dead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.after > 0 && s.n >= s.after
}

func (s *auditStore) Tx(ctx context.Context, id string, f *weft.Fence, fn func(weft.Tx) error) error {
	if f != nil && s.dead() {
		return errCrashed
	}
	var w *txWrites
	err := s.Store.Tx(ctx, id, f, func(tx weft.Tx) error {
		w = &txWrites{thread: id} // a store may run the function again: keep the last attempt
		return fn(&auditTx{Tx: tx, w: w})
	})
	if err != nil {
		return err
	}
	s.led.mu.Lock()
	s.led.commits = append(s.led.commits, *w)
	s.led.mu.Unlock()
	if f != nil {
		s.mu.Lock()
		s.n++
		s.mu.Unlock()
	}
	return nil
}

func (s *auditStore) RenewLease(ctx context.Context, f weft.Fence, ttl time.Duration) error {
	if s.dead() {
		return errCrashed
	}
	return s.Store.RenewLease(ctx, f, ttl)
}

func (s *auditStore) ReleaseLease(ctx context.Context, f weft.Fence) error {
	if s.dead() {
		return errCrashed
	}
	return s.Store.ReleaseLease(ctx, f)
}

// scenario is a generated conversation: the main agent's model plays steps in order (a step is
// the tool calls of one answer; the last is the final answer: text, the stop tool, or a handoff).
type scenario struct {
	secret string
	steps  [][]string // tool names per step; the last step's single entry may be "finish" or "billing"
	final  string     // "text", "finish" (stop tool) or "billing" (handoff)
}

// secretAlphabet has the characters secrets must survive: quote, backslash, non-ASCII, digits.
var secretParts = []string{`"`, `\`, "é", "ß", "7", "42", "x", "tok", "€", "-"}

func genScenario(seed uint64) scenario {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var sec strings.Builder
	sec.WriteString("S3")
	for _, i := range r.Perm(len(secretParts))[:6] {
		sec.WriteString(secretParts[i])
	}
	sec.WriteString(strconv.Itoa(100 + r.IntN(900)))
	tools := []string{"charge", "echo", "inject", "scratch", "risky", "summarize", "review"}
	sc := scenario{secret: sec.String()}
	for range 1 + r.IntN(3) {
		var step []string
		for range 1 + r.IntN(2) {
			step = append(step, tools[r.IntN(len(tools))])
		}
		sc.steps = append(sc.steps, step)
	}
	sc.final = []string{"text", "finish", "billing"}[r.IntN(3)]
	return sc
}

// world is the tools' and models' shared record of what ran.
type world struct {
	sc   scenario
	mu   sync.Mutex
	runs map[string]int // tool:callID → runs of a non-idempotent tool
	reqs []string       // every model request as the provider got it
}

func (w *world) ran(name string, st weft.State) {
	w.mu.Lock()
	defer w.mu.Unlock()
	id := "?"
	if c := st.Execution().ToolCall(); c != nil {
		id = c.ID
	}
	w.runs[name+":"+id]++
}

func (w *world) registry() *weft.Registry {
	sec := w.sc.secret
	tool := func(name string, fn func(ctx context.Context, st weft.State) (weft.ToolResult, error)) *weft.Tool {
		return &weft.Tool{Name: name, Description: "Tool " + name + ".", Execute: weft.ToolFunc(func(ctx context.Context, st weft.State, _ json.RawMessage) (weft.ToolResult, error) {
			w.ran(name, st)
			return fn(ctx, st)
		})}
	}
	ok := func(text string) func(context.Context, weft.State) (weft.ToolResult, error) {
		return func(context.Context, weft.State) (weft.ToolResult, error) { return weft.Success(text), nil }
	}
	risky := tool("risky", ok("risky done"))
	risky.Approval = weft.ApprovalRequired
	tools := []*weft.Tool{
		tool("charge", ok("charged")),
		tool("echo", ok("your token is "+sec)),
		tool("inject", func(ctx context.Context, st weft.State) (weft.ToolResult, error) {
			// State writes from a goroutine of the tool's own: a row injected, then changed.
			errc := make(chan error, 1)
			go func() {
				m, err := st.InjectMessage(ctx, weft.NewMessage{Role: weft.RoleAssistant, Content: "Noting " + sec + " for later."})
				if err == nil {
					_, err = st.UpdateMessage(ctx, m.ID, weft.MessageUpdate{Content: ptr("Noted " + sec + "."),
						Metadata: map[string]any{"note": sec}})
				}
				errc <- err
			}()
			if err := <-errc; err != nil {
				return weft.ToolResult{}, err
			}
			return weft.Success("injected"), nil
		}),
		tool("scratch", func(ctx context.Context, st weft.State) (weft.ToolResult, error) {
			// A row injected and deleted from the tool's goroutine.
			errc := make(chan error, 1)
			go func() {
				m, err := st.InjectMessage(ctx, weft.NewMessage{Role: weft.RoleAssistant, Content: "Scratch " + sec})
				if err == nil {
					err = st.DeleteMessage(ctx, m.ID)
				}
				errc <- err
			}()
			if err := <-errc; err != nil {
				return weft.ToolResult{}, err
			}
			return weft.Success("scratched"), nil
		}),
		risky,
		tool("finish", ok("finished with "+sec)),
	}
	reg := registry(tools, func(p *weft.Prompt) {
		p.Tools = append(p.Tools, weft.ToolEntry{Name: "summarize", Kind: weft.EntryPrompt}, weft.ToolEntry{Name: "billing", Kind: weft.EntryAgent},
			weft.ToolEntry{Name: "review", Kind: weft.EntryAgent})
	})
	a, _ := reg.Agent("assistant")
	a.SideA.StopTool = "finish"
	reg.AddPrompt(&weft.Prompt{Name: "summarize", ToolDescription: "Summarizes.", Model: "fast", Prompt: weft.Text("You summarize.")})
	reg.AddPrompt(&weft.Prompt{Name: "billing", ToolDescription: "Billing.", Model: "fast", Prompt: weft.Text("You handle billing.")})
	reg.AddAgent(&weft.Agent{Name: "billing", ExposeAsTool: true, ToolDescription: "Hand over to billing.", SideA: weft.AgentSide{Prompt: "billing"}})
	// A subagent: a child thread of two AI sides, whose reviewer ends the session at once.
	reg.AddTool(tool("approve", ok("approved")))
	reg.AddPrompt(&weft.Prompt{Name: "reviewer", ToolDescription: "Reviews.", Model: "fast", IncludeChat: true, Prompt: weft.Text("You review."),
		Tools: []weft.ToolEntry{{Name: "approve"}}})
	reg.AddPrompt(&weft.Prompt{Name: "author", ToolDescription: "Writes.", Model: "fast", IncludeChat: true, Prompt: weft.Text("You write.")})
	reg.AddAgent(&weft.Agent{Name: "review", Type: weft.DualAI, MaxSessionTurns: 3, ExposeAsTool: true, ToolDescription: "Review a draft.",
		SideA: weft.AgentSide{Prompt: "reviewer", SessionStop: &weft.SessionTool{Name: "approve", MessageProperty: "summary"}},
		SideB: &weft.AgentSide{Prompt: "author"}})
	return reg
}

// model answers from the history it gets: the main prompt plays the scenario's next step (by the
// answers it has given so far); the sub-prompt and billing answer with text. Every answer and
// every call's arguments carry the secret, JSON-escaped by the encoder.
func (w *world) model() weft.Provider {
	return weft.ProviderFunc(func(ctx context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		w.mu.Lock()
		w.reqs = append(w.reqs, string(req.TraceJSON()))
		w.mu.Unlock()
		sec := w.sc.secret
		if req.Prompt == "reviewer" {
			b, _ := json.Marshal(map[string]string{"summary": "Fine; keep " + sec})
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: fmt.Sprint("r", len(req.Messages)), Name: "approve", Arguments: string(b)}}}, nil
		}
		if req.Prompt != "assistant" {
			return &weft.Response{Text: req.Prompt + " says: keep " + sec + " safe."}, nil
		}
		step := 0
		for _, m := range req.Messages {
			if m.Role == weft.RoleAssistant && len(m.ToolCalls) > 0 {
				step++
			}
		}
		args := func(extra string) string {
			b, _ := json.Marshal(map[string]string{"note": "use " + sec, "message": extra + " " + sec})
			return string(b)
		}
		call := func(name string, i int) weft.ToolCall {
			return weft.ToolCall{ID: fmt.Sprintf("s%dc%d", step, i), Name: name, Arguments: args(name)}
		}
		if step < len(w.sc.steps) {
			var calls []weft.ToolCall
			for i, name := range w.sc.steps[step] {
				calls = append(calls, call(name, i))
			}
			return &weft.Response{Text: "Working on " + sec, ToolCalls: calls}, nil
		}
		switch w.sc.final {
		case "finish", "billing":
			if step == len(w.sc.steps) {
				return &weft.Response{ToolCalls: []weft.ToolCall{call(w.sc.final, 0)}}, nil
			}
		}
		return &weft.Response{Text: "All done; your token " + sec + " is safe."}, nil
	})
}

// drive runs the thread to its end: it approves what awaits approval and continues, until the
// thread waits for the human side.
func drive(ctx context.Context, eng *engine.Engine, st weft.Store, threadID string) error {
	for range 20 {
		th, err := st.Thread(ctx, threadID)
		if err != nil {
			return err
		}
		pending, err := eng.PendingApprovals(ctx, threadID)
		if err != nil {
			return err
		}
		q, err := st.Queued(ctx, threadID)
		if err != nil {
			return err
		}
		if len(pending) == 0 && len(q) == 0 && th.Status != weft.ThreadRunning {
			return nil
		}
		for _, p := range pending {
			if _, err := eng.Decide(ctx, threadID, p.CallID, engine.Decision{Approve: true}); err != nil && weft.ErrorCode(err) != weft.EConflict {
				return err
			}
		}
		if _, err := eng.Ask(ctx, threadID, engine.Input{}); err != nil {
			return err
		}
	}
	return fmt.Errorf("thread %s did not settle", threadID)
}

// check verifies the invariants over what the ledger and the store hold for the thread (and its
// child threads); after a clean run, also that every call of the scenario succeeded.
func check(t *testing.T, w *world, led *ledger, st weft.Store, root string, clean bool) {
	t.Helper()
	ctx := context.Background()
	led.mu.Lock()
	defer led.mu.Unlock()
	threads := map[string]bool{}
	for i, c := range led.commits {
		threads[c.thread] = true
		var evented []string
		for _, ev := range c.events {
			switch ev.Type {
			case "message":
				p, err := engine.DecodePayload(ev.Type, ev.Data)
				if err != nil {
					t.Fatal(err)
				}
				evented = append(evented, "m:"+p.(engine.MessageData).Message.ID)
			case "message_deleted":
				var d struct {
					ID string `json:"message_id"`
				}
				_ = json.Unmarshal(ev.Data, &d)
				evented = append(evented, "d:"+d.ID)
			}
		}
		changes := slices.Clone(c.changes)
		slices.Sort(changes)
		slices.Sort(evented)
		if !slices.Equal(changes, evented) {
			t.Errorf("commit %d on %s: row changes %v, their events %v", i+1, c.thread, c.changes, evented)
		}
		for _, s := range c.texts {
			if holdsSecret(s, w.sc.secret) {
				t.Errorf("commit %d on %s wrote the secret: %.300s", i+1, c.thread, s)
			}
		}
		for _, ev := range c.events {
			if holdsSecret(string(ev.Data), w.sc.secret) {
				t.Errorf("commit %d on %s: event %s holds the secret: %.300s", i+1, c.thread, ev.Type, ev.Data)
			}
		}
	}
	for id := range threads {
		recs, err := st.Events(ctx, id, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		for i, rec := range recs {
			if rec.Seq != int64(i+1) {
				t.Errorf("thread %s: event %d has seq %d", id, i+1, rec.Seq)
				break
			}
		}
		msgs, _ := st.Messages(ctx, id, weft.MessageQuery{Limit: -1})
		last := map[string]weft.Message{}
		for id, rows := range messageRows(t, recs) {
			last[id] = rows[len(rows)-1]
		}
		for _, m := range msgs {
			ev, ok := last[m.ID]
			if !ok || ev.Content != m.Content || ev.Status != m.Status {
				t.Errorf("thread %s: message %d (%s) is %q/%s, its last event has %q/%s", id, m.Seq, m.Role, m.Content, m.Status, ev.Content, ev.Status)
			}
		}
	}
	for _, r := range w.reqs {
		if holdsSecret(r, w.sc.secret) {
			t.Errorf("a model request holds the secret: %.300s", r)
		}
	}
	w.mu.Lock()
	for call, n := range w.runs {
		if n > 1 && !strings.HasPrefix(call, "echo:") { // every scenario tool is non-idempotent
			t.Errorf("tool call %s ran %d times", call, n)
		}
	}
	w.mu.Unlock()
	if th, err := st.Thread(ctx, root); err != nil || th.Status == weft.ThreadRunning {
		t.Errorf("root thread after the run: %+v %v", th, err)
	}
	if !clean {
		return // a call a crash interrupted may have ended in error (a non-idempotent tool is not run again)
	}
	// Every call of the scenario ran and succeeded: the subagent's and the sub-prompt's results
	// came back (redacted) from their child runs.
	rows, _ := st.Messages(ctx, root, weft.MessageQuery{Limit: -1})
	results := map[string]string{}
	for _, m := range rows {
		if m.Role == weft.RoleTool && m.ToolStatus == weft.ToolSuccess {
			results[m.Name] = m.Content
		}
	}
	want := map[string]string{"review": "Fine; keep [redacted]", "summarize": "summarize says: keep [redacted] safe.", "echo": "your token is [redacted]"}
	for _, step := range w.sc.steps {
		for _, name := range step {
			if got, ok := results[name]; !ok || want[name] != "" && !strings.Contains(got, want[name]) {
				t.Errorf("the %s call's result: %q (ran: %v)", name, got, ok)
			}
		}
	}
}

// runScenario runs the scenario in a process that dies after `after` fenced commits (never when
// 0), recovers it in a second process, drives it to its end, and checks the invariants. It
// returns how many fenced commits the first process made.
func runScenario(t *testing.T, sc scenario, after int) int {
	t.Helper()
	ctx := context.Background()
	w := &world{sc: sc, runs: map[string]int{}}
	reg := w.registry()
	mem, clock := newDeathStore()
	led := &ledger{}
	first := &auditStore{Store: mem, led: led, after: after}
	// The model is a provider, not a script (Override): it gets each request as a provider does,
	// after the last-line redaction pass.
	provider := func(*weft.Model) (weft.Provider, error) { return w.model(), nil }
	eng, err := engine.New(engine.Options{Registry: reg, Store: first, Providers: provider, RecordEvents: true, LeaseTTL: deadTTL})
	if err != nil {
		t.Fatal(err)
	}
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant", Env: map[string]string{"SECRET_TOKEN": sc.secret}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Content: "My token is " + sc.secret + "; go."}); err != nil {
		t.Fatal(err)
	}
	derr := drive(ctx, eng, first, th.ID)
	if after == 0 {
		if derr != nil {
			t.Fatal(derr)
		}
		check(t, w, led, mem, th.ID, true)
		return first.n
	}
	// The first process is dead: a second one recovers what it left and finishes the thread.
	clock.expire()
	second := &auditStore{Store: mem, led: led}
	eng2, err := engine.New(engine.Options{Registry: reg, Store: second, Providers: provider, RecordEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng2.RecoverAll(ctx); err != nil {
		t.Fatal(err)
	}
	eng2.Wait()
	if err := drive(ctx, eng2, second, th.ID); err != nil {
		t.Fatal(err)
	}
	check(t, w, led, mem, th.ID, false)
	return first.n
}

// invariantSeeds is how many generated scenarios TestRunInvariants plays (WEFT_INVARIANT_SEEDS
// overrides it for a longer search).
func invariantSeeds() int {
	if n, err := strconv.Atoi(os.Getenv("WEFT_INVARIANT_SEEDS")); err == nil && n > 0 {
		return n
	}
	if testing.Short() {
		return 4
	}
	return 12
}

// TestRunInvariants plays generated scenarios (tools, a stop tool, State writes from a tool's
// goroutine, a sub-prompt, a handoff, approvals, a secret holding `"`, `\`, non-ASCII and digits)
// cleanly and with a crash after every commit the clean run made, and checks the invariants above
// after each.
func TestRunInvariants(t *testing.T) {
	for seed := range uint64(invariantSeeds()) {
		sc := genScenario(seed)
		t.Run(fmt.Sprintf("seed_%d", seed), func(t *testing.T) {
			commits := runScenario(t, sc, 0)
			if t.Failed() {
				t.Fatalf("scenario %+v failed its clean run", sc)
			}
			for after := 1; after <= commits; after++ {
				t.Run(fmt.Sprint("crash_after_", after), func(t *testing.T) {
					runScenario(t, sc, after)
					if t.Failed() {
						t.Logf("scenario %+v", sc)
					}
				})
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
