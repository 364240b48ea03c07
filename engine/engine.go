package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"maps"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/children"
	"github.com/weft-agents/weft/engine/dispatch"
	"github.com/weft-agents/weft/engine/feed"
	"github.com/weft-agents/weft/engine/journal"
	"github.com/weft-agents/weft/engine/modelcall"
	"github.com/weft-agents/weft/engine/sched"
	"github.com/weft-agents/weft/engine/vars"
	"github.com/weft-agents/weft/internal/logtally"
	"github.com/weft-agents/weft/schema"
	"github.com/weft-agents/weft/tokens"
)

// Options configure an Engine.
type Options struct {
	// Registry holds the validated definitions.
	Registry *weft.Registry
	// Store persists threads.
	Store weft.Store
	// Providers returns the provider for a model's provider name (built-in or custom).
	Providers func(model *weft.Model) (weft.Provider, error)
	// MCP reaches the MCP servers the registry declares; nil = their tools are not offered.
	MCP weft.MCPClient
	// Override, when set, answers every model call (a model script).
	Override weft.Provider
	// Clock tells time and waits (retries, backoff); nil = the system clock.
	Clock weft.Clock
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
	// NodeID names this process for leases; "" = a random id.
	NodeID string
	// LookupEnv reads the process environment for provider keys; nil = os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// OnEvent receives run events (stream to CLIs and subscribers); it must not block.
	OnEvent func(Event)
	// Subscribers is the feed the engine publishes its events to, which Subscribe, Converse and
	// Watch subscribe to; nil = a feed of its own. Engines that replace each other (a server that
	// reloads its definitions) share one, so that a subscription outlives the swap.
	Subscribers *Subscribers
	// OnRequest sees every provider request before the last-line redaction pass (tests). Like a
	// Provider it must not change the request, nor keep it (the run reuses its buffers) past its
	// return.
	OnRequest func(req *weft.Request)
	// OnTrace receives every request as a redacted `--trace-requests` JSON line.
	OnTrace func(line []byte)
	// LeaseTTL is how long a run's lease lasts between renewals (default 30s).
	LeaseTTL time.Duration
	// MaxThreadMessages refuses a message posted to a thread that already holds this many
	// (default weft.DefaultMaxThreadMessages; negative: no limit).
	MaxThreadMessages int
	// RecordEvents keeps every event except streamed text deltas in the thread's event log, written
	// in the run's transactions, so that Subscribe can replay what a client missed — after a
	// dropped connection or a restart. Servers set it; it costs a small transaction before each
	// model call and each tool call when events are waiting, and one at the end of each run.
	RecordEvents bool
	// Observer is told how runs proceed, for traces and metrics (package otel); nil = off, at no
	// cost.
	Observer Observer
}

// Engine runs threads. It holds no per-thread goroutine or memory between runs: an idle thread is
// only its rows in the store.
type Engine struct {
	reg *weft.Registry
	// spent is what threads' own log rows spent, read incrementally: a budget is checked before
	// every model call, and adding up every row each time made a turn of a thread with 2,000
	// calls behind it take 18 ms instead of 0.33 (BenchmarkBudgetedTurn).
	spent logtally.Tally[Spend]
	// structured: some prompt declares an output schema (RunResult.Value is then looked up).
	structured bool
	store      weft.Store
	opt        Options
	clock      weft.Clock
	log        *slog.Logger
	node       string

	// derived caches what the engine derives from definitions, by a key whose type says what it
	// is: *schema.Schema → *schema.Validator, *weft.Prompt → *toolset (scope.go), varTypesKey
	// (an agent's name) → map[string]weft.VarType.
	derived sync.Map
	// tokens counts requests' tokens for their models' windows, remembering the texts it saw.
	tokens tokens.Counter

	// models is what the runs' model calls share (engine/modelcall).
	models modelcall.Models
	// secrets finds threads' secrets and their Redactors (engine/vars).
	secrets *vars.Secrets

	// sched owns the threads this process works on: their turns, runs in progress and workers,
	// background work, kept results, and Serve's loops (engine/sched).
	sched sched.Scheduler

	// subs are the in-process event subscribers (engine/feed; Options.Subscribers).
	subs *feed.Subscribers
	// commit is the committer: every transaction the engine opens, and every event it publishes,
	// go through it (engine/journal).
	commit journal.Committer
	// watches are Ask's, of its thread's stops.
	watches feed.StopWatches

	// subagents runs child threads and carries their reports to their parents (engine/children),
	// hosted by the engine (childhost.go).
	subagents *children.Room

	// roots remembers the roots of threads this process created or read.
	roots rootCache
}

