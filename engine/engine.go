package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/budget"
	"github.com/weft-agents/weft/engine/children"
	"github.com/weft-agents/weft/engine/conversation"
	"github.com/weft-agents/weft/engine/dispatch"
	"github.com/weft-agents/weft/engine/feed"
	"github.com/weft-agents/weft/engine/fork"
	"github.com/weft-agents/weft/engine/hooks"
	"github.com/weft-agents/weft/engine/intake"
	"github.com/weft-agents/weft/engine/journal"
	"github.com/weft-agents/weft/engine/lease"
	"github.com/weft-agents/weft/engine/modelcall"
	"github.com/weft-agents/weft/engine/observe"
	"github.com/weft-agents/weft/engine/roots"
	"github.com/weft-agents/weft/engine/sched"
	"github.com/weft-agents/weft/engine/vars"
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
	Observer observe.Observer
}

// Engine runs threads. It holds no per-thread goroutine or memory between runs: an idle thread is
// only its rows in the store.
type Engine struct {
	reg *weft.Registry
	// spent adds up what threads spent, for their budgets (engine/budget).
	spent *budget.Ledger
	// structured: some prompt declares an output schema (RunResult.Value is then looked up).
	structured bool
	store      weft.Store
	opt        Options
	clock      weft.Clock
	log        *slog.Logger
	node       string

	// derived caches what the engine derives from definitions, which do not change once loaded:
	// *weft.Prompt → *toolset (scope.go), *schema.Schema → *schema.Validator (validator).
	derived sync.Map
	// varTypes keeps the types of the variables each agent's graph declares (engine/vars).
	varTypes *vars.Types
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
	roots roots.Cache
	// intake checks and queues the messages posted to threads (engine/intake).
	intake intake.Intake
	// leases renews the leases of the runs in progress (engine/lease).
	leases lease.Renewer
	// conversations delivers inputs to threads and follows their trees (engine/conversation).
	conversations conversation.Conversations
	// forks makes forks of threads (engine/fork).
	forks fork.Forker
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
		roots: roots.New()}
	if e.subs = opt.Subscribers; e.subs == nil {
		e.subs = new(feed.Subscribers)
	}
	e.spent = budget.NewLedger(e.store)
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
	e.varTypes = vars.NewTypes(e.reg)
	e.secrets = vars.NewSecrets(e.reg, e.store, e.varTypes.Of, e.models.Keys)
	e.commit = journal.NewCommitter(journal.Config{Store: e.store, Clock: e.clock, Log: e.log, Subscribers: e.subs,
		OnEvent: e.opt.OnEvent, RecordEvents: e.opt.RecordEvents, Secrets: e.secrets})
	e.intake = intake.Intake{Store: e.store, Registry: e.reg, Validator: e.validator, Clock: e.clock, Log: e.log,
		MaxThreadMessages: e.opt.MaxThreadMessages, Host: intakeHost{e}}
	e.leases = lease.Renewer{Store: e.store, TTL: e.opt.LeaseTTL}
	e.conversations = conversation.Conversations{Store: e.store, Clock: e.clock, Intake: &e.intake, Sched: &e.sched,
		Subs: e.subs, Roots: &e.roots, Host: conversationHost{e}}
	e.forks = fork.Forker{Store: e.store, Registry: e.reg, Clock: e.clock, Created: func(t *weft.Thread, evs [2]Event) {
		e.roots.Put(t)
		e.commit.Publish(evs[0])
		e.commit.Publish(evs[1])
	}}
	if e.opt.RecordEvents {
		e.forks.Record = journal.Records
	}
	for _, p := range e.reg.Prompts() {
		e.structured = e.structured || p.OutputSchema != nil
	}
	return e, nil
}

// Registry returns the engine's definitions.
func (e *Engine) Registry() *weft.Registry { return e.reg }

// Store returns the engine's store.
func (e *Engine) Store() weft.Store { return e.store }

// NewThread describes a thread to create (intake.NewThread).
type NewThread = intake.NewThread

// CreateThread validates the arguments and the required variables of the agent's graph and stores
// the thread; nothing is stored when either check fails.
func (e *Engine) CreateThread(ctx context.Context, nt NewThread) (*weft.Thread, error) {
	t, a, env, err := e.intake.Thread(ctx, nt)
	if err != nil {
		return nil, err
	}
	if err := e.store.CreateThread(ctx, t, env); err != nil {
		return nil, err
	}
	e.roots.Put(t)
	e.commit.Outside(ctx, Event{Type: "thread_created", ThreadID: t.ID, RootID: t.ID})
	if hs := hooks.Select(e.reg, a.Hooks, weft.HookAfterThreadCreated); len(hs) > 0 {
		hooks.ThreadCreated(ctx, hooks.Set{Hooks: hs, State: outsideState(e, t)}, func(h *weft.Hook, err error) {
			e.log.Warn("hook failed", "hook", h.ID, "point", h.Point, "thread", t.ID, "error", err)
		})
	}
	return t, nil
}

// Send queues a message on a thread and returns its id once the message is durable. A user
// message clears the thread's stop flag. While the engine serves (Serve), the thread's worker
// runs it — for a thread nothing of this process works on, the worker's run queues it in the
// transaction that starts it, and Send returns after that commit; otherwise the next Run does
// (Converse both queues and runs).
func (e *Engine) Send(ctx context.Context, threadID string, m weft.NewMessage) (string, error) {
	q, err := e.intake.Check(ctx, threadID, m)
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
	if err := e.intake.Push(ctx, q, m.Attachments); err != nil {
		return "", e.intake.Busy(threadID, err)
	}
	if e.sched.Serving() {
		e.sched.Wake(ctx, threadID, "")
	}
	return q.ID, nil
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

// validator returns the Validator of a definition's schema s, compiled the first time.
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
