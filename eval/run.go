package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/scripted"
)

// Thread tags and properties an eval run leaves, so that `weft inspect` and `weft threads` find
// a case's thread and its verdicts.
const (
	// TagCase marks every case thread; TagCase+":"+run id marks those of one eval run.
	TagCase = "eval"
	// KVVerdict is the case thread's KV key holding its CaseRun (verdicts, outcomes).
	KVVerdict = "eval.verdict"
)

// Runner runs eval files. Each case run is a thread of the store, run by an engine of its own
// built from Options, so that its model calls can be scripted, recorded or replayed apart from
// the other cases'.
type Runner struct {
	// Options are the engines' options: Registry, Store, Providers, MCP, Logger. An Override
	// answers every model call of every case (a shared model script: cases then run one at a
	// time, in file order, whatever the file's concurrency).
	Options engine.Options
	// LookupEnv reads provider keys for judges' calls; nil = os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Record, when set, keeps every model response (case and judge calls).
	Record *Recording
	// Replay, when set, answers every model call from it: no provider is called.
	Replay *Recording
	// Model names the model that replaced every prompt's own (UseModel, which the caller applies
	// to the registry before any engine runs); the report records it.
	Model string
	// Timeout bounds each turn (default 10 minutes).
	Timeout time.Duration
	// OnRun is told of each finished case run (progress); called from one goroutine at a time.
	OnRun func(done, total int, r *CaseRun)
}

// Run runs every case of f Repeat times and returns the report. The error is for what stops
// the whole eval (an unknown agent, a failing store); a case that fails is a verdict.
func (rn *Runner) Run(ctx context.Context, f *File) (*Report, error) {
	reg := rn.Options.Registry
	if _, ok := reg.Agent(f.Agent); !ok {
		return nil, &FileError{File: f.Path, Problems: []Problem{{Field: "agent", Rule: fmt.Sprintf("no agent named %q in the project", f.Agent)}}}
	}
	judges := map[string]*judge{}
	for ci, c := range f.Cases {
		for ti, t := range c.Turns {
			for xi, x := range t.Expect {
				if x.Judge == nil || judges[x.Judge.Prompt] != nil {
					continue
				}
				j, err := loadJudge(x.Judge.Prompt)
				if err != nil {
					return nil, &FileError{File: f.Path, Problems: []Problem{{Field: fmt.Sprintf("cases[%d].turns[%d].expect[%d].judge.prompt", ci, ti, xi), Rule: err.Error()}}}
				}
				judges[x.Judge.Prompt] = j
			}
		}
	}
	clock := rn.Options.Clock
	if clock == nil {
		clock = weft.SystemClock{}
	}
	rep := &Report{ID: weft.NewID("evr_"), Name: f.Name, File: f.Path, Agent: f.Agent, Model: rn.Model, Repeat: f.Repeat,
		StartedAt: clock.Now().UTC()}
	total := len(f.Cases) * f.Repeat
	runs := make([][]CaseRun, len(f.Cases))
	for i := range runs {
		runs[i] = make([]CaseRun, f.Repeat)
	}
	conc := f.Concurrency
	if rn.Options.Override != nil {
		conc = 1
	}
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	var fatal error
	for ci := range f.Cases {
		for k := range f.Repeat {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				cr, err := rn.runCase(ctx, f, &f.Cases[ci], k, rep.ID, judges)
				mu.Lock()
				defer mu.Unlock()
				if err != nil && fatal == nil {
					fatal = err
				}
				runs[ci][k] = cr
				done++
				if rn.OnRun != nil {
					rn.OnRun(done, total, &runs[ci][k])
				}
			}()
		}
	}
	wg.Wait()
	if fatal != nil {
		return nil, fatal
	}
	for ci, c := range f.Cases {
		rep.Cases = append(rep.Cases, summarize(c.Name, runs[ci], f.MinPasses))
	}
	rep.FinishedAt = clock.Now().UTC()
	rep.total()
	return rep, nil
}

// runKey names one case run in recordings.
func runKey(f *File, c *Case, k int) string { return fmt.Sprintf("%s/%s#%d", f.Name, c.Name, k+1) }

// caseModels is where one case run's model calls go.
type caseModels struct {
	opt    engine.Options
	script *scripted.Provider // the run's own model script, if any
	keys   *callCounter
}

