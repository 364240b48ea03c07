package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/sqlite"
	"github.com/weft-agents/weft/tokens"
)

// summaryServer is windowServer with a summarizer: a summarizer request is answered with a
// summary that keeps the locker code and counts the turns folded, read from the previous summary
// and the messages it is given; a chat request asking for the code is answered from what the
// request holds. Every request, the summarizer's too, is refused past the window.
type summaryServer struct {
	windowServer
	// summaries are the summarizer's inputs (its user message), in order.
	summaries []string
	// chats are the chat requests' messages joined, in order.
	chats []string
}

var (
	lockerCode  = regexp.MustCompile(`locker code is (\d+)`)
	turnsFolded = regexp.MustCompile(`- turns folded: (\d+)`)
)

func (w *summaryServer) call(ctx context.Context, req *weft.Request, chunk func(weft.Chunk)) (*weft.Response, error) {
	if req.Prompt != weft.SummarizerPrompt {
		var all strings.Builder
		for _, m := range req.Messages {
			all.WriteString(m.Text())
			all.WriteByte('\n')
		}
		text := all.String()
		last := req.Messages[len(req.Messages)-1]
		if last.Role == weft.RoleUser && strings.Contains(last.Text(), "What is my locker code?") {
			resp, err := w.windowServer.call(ctx, req, chunk)
			if err != nil {
				return nil, err
			}
			w.chats = append(w.chats, text)
			if m := lockerCode.FindStringSubmatch(text); m != nil {
				resp.Text = "Your locker code is " + m[1] + "."
			} else {
				resp.Text = "I do not know your locker code."
			}
			return resp, nil
		}
		resp, err := w.windowServer.call(ctx, req, chunk)
		if err == nil {
			w.chats = append(w.chats, text)
		}
		return resp, err
	}
	// The summarizer: refused past the window like any request.
	n := 0
	for _, m := range req.Messages {
		n += tokens.Message(m)
	}
	if n > w.window {
		w.refused++
		return nil, &weft.ProviderError{Type: weft.ErrContextLength, Status: 400, Message: "too long"}
	}
	w.sizes = append(w.sizes, n)
	in := req.Messages[len(req.Messages)-1].Text()
	w.summaries = append(w.summaries, in)
	folded := strings.Count(in, "\n[user] ")
	if m := turnsFolded.FindStringSubmatch(in); m != nil {
		k, _ := strconv.Atoi(m[1])
		folded += k
	}
	out := fmt.Sprintf("- turns folded: %d\n", folded)
	if m := lockerCode.FindStringSubmatch(in); m != nil {
		out += "- the user's locker code is " + m[1] + "\n"
	}
	return &weft.Response{Text: out, Usage: weft.Usage{InputTokens: n, OutputTokens: 20}}, nil
}