// rootCache remembers which threads are their own roots. A thread's root never changes, so a
// conversation that knows it need not read the thread before its run (which reads it anyway). It
// is a direct-mapped table of rootCacheSize hashes of thread ids (with a seed of this engine's),
// allocated once (512 KiB, no pointers to scan): the threads it remembers cost no memory past the
// table's however many go idle, and it takes no lock. A newer thread takes an older one's slot; the older one's next
// conversation reads its thread, as does a child's (children are not remembered: their
// conversations are rare). Two ids share a slot and a hash with probability 2⁻⁶⁴.
type rootCache struct {
	seed  maphash.Seed
	slots []atomic.Uint64 // 0: empty
}

const rootCacheSize = 1 << 16

func newRootCache() rootCache {
	return rootCache{seed: maphash.MakeSeed(), slots: make([]atomic.Uint64, rootCacheSize)}
}

func (c *rootCache) slot(id string) (uint64, *atomic.Uint64) {
	h := maphash.String(c.seed, id) | 1
	return h, &c.slots[h%rootCacheSize]
}

func (c *rootCache) get(id string) (string, bool) {
	h, s := c.slot(id)
	if s.Load() != h {
		return "", false
	}
	return id, true
}

func (c *rootCache) put(t *weft.Thread) {
	if rootOf(t) != t.ID {
		return
	}
	h, s := c.slot(t.ID)
	s.Store(h)
}