func (rn *Runner) models(f *File, c *Case, k int) (*caseModels, error) {
	cm := &caseModels{opt: rn.Options, keys: newCallCounter(runKey(f, c, k))}
	path := c.ModelScript
	if path == "" {
		path = f.ModelScript
	}
	switch {
	case rn.Replay != nil:
		cm.opt.Override = rn.Replay.replayer(cm.keys)
	case path != "":
		s, err := scripted.Load(path)
		if err != nil {
			return nil, fmt.Errorf("case %q: model_script: %w", c.Name, err)
		}
		cm.script = scripted.New(s)
		cm.opt.Override = cm.script
	}
	if rn.Record != nil {
		if cm.opt.Override != nil {
			cm.opt.Override = rn.Record.recorder(cm.opt.Override, cm.keys)
		} else if base := cm.opt.Providers; base != nil {
			cm.opt.Providers = func(m *weft.Model) (weft.Provider, error) {
				p, err := base(m)
				if err != nil {
					return nil, err
				}
				return rn.Record.recorder(p, cm.keys), nil
			}
		}
	}
	return cm, nil
}

// judgeProvider returns the provider and API key a judge's call of model m uses.
func (rn *Runner) judgeProvider(cm *caseModels, m *weft.Model) (weft.Provider, string, error) {
	if cm.opt.Override != nil {
		return cm.opt.Override, "", nil
	}
	if cm.opt.Providers == nil {
		return nil, "", fmt.Errorf("no provider for model %q", m.Name)
	}
	p, err := cm.opt.Providers(m)
	if err != nil {
		return nil, "", err
	}
	lookup := rn.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	info, ok := weft.LookupProvider(m.Provider)
	keyVar := info.KeyEnv
	if !ok {
		if cp, found := rn.Options.Registry.Provider(m.Provider); found {
			base, _ := weft.LookupProvider(cp.Base)
			info, keyVar = base, cp.APIKeyEnv
			if keyVar == "" {
				keyVar = base.KeyEnv
			}
		}
	}
	for _, v := range []string{keyVar, info.AltKeyEnv} {
		if v == "" {
			continue
		}
		if key, ok := lookup(v); ok && key != "" {
			return p, key, nil
		}
	}
	if keyVar != "" && !info.KeyOptional {
		return nil, "", fmt.Errorf("no API key found for provider %q (set %s)", m.Provider, keyVar)
	}
	return p, "", nil
}

// runCase runs one repetition of a case as a thread and checks its turns. Only a failing store
// is returned as an error; everything else is the run's verdict.
func (rn *Runner) runCase(ctx context.Context, f *File, c *Case, k int, runID string, judges map[string]*judge) (CaseRun, error) {
	cr := CaseRun{Case: c.Name, Repetition: k + 1}
	cm, err := rn.models(f, c, k)
	if err != nil {
		cr.Error = err.Error()
		return cr, nil
	}
	eng, err := engine.New(cm.opt)
	if err != nil {
		return cr, err
	}
	props := map[string]any{"eval_run": runID, "eval": f.Name, "eval_case": c.Name, "eval_repetition": k + 1}
	th, err := eng.CreateThread(ctx, engine.NewThread{Agent: f.Agent, Env: c.Env, Arguments: c.Args,
		Tags: []string{TagCase, TagCase + ":" + runID}, Properties: props, Label: "eval " + f.Name + ": " + c.Name})
	if err != nil {
		cr.Error = "creating the thread: " + err.Error()
		return cr, nil
	}
	cr.ThreadID = th.ID
	store := cm.opt.Store
	if redact, err := engine.StoreRedactor(ctx, store, th.ID); err == nil {
		cm.keys.setRedact(redact)
	}
	cr.Pass = true
	for ti := range c.Turns {
		tr, err := rn.runTurn(ctx, f, c, &c.Turns[ti], eng, cm, th.ID, judges)
		if err != nil {
			return cr, err
		}
		cr.Turns = append(cr.Turns, tr)
		cr.Pass = cr.Pass && tr.Pass
		cr.CostUSD += tr.CostUSD
		cr.JudgeCostUSD += tr.judgeCost()
		cr.LatencyMS += tr.LatencyMS
		cr.Tokens += tr.Tokens
	}
	eng.Wait()
	if cm.script != nil {
		if fails := cm.script.Failures(); len(fails) > 0 {
			cr.Pass = false
			cr.Error = "model script: " + strings.Join(fails, "; ")
		}
	}
	// What leaves the run is redacted as `weft run` redacts its output: a secret env value the
	// agent repeated never reaches a report.
	if redact, err := engine.StoreRedactor(context.WithoutCancel(ctx), store, th.ID); err == nil {
		cr.redact(redact)
	}
	// The verdicts go onto the thread: `weft inspect` and `weft threads show` see them.
	doc, _ := json.Marshal(cr)
	verdict := "pass"
	if !cr.Pass {
		verdict = "fail"
	}
	props = maps.Clone(props)
	props["eval_verdict"] = verdict
	err = store.Tx(context.WithoutCancel(ctx), th.ID, nil, func(tx weft.Tx) error {
		if err := tx.SetKV(KVVerdict, doc); err != nil {
			return err
		}
		return tx.UpdateThread(weft.ThreadPatch{Properties: props})
	})
	return cr, err
}