// TestSummarizeKeepsThreadUsable: under context.strategy summarize a thread of 50 long turns
// against a model whose window is 2,000 tokens keeps working: every request fits, holds the
// turn's own message and the newest tool call with its result; what fell out is folded into a
// summary row incrementally (no summarizer input holds a message twice), so that the locker code
// given at turn 1 is answered at turn 50. The summary is a stored row: the store and the engine
// are reopened at turn 25 and the thread goes on from the stored summary, not a recomputed one.
// The summarizer's calls are log rows, counted in the thread's spend.
func TestSummarizeKeepsThreadUsable(t *testing.T) {
	const window = 2000
	srv := &summaryServer{windowServer: windowServer{t: t, window: window}}
	reg := windowRegistry(window, weft.ContextSummarize)
	m, _ := reg.Model("small")
	price := 1.0
	m.InputPrice, m.OutputPrice = &price, &price
	path := filepath.Join(t.TempDir(), "weft.db")
	ctx := context.Background()
	open := func() (weft.Store, *engine.Engine) {
		st, err := sqlite.Open(ctx, path, sqlite.Options{Key: make([]byte, 32)})
		if err != nil {
			t.Fatal(err)
		}
		eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: weft.ProviderFunc(srv.call)})
		if err != nil {
			t.Fatal(err)
		}
		return st, eng
	}
	st, eng := open()
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if err != nil {
		t.Fatal(err)
	}
	var answer string
	var before weft.Message // the newest summary row before the restart
	for i := 1; i <= 50; i++ {
		text := turnText(i)
		switch i {
		case 1:
			text = "fact1: my locker code is 4711. " + text
		case 50:
			text = "fact50: What is my locker code? " + strings.Repeat("I need it for the gym. ", 40)
		case 26:
			// A restart: the store is closed and opened again, the engine is a new one.
			sums := summaryRows(t, st, th.ID)
			if len(sums) == 0 {
				t.Fatal("no summary row after 25 turns")
			}
			before = sums[len(sums)-1]
			st.Close()
			st, eng = open()
		}
		if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Role: weft.RoleUser, Content: text}); err != nil {
			t.Fatal(err)
		}
		users, summaries, chats := len(srv.lastUser), len(srv.summaries), len(srv.chats)
		res, err := eng.Run(ctx, th.ID)
		if err != nil {
			t.Fatal(err)
		}
		if stop := res.Last(); stop.Reason != weft.StopOnResponse {
			t.Fatalf("turn %d stopped %s: %s", i, stop.Reason, stop.Error)
		}
		for _, got := range srv.lastUser[users:] {
			if got != text {
				t.Fatalf("turn %d: the request's newest user message is %.40q, want the turn's own", i, got)
			}
		}
		if i == 26 {
			// The first requests after the restart carry the stored summary, and the summarizer
			// goes on from it.
			if !strings.Contains(srv.chats[chats], before.Content) {
				t.Errorf("the first request after the restart does not carry the stored summary %q", before.Content)
			}
			for _, in := range srv.summaries[summaries:] {
				if !strings.Contains(in, "Summary so far:\n"+before.Content) {
					t.Errorf("the summarizer started over after the restart: %.200q", in)
				}
				break
			}
		}
		if i == 50 {
			rows, err := st.Messages(ctx, th.ID, weft.MessageQuery{Limit: 1, Desc: true, Roles: []weft.Role{weft.RoleAssistant}})
			if err != nil || len(rows) == 0 {
				t.Fatal(rows, err)
			}
			answer = rows[0].Content
		}
	}
	if answer != "Your locker code is 4711." {
		t.Errorf("turn 50 answered %q, want the code given at turn 1", answer)
	}
	for i, n := range srv.sizes {
		if n > window {
			t.Errorf("accepted request %d has %d tokens, past the window", i, n)
		}
	}
	if srv.refused != 0 {
		t.Errorf("%d requests refused although the window was declared", srv.refused)
	}
	sums := summaryRows(t, st, th.ID)
	if len(sums) < 2 || len(srv.summaries) != len(sums) {
		t.Fatalf("%d summary rows for %d summarizer calls", len(sums), len(srv.summaries))
	}
	// Incremental: each summarizer input held only rows not folded before.
	seen := map[string]bool{}
	for _, in := range srv.summaries {
		for _, f := range regexp.MustCompile(`\[user\] (fact\d+):`).FindAllStringSubmatch(in, -1) {
			if seen[f[1]] {
				t.Errorf("%s was folded twice", f[1])
			}
			seen[f[1]] = true
		}
	}
	t.Logf("%d summaries, %d chat requests, sizes max %d; last summary %q", len(sums), len(srv.chats), slices.Max(srv.sizes), sums[len(sums)-1].Content)
	last := sums[len(sums)-1]
	if last.Side != weft.SideA || !last.Silent || last.LogID == "" || last.Metadata["summary_prompt"] != "assistant" {
		t.Errorf("summary row: %+v", last)
	}
	logs, err := st.Logs(ctx, th.ID, weft.LogQuery{})
	if err != nil {
		t.Fatal(err)
	}
	summarizerLogs := 0
	for _, l := range logs {
		if l.Prompt == weft.SummarizerPrompt && l.CostTotal != nil {
			summarizerLogs++
		}
	}
	if summarizerLogs != len(srv.summaries) {
		t.Errorf("%d priced summarizer log rows for %d calls", summarizerLogs, len(srv.summaries))
	}
	st.Close()
}