// New returns an engine over a registry and a store.
func New(opt Options) (*Engine, error) {
	if opt.Registry == nil || opt.Store == nil {
		return nil, errors.New("engine: Registry and Store are required")
	}
	if opt.Providers == nil && opt.Override == nil {
		return nil, errors.New("engine: a provider resolver or an override provider is required")
	}
	e := &Engine{reg: opt.Registry, store: opt.Store, opt: opt, clock: opt.Clock, log: opt.Logger, node: opt.NodeID,
		roots: newRootCache()}
	if e.subs = opt.Subscribers; e.subs == nil {
		e.subs = new(feed.Subscribers)
	}
	e.spent.Add = addSpend
	if e.clock == nil {
		e.clock = weft.SystemClock{}
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.node == "" {
		e.node = weft.NewID("node_")
	}
	if e.opt.LookupEnv == nil {
		e.opt.LookupEnv = os.LookupEnv
	}
	if e.opt.LeaseTTL == 0 {
		e.opt.LeaseTTL = 30 * time.Second
	}
	if e.opt.MaxThreadMessages == 0 {
		e.opt.MaxThreadMessages = weft.DefaultMaxThreadMessages
	}
	e.sched.Init(sched.Config{Store: e.store, Host: schedHost{e}, Clock: e.clock, Log: e.log, Node: e.node, LeaseTTL: e.opt.LeaseTTL})
	e.subagents = children.New(childHost{e}, e.store, e.reg, e.log)
	e.models = modelcall.Models{Registry: e.reg, Clock: e.clock, Tokens: &e.tokens, Logger: e.log, Override: e.opt.Override,
		Providers: e.opt.Providers, LookupEnv: e.opt.LookupEnv, OnRequest: e.opt.OnRequest, OnTrace: e.opt.OnTrace,
		Validator: e.validator}
	e.secrets = vars.NewSecrets(e.reg, e.store, e.varTypesOf, e.models.Keys)
	e.commit = journal.NewCommitter(journal.Config{Store: e.store, Clock: e.clock, Log: e.log, Subscribers: e.subs,
		OnEvent: e.opt.OnEvent, RecordEvents: e.opt.RecordEvents, Secrets: e.secrets})
	for _, p := range e.reg.Prompts() {
		e.structured = e.structured || p.OutputSchema != nil
	}
	return e, nil
}

// Registry returns the engine's definitions.
func (e *Engine) Registry() *weft.Registry { return e.reg }

// Store returns the engine's store.
func (e *Engine) Store() weft.Store { return e.store }

// validator returns the compiled validator of a schema, compiling it once.
func (e *Engine) validator(s *schema.Schema) (*schema.Validator, error) {
	if v, ok := e.derived.Load(s); ok {
		return v.(*schema.Validator), nil
	}
	v, err := schema.Compile(s)
	if err != nil {
		return nil, err
	}
	e.derived.Store(s, v)
	return v, nil
}

// varTypesKey is the derived cache's key of an agent's variable types (an agent's name).
type varTypesKey string

// varTypesOf returns the types of the variables an agent's graph declares (cached: definitions
// are immutable after start). Not to be confused with declared tools, the command and http tools
// of package declared (dispatch.DefinedTool).
func (e *Engine) varTypesOf(a *weft.Agent) map[string]weft.VarType {
	if v, ok := e.derived.Load(varTypesKey(a.Name)); ok {
		return v.(map[string]weft.VarType)
	}
	d := vars.DeclaredTypes(vars.NewGraph(e.reg, a, nil).Declared())
	e.derived.Store(varTypesKey(a.Name), d)
	return d
}

// NewThread describes a thread to create.
type NewThread struct {
	// Agent names the agent; required.
	Agent string
	// UserID owns the thread ("" for local use).
	UserID string
	// Env holds thread-layer values; EnvTypes gives the type of values not declared anywhere
	// (undeclared, untyped values are stored as secret).
	Env      map[string]string
	EnvTypes map[string]weft.VarType
	// Arguments are validated against side A's requiredSchema.
	Arguments map[string]any
	// Tags, Properties and Label annotate the thread.
	Tags       []string
	Properties map[string]any
	Label      string
	// Budget caps the thread's spend (its descendants' included), replacing its agent's.
	Budget *weft.Budget
}

// CreateThread validates the arguments and the required variables of the agent's graph and stores
// the thread; nothing is stored when either check fails.
func (e *Engine) CreateThread(ctx context.Context, nt NewThread) (*weft.Thread, error) {
	a, ok := e.reg.Agent(nt.Agent)
	if !ok {
		return nil, weft.Errorf(weft.ENotFound, "no agent named %q", nt.Agent)
	}
	args, err := e.validateArguments(a, nt.Arguments)
	if err != nil {
		return nil, err
	}
	if nt.Budget != nil {
		if field, problem := nt.Budget.Check(); problem != "" {
			return nil, weft.Errorf(weft.EInvalid, "budget.%s: %s", field, problem)
		}
		nt.Properties = maps.Clone(nt.Properties)
		if nt.Properties == nil {
			nt.Properties = map[string]any{}
		}
		nt.Properties[budgetProperty] = *nt.Budget
	}
	_, user, instance, err := vars.Load(ctx, e.store, "", nt.UserID)
	if err != nil {
		return nil, err
	}
	g := vars.NewGraph(e.reg, a, nil)
	decls := g.Declared()
	declared := vars.DeclaredTypes(decls)
	thread := map[string]weft.EnvValue{}
	for k, v := range nt.Env {
		t, ok := declared[k]
		if !ok {
			t = nt.EnvTypes[k]
		}
		if t == "" {
			t = weft.VarSecret
		}
		thread[k] = weft.EnvValue{Name: k, Value: v, Type: t}
	}
	view := &vars.View{Thread: thread, Agent: a.Env, User: vars.Layer(user), Instance: vars.Layer(instance), Declared: declared}
	// Optional entries count only when their flag resolves true.
	g = vars.NewGraph(e.reg, a, func(flag string) bool {
		v, ok := view.Lookup(flag)
		return ok && vars.FlagOn(v.Value)
	})
	decls = g.Declared()
	if missing := vars.Missing(decls, view); len(missing) > 0 {
		return nil, &MissingVariablesError{Missing: missing}
	}
	now := e.clock.Now().UTC()
	t := &weft.Thread{ID: weft.NewID("thr_"), Agent: a.Name, OriginAgent: a.Name, UserID: nt.UserID,
		Label: nt.Label, Tags: nt.Tags, Properties: nt.Properties, Arguments: args, Status: weft.ThreadIdle,
		CreatedAt: now, UpdatedAt: now, LastActivityAt: now}
	t.RootID = t.ID
	if t.Tags == nil {
		t.Tags = []string{}
	}
	if t.Properties == nil {
		t.Properties = map[string]any{}
	}
	env := make([]weft.EnvValue, 0, len(thread))
	for _, v := range thread {
		env = append(env, v)
	}
	if err := e.store.CreateThread(ctx, t, env); err != nil {
		return nil, err
	}
	e.roots.put(t)
	e.commit.Outside(ctx, Event{Type: "thread_created", ThreadID: t.ID, RootID: t.ID})
	if err := e.runThreadCreatedHooks(ctx, t, a); err != nil {
		return t, err
	}
	return t, nil
}

// validateArguments checks creation arguments against side A's requiredSchema, applying defaults.
func (e *Engine) validateArguments(a *weft.Agent, args map[string]any) (map[string]any, error) {
	if args == nil {
		args = map[string]any{}
	}
	p, ok := e.reg.Prompt(a.SideA.Prompt)
	if !ok || p.RequiredSchema == nil {
		return args, nil
	}
	v, err := e.validator(p.RequiredSchema)
	if err != nil {
		return nil, fmt.Errorf("prompt %q: requiredSchema: %w", p.Name, err)
	}
	out, err := v.Validate(args)
	if err != nil {
		return nil, &weft.Error{Code: weft.EInvalid, Message: "invalid arguments", Err: err}
	}
	m, _ := out.(map[string]any)
	return m, nil
}

// Send queues a message on a thread and returns its id once the message is durable. A user
// message clears the thread's stop flag. While the engine serves (Serve), the thread's worker
// runs it — for a thread nothing of this process works on, the worker's run queues it in the
// transaction that starts it, and Send returns after that commit; otherwise the next Run does
// (Converse both queues and runs).
func (e *Engine) Send(ctx context.Context, threadID string, m weft.NewMessage) (string, error) {
	q, err := e.queued(ctx, threadID, m)
	if err != nil {
		return "", err
	}
	if e.sched.Serving() && len(m.Attachments) == 0 && m.IfBusy != weft.IfBusyReject {
		// (A rejected message must not be queued for a run elsewhere: the store's push decides.)
		// An idle thread's new worker queues the message with the transaction that starts its
		// run; Send returns once it is queued.
		if done := e.sched.Transfer(ctx, q); done != nil {
			if err := <-done; err != nil {
				return "", err
			}
			return q.ID, nil
		}
	}
	if err := e.push(ctx, q, m.Attachments); err != nil {
		return "", e.busyRun(threadID, err)
	}
	if e.sched.Serving() {
		e.sched.Wake(ctx, threadID, "")
	}
	return q.ID, nil
}

// checkThreadLength refuses a message to a thread that reached Options.MaxThreadMessages (its newest
// message's seq: one indexed read).
func (e *Engine) checkThreadLength(ctx context.Context, threadID string) error {
	limit := e.opt.MaxThreadMessages
	if limit < 0 {
		return nil
	}
	last, err := e.store.Messages(ctx, threadID, weft.MessageQuery{Limit: 1, Desc: true, MaxDepth: 1 << 20})
	if err != nil || len(last) == 0 || last[0].Seq < int64(limit) {
		return err
	}
	return e.tooLong(threadID, last[0].Seq)
}

// enqueue queues a message without waking anyone.
func (e *Engine) enqueue(ctx context.Context, threadID string, m weft.NewMessage) (string, error) {
	q, err := e.queued(ctx, threadID, m)
	if err != nil {
		return "", err
	}
	if err := e.push(ctx, q, m.Attachments); err != nil {
		return "", err
	}
	return q.ID, nil
}

// queued checks a posted message and returns it as the queue will hold it (not yet queued).
func (e *Engine) queued(ctx context.Context, threadID string, m weft.NewMessage) (*weft.QueuedMessage, error) {
	if m.Role == "" {
		m.Role = weft.RoleUser
	}
	switch m.Role {
	case weft.RoleUser, weft.RoleAssistant, weft.RoleSystem:
	default:
		return nil, weft.Errorf(weft.EInvalid, "a posted message's role is user, assistant or system, not %q", m.Role)
	}
	if m.Content == "" && len(m.Attachments) == 0 {
		return nil, weft.Errorf(weft.EInvalid, "a message needs content or attachments")
	}
	if err := weft.CheckNewMessage(m); err != nil {
		return nil, err
	}
	if !m.IfBusy.Valid() {
		return nil, weft.Errorf(weft.EInvalid, "if_busy is queue, reject, interrupt or rollback, not %q", m.IfBusy)
	}
	q := &weft.QueuedMessage{ID: weft.NewID("msg_"), ThreadID: threadID, Role: m.Role, Content: m.Content,
		Silent: m.Silent, Metadata: m.Metadata, CreatedAt: e.clock.Now().UTC()}
	if m.IfBusy != weft.IfBusyQueue {
		q.IfBusy = m.IfBusy
	}
	if limit := e.opt.MaxThreadMessages; limit > 0 {
		if len(m.Attachments) > 0 {
			// Queued by a Tx with its files, which does not check the limit: read it first.
			if err := e.checkThreadLength(ctx, threadID); err != nil {
				return nil, err
			}
		} else {
			q.MaxMessages = int64(limit) // checked by the push itself
		}
	}
	return q, nil
}

// refusal explains a push the store refused for the thread's length (weft.ThreadFullError);
// other errors are returned as they are.
func (e *Engine) refusal(err error) error {
	if err == nil {
		return nil // (errors.As's target escapes: an allocation a run start otherwise)
	}
	var full *weft.ThreadFullError
	if errors.As(err, &full) {
		return e.tooLong(full.ThreadID, full.Messages)
	}
	return err
}

// tooLong is the error refusing a message to a thread holding n messages.
func (e *Engine) tooLong(threadID string, n int64) error {
	return weft.Errorf(weft.EInvalid, "thread %s holds %d messages; the limit is %d: start a new thread, or raise "+
		"engine.Options.MaxThreadMessages (weft: WEFT_MAX_THREAD_MESSAGES)", threadID, n, e.opt.MaxThreadMessages)
}

// push queues q (with the files it attaches, stored first) and marks a run of the thread in this
// engine, which takes it at its next boundary.
func (e *Engine) push(ctx context.Context, q *weft.QueuedMessage, attachments []weft.ToolAttachment) error {
	// PushQueue refuses an unknown or terminated thread atomically. A message with attachments is
	// queued in the transaction that writes its files: a crash or a refusal leaves neither.
	if len(attachments) > 0 {
		t, err := e.store.Thread(ctx, q.ThreadID)
		if err != nil {
			return err
		}
		_, err = outsideState(e, t).StoreAttachmentsThen(ctx, attachments, func(tx weft.Tx, atts []weft.Attachment) error {
			q.Attachments = atts
			return tx.PushQueue(q)
		})
		if err != nil {
			return err
		}
	} else if err := e.store.PushQueue(ctx, q); err != nil {
		return e.refusal(err)
	}
	// A run of the thread in this engine takes the message at its next boundary, or is followed
	// by another run (runOnce checks once it is no longer registered); a run may have started
	// without being registered yet: it checks the queue for an interrupting message once it is.
	if run, _ := e.sched.Queued(q.ThreadID, q.IfBusy.Interrupts()); run != nil && q.IfBusy.Interrupts() {
		run.(*activeRun).interrupt(q.ID, q.IfBusy == weft.IfBusyRollback)
	}
	return nil
}

// Terminate stops a thread for good: its run is stopped, its status becomes terminated, and it
// refuses messages and continue from then on.
func (e *Engine) Terminate(ctx context.Context, threadID string) error {
	if err := e.Stop(ctx, threadID); err != nil && weft.ErrorCode(err) != weft.EConflict {
		return err
	}
	// Its pending effects are canceled.
	effects, err := e.store.Effects(ctx, threadID)
	if err != nil {
		return err
	}
	for _, ef := range effects {
		if ef.Status == weft.EffectPending {
			if err := e.store.CancelEffect(ctx, threadID, ef.ID); err != nil && weft.ErrorCode(err) != weft.EConflict {
				return err
			}
		}
	}
	// Its pending variables requests expire.
	docs, err := e.store.ExecState(ctx, threadID)
	if err != nil {
		return err
	}
	expired := map[string]json.RawMessage{}
	for k, raw := range docs {
		var req dispatch.StoredEnvRequest
		if strings.HasPrefix(k, dispatch.EnvRequestPrefix) && json.Unmarshal(raw, &req) == nil && req.Status == "pending" {
			req.Status = "expired"
			expired[k], _ = json.Marshal(req)
		}
	}
	status := weft.ThreadTerminated
	if err := e.commit.Tx(ctx, threadID, nil, journal.NoText, func(tx weft.Tx) error {
		for k, doc := range expired {
			if err := tx.SetExecState(k, doc); err != nil {
				return err
			}
		}
		return tx.UpdateThread(weft.ThreadPatch{Status: &status})
	}); err != nil {
		return err
	}
	// Terminating a thread terminates its descendants.
	for {
		kids, _, err := e.store.Threads(ctx, weft.ThreadQuery{ParentID: threadID, Limit: 1000})
		if err != nil {
			return err
		}
		n := 0
		for _, k := range kids {
			if k.Status == weft.ThreadTerminated {
				continue
			}
			n++
			if err := e.Terminate(ctx, k.ID); err != nil && weft.ErrorCode(err) != weft.ENotFound {
				return err
			}
		}
		if n == 0 || len(kids) < 1000 {
			return nil
		}
	}
}