func (rn *Runner) runTurn(ctx context.Context, f *File, c *Case, t *Turn, eng *engine.Engine, cm *caseModels, threadID string,
	judges map[string]*judge) (TurnResult, error) {
	store := cm.opt.Store
	before, err := store.Logs(ctx, threadID, weft.LogQuery{MaxDepth: 1 << 20})
	if err != nil {
		return TurnResult{}, err
	}
	seen := map[string]bool{}
	for _, l := range before {
		seen[l.ID] = true
	}
	msgs, err := store.Messages(ctx, threadID, weft.MessageQuery{Limit: 1 << 30, MaxDepth: 1 << 20})
	if err != nil {
		return TurnResult{}, err
	}
	var lastSeq int64
	if n := len(msgs); n > 0 {
		lastSeq = msgs[n-1].Seq
	}
	input := t.Input
	var tr TurnResult
	msg := &weft.NewMessage{Role: weft.RoleUser, Content: t.Input}
	for i, m := range t.Messages {
		if i == len(t.Messages)-1 {
			msg.Content, input = m.Content, m.Content
			break
		}
		if _, err := eng.Send(ctx, threadID, weft.NewMessage{Role: weft.Role(m.Role), Content: m.Content}); err != nil {
			tr.Error = "queueing messages: " + err.Error()
			return tr, nil
		}
	}
	for _, p := range t.Attachments {
		data, err := os.ReadFile(p)
		if err != nil {
			tr.Error = "attachment: " + unwrapPath(err).Error()
			return tr, nil
		}
		mt := mime.TypeByExtension(filepath.Ext(p))
		if mt == "" {
			mt = "application/octet-stream"
		}
		msg.Attachments = append(msg.Attachments, weft.ToolAttachment{Name: filepath.Base(p), MimeType: mt, Data: data})
	}
	timeout := rn.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	start := time.Now()
	res, askErr := eng.Ask(runCtx, threadID, engine.Input{Message: msg})
	cancel()
	tr.LatencyMS = time.Since(start).Milliseconds()
	if res != nil {
		tr.Steps = res.Steps
		last := res.Last()
		tr.Reason, tr.Error = string(last.Reason), last.Error
	}
	if askErr != nil && tr.Error == "" {
		tr.Error = askErr.Error()
	}
	if err := rn.outcome(ctx, store, threadID, lastSeq, seen, &tr.Outcome); err != nil {
		return tr, err
	}
	tr.Pass = askErr == nil && weft.StopReason(tr.Reason).OK()
	if !tr.Pass {
		tr.Results = append(tr.Results, Result{Expectation: "the run stops well", Kind: "run", Actual: strings.TrimSpace(tr.Reason + " " + tr.Error)})
	}
	transcript, _ := rn.transcript(ctx, store, threadID)
	for _, x := range t.Expect {
		var r Result
		if x.Judge != nil {
			r = rn.judge(ctx, f, cm, judges[x.Judge.Prompt], &x, t, input, transcript, &tr.Outcome)
		} else {
			r = x.Check(&tr.Outcome)
		}
		tr.Results = append(tr.Results, r)
		tr.Pass = tr.Pass && r.Pass
	}
	return tr, nil
}