// summaryRows returns the thread's summary rows, oldest first.
func summaryRows(t *testing.T, st weft.Store, threadID string) []weft.Message {
	t.Helper()
	rows, err := st.Messages(context.Background(), threadID, weft.MessageQuery{Limit: -1, Roles: []weft.Role{weft.RoleSystem}})
	if err != nil {
		t.Fatal(err)
	}
	var out []weft.Message
	for _, m := range rows {
		if m.Metadata["context_summary"] == true {
			out = append(out, m)
		}
	}
	return out
}

// TestRenderTellsWhatWasLeftOut: Render keeps a thread's next request inside the window as a run
// would, and says what it left out: the messages the window cut, and under summarize the summary
// that stands for the older ones.
func TestRenderTellsWhatWasLeftOut(t *testing.T) {
	const window = 2000
	for _, strategy := range []weft.ContextStrategy{weft.ContextWindow, weft.ContextSummarize, weft.ContextNone} {
		t.Run(string(strategy), func(t *testing.T) {
			srv := &summaryServer{windowServer: windowServer{t: t, window: 1 << 20}}
			st := newMemStore(t)
			eng, err := engine.New(engine.Options{Registry: windowRegistry(window, strategy), Store: st, Override: weft.ProviderFunc(srv.call)})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 12; i++ {
				if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Role: weft.RoleUser, Content: strings.TrimSuffix(turnText(i), " (look it up)")}); err != nil {
					t.Fatal(err)
				}
				if _, err := eng.Run(ctx, th.ID); err != nil {
					t.Fatal(err)
				}
			}
			out, err := eng.Render(ctx, engine.PreviewInput{Prompt: "assistant", ThreadID: th.ID})
			if err != nil {
				t.Fatal(err)
			}
			rep, msgs := out.Context, out.Request.Messages
			if last := msgs[len(msgs)-2]; last.Text() != strings.TrimSuffix(turnText(12), " (look it up)") {
				t.Errorf("the rendered request's newest user message is %.40q, want turn 12's", last.Text())
			}
			n := 0
			for _, m := range msgs {
				n += tokens.Message(m)
			}
			switch strategy {
			case weft.ContextNone:
				if rep.Omitted != 0 || len(msgs) != 1+2*12 || !strings.Contains(rep.Reason, "whole history") {
					t.Errorf("none: %d messages, %+v", len(msgs), rep)
				}
			case weft.ContextWindow:
				if rep.Omitted == 0 || n > window || !strings.Contains(rep.Reason, fmt.Sprintf("%d older messages are left out", rep.Omitted)) {
					t.Errorf("window: %d tokens, %+v", n, rep)
				}
			case weft.ContextSummarize:
				if rep.SummaryID == "" || rep.Summarized == 0 || !strings.Contains(rep.Reason, "the summary "+rep.SummaryID) {
					t.Errorf("summarize: %+v", rep)
				}
				if msgs[1].Role != weft.RoleSystem || !strings.Contains(msgs[1].Content, "turns folded") {
					t.Errorf("the summary does not follow the system text: %+v", msgs[1])
				}
				if n > window {
					t.Errorf("summarize: %d tokens past the window", n)
				}
			}
			t.Log(rep.Reason)
			if strategy != weft.ContextSummarize {
				return
			}
			// The same thread against a smaller window: messages after the summary fall out of it,
			// and the render says the step folds them first.
			small, err := engine.New(engine.Options{Registry: windowRegistry(1400, strategy), Store: st, Override: weft.ProviderFunc(srv.call)})
			if err != nil {
				t.Fatal(err)
			}
			out, err = small.Render(ctx, engine.PreviewInput{Prompt: "assistant", ThreadID: th.ID})
			if err != nil {
				t.Fatal(err)
			}
			if rep := out.Context; rep.Pending == 0 || !strings.Contains(rep.Reason, "folds them into the summary") {
				t.Errorf("a smaller window leaves rows to fold, none pending: %+v", rep)
			}
		})
	}
}

// TestSummarizerEdges: the summary row is redacted like every row, even when the summarizer
// writes a secret; the summarizer's calls count in the thread's spend; a summarizer that fails
// leaves the turn working, cut as under window, and is tried again at the next step.
func TestSummarizerEdges(t *testing.T) {
	const window, secret = 2000, "tok-5up3r-s3cr3t"
	run := func(t *testing.T, summarizer weft.ProviderFunc, turns int) (*engine.Engine, weft.Store, string, *summaryServer) {
		srv := &summaryServer{windowServer: windowServer{t: t, window: window}}
		reg := windowRegistry(window, weft.ContextSummarize)
		m, _ := reg.Model("small")
		price := 1.0
		m.InputPrice, m.OutputPrice = &price, &price
		call := func(ctx context.Context, req *weft.Request, chunk func(weft.Chunk)) (*weft.Response, error) {
			if req.Prompt == weft.SummarizerPrompt && summarizer != nil {
				return summarizer(ctx, req, chunk)
			}
			return srv.call(ctx, req, chunk)
		}
		st := newMemStore(t)
		eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: weft.ProviderFunc(call)})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant", Env: map[string]string{"TOKEN": secret}})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= turns; i++ {
			if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Role: weft.RoleUser, Content: strings.TrimSuffix(turnText(i), " (look it up)")}); err != nil {
				t.Fatal(err)
			}
			res, err := eng.Run(ctx, th.ID)
			if err != nil {
				t.Fatal(err)
			}
			if stop := res.Last(); stop.Reason != weft.StopOnResponse {
				t.Fatalf("turn %d stopped %s: %s", i, stop.Reason, stop.Error)
			}
		}
		return eng, st, th.ID, srv
	}
	ctx := context.Background()

	t.Run("redacted_and_paid_for", func(t *testing.T) {
		summaries := 0
		eng, st, id, srv := run(t, func(context.Context, *weft.Request, func(weft.Chunk)) (*weft.Response, error) {
			summaries++
			return &weft.Response{Text: "- the token is " + secret, Usage: weft.Usage{InputTokens: 100, OutputTokens: 10}}, nil
		}, 8)
		sums := summaryRows(t, st, id)
		if len(sums) == 0 || summaries != len(sums) {
			t.Fatalf("%d summary rows for %d summarizer calls", len(sums), summaries)
		}
		for _, s := range sums {
			if strings.Contains(s.Content, secret) || !strings.Contains(s.Content, weft.Redacted) {
				t.Errorf("summary row not redacted: %q", s.Content)
			}
		}
		sp, err := eng.Spend(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if chats := len(srv.sizes); sp.Calls != chats+summaries || sp.UnknownCostCalls != 0 {
			t.Errorf("spend counts %d calls (%d unpriced), want %d chat and %d summarizer calls", sp.Calls, sp.UnknownCostCalls, chats, summaries)
		}
	})

	t.Run("summarizer_fails", func(t *testing.T) {
		calls := 0
		_, st, id, srv := run(t, func(context.Context, *weft.Request, func(weft.Chunk)) (*weft.Response, error) {
			calls++
			return nil, &weft.ProviderError{Type: weft.ErrInvalidRequest, Status: 400, Message: "summaries are off today"}
		}, 8)
		if n := len(summaryRows(t, st, id)); n != 0 {
			t.Errorf("%d summary rows from a failing summarizer", n)
		}
		if calls < 2 {
			t.Errorf("the summarizer was called %d times: a failed fold is tried again at the next step", calls)
		}
		for i, n := range srv.sizes {
			if n > window {
				t.Errorf("request %d has %d tokens: a failed fold must still cut the request", i, n)
			}
		}
		logs, err := st.Logs(ctx, id, weft.LogQuery{})
		if err != nil {
			t.Fatal(err)
		}
		failed := 0
		for _, l := range logs {
			if l.Prompt == weft.SummarizerPrompt && strings.Contains(l.Error, "summaries are off today") {
				failed++
			}
		}
		if failed != calls {
			t.Errorf("%d failed summarizer log rows for %d calls", failed, calls)
		}
	})
}