// outcome reads what the turn stored: the messages after lastSeq and the log rows not in seen.
func (rn *Runner) outcome(ctx context.Context, store weft.Store, threadID string, lastSeq int64, seen map[string]bool, o *Outcome) error {
	msgs, err := store.Messages(ctx, threadID, weft.MessageQuery{Limit: 1 << 30, MaxDepth: 1 << 20})
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Seq <= lastSeq {
			continue
		}
		for _, call := range m.ToolCalls {
			c := Call{Name: call.Name}
			_ = json.Unmarshal([]byte(call.Arguments), &c.Args)
			o.ToolCalls = append(o.ToolCalls, c)
		}
		if m.Depth == 0 && m.Status == weft.MessageCompleted && m.Prompt != "" && m.Content != "" && (m.Role == weft.RoleAssistant || m.Role == weft.RoleUser) {
			o.Text, o.Value = m.Content, m.Metadata["structured"]
		}
	}
	logs, err := store.Logs(ctx, threadID, weft.LogQuery{MaxDepth: 1 << 20})
	if err != nil {
		return err
	}
	for _, l := range logs {
		if seen[l.ID] || l.Kind != "llm" {
			continue
		}
		o.Tokens += l.InputTokens + l.OutputTokens + l.ReasoningTokens
		if l.CostTotal != nil {
			o.CostUSD += *l.CostTotal
		}
	}
	return nil
}

// transcript renders the thread's visible top-level messages for a judge, one "role: text" line
// each, tool calls and results included.
func (rn *Runner) transcript(ctx context.Context, store weft.Store, threadID string) (string, error) {
	msgs, err := store.Messages(ctx, threadID, weft.MessageQuery{Limit: 1 << 30})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, m := range msgs {
		if m.Silent || m.Role == weft.RoleSystem {
			continue
		}
		switch {
		case m.Role == weft.RoleTool:
			fmt.Fprintf(&b, "tool %s: %s\n", m.Name, m.Content)
		default:
			if m.Content != "" {
				fmt.Fprintf(&b, "%s: %s\n", m.Role, m.Content)
			}
			for _, c := range m.ToolCalls {
				fmt.Fprintf(&b, "%s calls %s %s\n", m.Role, c.Name, c.Arguments)
			}
		}
	}
	return b.String(), nil
}

// judge asks a judge for a score and compares it with the expectation's minimum.
func (rn *Runner) judge(ctx context.Context, f *File, cm *caseModels, j *judge, x *Expectation, t *Turn, input, transcript string, o *Outcome) Result {
	r := Result{Expectation: x.String(), Kind: x.Kind}
	name := x.Judge.Model
	if name == "" {
		name = j.model
	}
	if _, ok := rn.Options.Registry.Model(name); !ok || name == "" {
		name = f.JudgeModel
	}
	if name == "" {
		if a, ok := rn.Options.Registry.Agent(f.Agent); ok {
			if p, ok := rn.Options.Registry.Prompt(a.SideA.Prompt); ok {
				name = p.Model
			}
		}
	}
	m, ok := rn.Options.Registry.Model(name)
	if !ok {
		r.Reason = fmt.Sprintf("no model named %q for the judge", name)
		return r
	}
	p, key, err := rn.judgeProvider(cm, m)
	if err != nil {
		r.Reason = err.Error()
		return r
	}
	expected := ""
	switch v := t.Expected.(type) {
	case nil:
	case string:
		expected = v
	default:
		expected = compactJSON(v)
	}
	inputs := map[string]any{"question": input, "query": input, "input": input, "answer": o.Text, "response": o.Text,
		"context": t.Context, "ground_truth": expected, "expected": expected, "transcript": transcript}
	for k, v := range x.Judge.Inputs {
		inputs[k] = v
	}
	v, err := j.ask(ctx, p, key, m, inputs)
	r.JudgeCostUSD = v.costUSD
	if err != nil {
		r.Reason = err.Error()
		return r
	}
	score := v.score
	r.Score, r.Reason = &score, v.reason
	r.Pass = score >= x.Judge.MinScore
	r.Actual = "score " + formatNumber(score)
	return r
}

// redact passes the run's whole JSON form through redact (outcomes, tool arguments, verdicts).
func (cr *CaseRun) redact(redact func(string) string) {
	doc, err := json.Marshal(cr)
	if err != nil {
		return
	}
	var out CaseRun
	if json.Unmarshal([]byte(redact(string(doc))), &out) == nil {
		*cr = out
	}
}

// UseModel makes every prompt of reg answer with the model named name instead of its own (`weft
// eval --model`), to compare models on the same cases. reg must be the caller's own, loaded for
// this eval: no engine may be running on it.
func UseModel(reg *weft.Registry, name string) error {
	if _, ok := reg.Model(name); !ok {
		return weft.Errorf(weft.ENotFound, "no model named %q in the project", name)
	}
	for _, p := range reg.Prompts() {
		p.Model = name
	}
	return nil
}