// TestSummarizeWithinTurn: a turn that runs ten tool calls with long results outgrows the window
// by itself: what follows the question is folded as it falls out, the question stays in every
// request, every request fits and holds the newest call with its result, no result is folded
// twice, and the next turn goes on from the summary.
func TestSummarizeWithinTurn(t *testing.T) {
	const window, pages = 2000, 10
	reg := weft.NewRegistry()
	reg.AddModel(&weft.Model{Name: "small", Provider: "test", Model: "scripted",
		Capabilities: weft.Capabilities{MaxContextTokens: window, MaxOutputTokens: 200}})
	reg.AddTool(&weft.Tool{Name: "fetch", Description: "Fetches a page.",
		Execute: weft.ToolFunc(func(_ context.Context, _ weft.State, args json.RawMessage) (weft.ToolResult, error) {
			var a struct{ Page int }
			_ = json.Unmarshal(args, &a)
			return weft.Success(fmt.Sprintf("page%d-result: ", a.Page) + strings.Repeat("lorem ipsum dolor sit amet ", 45)), nil
		})})
	reg.AddPrompt(&weft.Prompt{Name: "assistant", ToolDescription: "Reads.", Model: "small", Prompt: weft.Text("You read pages."),
		IncludeChat: true, IncludePastTools: true, Tools: []weft.ToolEntry{{Name: "fetch"}},
		Context: &weft.ContextPolicy{Strategy: weft.ContextSummarize}})
	reg.AddAgent(&weft.Agent{Name: "assistant", SideA: weft.AgentSide{Prompt: "assistant", MaxSteps: 50}})
	var summaries []string
	fetched, page := 0, 0 // this turn's calls, all turns' calls
	question := ""
	provider := func(_ context.Context, req *weft.Request, _ func(weft.Chunk)) (*weft.Response, error) {
		n := tokens.Tools(req.Tools)
		for _, m := range req.Messages {
			n += tokens.Message(m)
		}
		if n > window {
			t.Errorf("a %s request of %d tokens, past the window", req.Prompt, n)
		}
		if req.Prompt == weft.SummarizerPrompt {
			in := req.Messages[len(req.Messages)-1].Text()
			summaries = append(summaries, in)
			return &weft.Response{Text: strings.Join(regexp.MustCompile(`page\d+-result`).FindAllString(in, -1), ", ")}, nil
		}
		holds := false
		for _, m := range req.Messages {
			holds = holds || (m.Role == weft.RoleUser && m.Text() == question)
		}
		if !holds {
			t.Errorf("a request without the turn's question %q", question)
		}
		last := req.Messages[len(req.Messages)-1]
		if last.Role == weft.RoleTool {
			if prev := req.Messages[len(req.Messages)-2]; len(prev.ToolCalls) != 1 || prev.ToolCalls[0].ID != last.ToolCallID {
				t.Errorf("a tool result without its call")
			}
		}
		if fetched < pages {
			fetched++
			page++
			return &weft.Response{ToolCalls: []weft.ToolCall{{ID: fmt.Sprintf("call_%d", page), Name: "fetch", Arguments: fmt.Sprintf(`{"page":%d}`, page)}}}, nil
		}
		return &weft.Response{Text: "I read them all."}, nil
	}
	st := newMemStore(t)
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: weft.ProviderFunc(provider)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if err != nil {
		t.Fatal(err)
	}
	for turn, q := range []string{"Read all ten pages, please.", "Now read ten more."} {
		question = q
		fetched = 0
		if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Role: weft.RoleUser, Content: q}); err != nil {
			t.Fatal(err)
		}
		res, err := eng.Run(ctx, th.ID)
		if err != nil {
			t.Fatal(err)
		}
		if stop := res.Last(); stop.Reason != weft.StopOnResponse {
			t.Fatalf("turn %d stopped %s: %s", turn+1, stop.Reason, stop.Error)
		}
		if turn == 0 && len(summaries) == 0 {
			t.Fatal("ten long results in one turn were never folded")
		}
	}
	seen := map[string]int{}
	asked := 0
	for _, in := range summaries {
		_, folded, _ := strings.Cut(in, "Messages that left the window")
		for _, r := range regexp.MustCompile(`\[tool fetch result\] (page\d+)-result`).FindAllStringSubmatch(folded, -1) {
			seen[r[1]]++
		}
		asked += strings.Count(folded, "[user] Read all ten pages, please.")
	}
	for page, n := range seen {
		if n > 1 {
			t.Errorf("%s folded %d times", page, n)
		}
	}
	if asked > 1 {
		t.Errorf("the first question was folded %d times", asked)
	}
	if len(seen) < 2*pages-5 {
		t.Errorf("%d of %d results folded: what fell out of the window was dropped instead", len(seen), 2*pages)
	}
	kept := 0
	for _, r := range summaryRows(t, st, th.ID) {
		if r.Metadata["summary_kept_id"] != nil {
			kept++
		}
	}
	if kept == 0 {
		t.Error("no summary row keeps its turn's question")
	}
	t.Logf("%d summarizer calls, %d of the summaries keep their turn's question; pages folded: %v", len(summaries), kept, seen)
}

// TestSummarizeLearnsWindow: under summarize with a model that declares no window, the first
// refusal teaches the run how long a request may be; from then on what falls out is folded ahead
// of time, few requests are refused, and the code given at turn 1 is answered at turn 30.
func TestSummarizeLearnsWindow(t *testing.T) {
	const window = 2000
	srv := &summaryServer{windowServer: windowServer{t: t, window: window}}
	reg := windowRegistry(window, weft.ContextSummarize)
	m, _ := reg.Model("small")
	m.Capabilities.MaxContextTokens = 0
	eng, err := engine.New(engine.Options{Registry: reg, Store: newMemStore(t), Override: weft.ProviderFunc(srv.call)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: "assistant"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 30; i++ {
		text := strings.TrimSuffix(turnText(i), " (look it up)")
		switch i {
		case 1:
			text = "fact1: my locker code is 4711. " + text
		case 30:
			text = "fact30: What is my locker code? " + strings.Repeat("I need it for the gym. ", 40)
		}
		if _, err := eng.Send(ctx, th.ID, weft.NewMessage{Role: weft.RoleUser, Content: text}); err != nil {
			t.Fatal(err)
		}
		res, err := eng.Run(ctx, th.ID)
		if err != nil {
			t.Fatal(err)
		}
		if stop := res.Last(); stop.Reason != weft.StopOnResponse {
			t.Fatalf("turn %d stopped %s: %s", i, stop.Reason, stop.Error)
		}
	}
	if len(srv.summaries) == 0 {
		t.Fatal("nothing was folded")
	}
	if srv.refused == 0 || srv.refused > 3 {
		t.Errorf("%d refusals: want the first to teach the window, and few after it", srv.refused)
	}
	if !strings.Contains(srv.chats[len(srv.chats)-1], "locker code is 4711") {
		t.Error("the last request does not carry the code given at turn 1")
	}
}
