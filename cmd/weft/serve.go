package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/a2a"
	"github.com/weft-agents/weft/aguiapi"
	"github.com/weft-agents/weft/aisdkapi"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/mcp"
	"github.com/weft-agents/weft/openaiapi"
	"github.com/weft-agents/weft/project"
	"github.com/weft-agents/weft/providers"
	"github.com/weft-agents/weft/web"
)

// serveFlags are the flags of weft serve.
type serveFlags struct {
	addr, db, script, logFormat string
	nodeID                      string
	workers                     int
	noAuth, insecure, watch     bool
	// a2a serves every agent over A2A under /a2a/ (on by default; --a2a=false turns it off).
	a2a   bool
	drain time.Duration
	// inspect: weft inspect (loopback only, no auth; prints the inspector's URL).
	inspect bool
}

func newServeCmd(g *globals) *cobra.Command {
	f := &serveFlags{}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API: threads, messages, streams, auth, and a worker pool",
		Long: `Serve the HTTP API under /api on --addr, over the store --db (default .weft/weft.db;
env WEFT_DB). Requests need an API key (Authorization: Bearer KEY; create one with weft keys
create) or WEFT_ADMIN_KEY; --no-auth lets every request act as the admin user "local" and is
refused unless --addr is a loopback address (override with --insecure).

The same address serves MCP over streamable HTTP at /mcp, behind the same keys: each agent and
each prompt usable as a tool is an MCP tool (see weft mcp --help). Weft is also the OAuth
authorization server of /mcp, so MCP clients that only do OAuth connect: the user approves them on
a consent page with an API key (docs/mcp.md). Unless --a2a=false, each agent
is also an A2A agent: its card at /a2a/AGENT/.well-known/agent-card.json, JSON-RPC at /a2a/AGENT
(docs/a2a.md).

Interrupted runs and queued messages resume at start; SIGTERM or SIGINT stops taking work and
gives running steps --drain to reach a step boundary.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return serve(cmd, g, f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.addr, "addr", envOr("WEFT_ADDR", "127.0.0.1:8080"), "listen address (env WEFT_ADDR)")
	fl.StringVar(&f.db, "db", defaultDB(), "store: SQLite file or postgres:// URL (env WEFT_DB)")
	fl.IntVar(&f.workers, "workers", 64, "threads run at once")
	fl.StringVar(&f.nodeID, "node-id", "", "this process's name in thread leases (default: a random id)")
	fl.BoolVar(&f.noAuth, "no-auth", false, "every request acts as the admin user local (loopback addresses only)")
	fl.BoolVar(&f.insecure, "insecure", false, "allow --no-auth on a non-loopback address")
	fl.BoolVar(&f.watch, "watch", false, "reload the definitions when they change (an invalid set keeps the old one)")
	fl.BoolVar(&f.a2a, "a2a", true, "serve every agent as an A2A agent under /a2a/{agent} (--a2a=false turns it off)")
	fl.StringVar(&f.script, "model-script", "", "answer every model call from a model script (tests, demos)")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fl.DurationVar(&f.drain, "drain", 10*time.Second, "how long running steps get to reach a boundary at shutdown")
	return c
}

// isLoopback reports whether a listen address only accepts local connections.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func serve(cmd *cobra.Command, g *globals, f *serveFlags) error {
	if f.inspect && !isLoopback(f.addr) {
		return exit(exitUsage, fmt.Errorf("--addr %s: weft inspect has no auth, so it listens on a loopback address only (127.0.0.1, ::1, localhost); use weft serve with keys for others", f.addr))
	}
	if f.noAuth && !isLoopback(f.addr) && !f.insecure {
		return exit(exitUsage, fmt.Errorf("--no-auth on %s would let anyone on the network act as admin; listen on a loopback address or add --insecure", f.addr))
	}
	if f.workers < 1 {
		return exit(exitUsage, fmt.Errorf("--workers %d: want at least 1", f.workers))
	}
	if f.logFormat != "text" && f.logFormat != "json" {
		return exit(exitUsage, fmt.Errorf("--log-format %q: want text or json", f.logFormat))
	}
	level := g.logLevel
	if !cmd.Flags().Changed("log-level") && !cmd.Root().PersistentFlags().Changed("log-level") {
		level = "info"
	}
	log := newFormatLogger(level, f.logFormat, os.Stderr)
	// The watch compares against the files as they were before loading, so no change made after
	// is missed.
	stamp := treeStamp(g.dir)
	reg, err := loadProject(g.dir)
	if err != nil {
		return err
	}
	script, err := loadScript(f.script)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := mkParent(f.db); err != nil {
		return err
	}
	store, err := openStore(context.WithoutCancel(ctx), f.db, log, nil)
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return err
		}
		return exit(exitUsage, fmt.Errorf("--db %s: %w", redactDSN(f.db), err))
	}
	defer store.Close()
	auth, _ := store.(weft.AuthStore)
	if auth == nil && !f.noAuth {
		return exit(exitUsage, fmt.Errorf("--db %s keeps no users and keys; use a SQLite file or --no-auth", redactDSN(f.db)))
	}

	adminKey := os.Getenv("WEFT_ADMIN_KEY")
	if adminKey != "" && len(adminKey) < 24 {
		return exit(exitUsage, fmt.Errorf("WEFT_ADMIN_KEY is %d characters; an admin key needs at least 24 (weft keys create makes a strong one)", len(adminKey)))
	}
	var leaseTTL time.Duration
	if v := os.Getenv("WEFT_LEASE_TTL"); v != "" {
		if leaseTTL, err = time.ParseDuration(v); err != nil || leaseTTL <= 0 {
			return exit(exitUsage, fmt.Errorf("WEFT_LEASE_TTL=%q: want a positive duration such as 30s", v))
		}
	}
	maxMsgs, err := envMaxThreadMessages()
	if err != nil {
		return err
	}
	obs, flush, err := telemetry(ctx, log)
	if err != nil {
		return err
	}
	defer flush()
	// One feed for the process: the global event stream outlives definition reloads.
	subs := new(engine.Subscribers)
	// One MCP client for the process: sessions outlive definition reloads.
	mcpClient := newMCPClient(reg, log)
	defer mcpClient.Close()
	preloadMCP(ctx, mcpClient, reg, log)
	var evalOpt atomic.Pointer[engine.Options] // the options of the newest engine, for POST /api/evals
	newEngine := func(reg *weft.Registry) (*engine.Engine, error) {
		mcp.AddPromptAgents(reg)
		a2a.Attach(reg) // a reloaded set's kind: a2a tools
		opt := engine.Options{Registry: reg, Store: store, Logger: log, Providers: providers.Cache(providers.Options{Registry: reg}),
			Subscribers: subs, RecordEvents: true, LeaseTTL: leaseTTL, NodeID: f.nodeID, MaxThreadMessages: maxMsgs, MCP: mcpClient}
		if obs != nil {
			opt.Observer = obs
		}
		if script != nil {
			opt.Override = script
		}
		evalOpt.Store(&opt)
		return engine.New(opt)
	}
	eng, err := newEngine(reg)
	if err != nil {
		return exit(exitFailure, err)
	}
	// Ready once listening and once the engine has resumed what a stopped process left.
	recovered := make(chan struct{})
	var once sync.Once
	sched := &scheduler{log: log, opt: engine.ServeOptions{Workers: f.workers, DrainTimeout: f.drain,
		Started: func() { once.Do(func() { close(recovered) }) }}}
	sched.start(eng)

	apiOpt := httpapi.Options{EngineFunc: sched.engine, Auth: auth, NoAuth: f.noAuth,
		AdminKey: adminKey, Logger: log, Version: version(), Pages: web.Handler(), Evals: &serverEvals{dir: evalsDir(g.dir), opt: &evalOpt},
		MCP: mcp.NewHTTPHandler(sched.engine, mcp.ServerOptions{Version: version(), Logger: log, TracerProvider: tracerOf(obs)})}
	if f.a2a {
		apiOpt.A2A = a2a.NewServer(a2a.ServerOptions{Engine: sched.engine, Version: version(), Logger: log})
	}
	// The inspector shows a thread's A2A tasks with or without --a2a (weft inspect serves no A2A).
	apiOpt.A2ATasks = func(ctx context.Context, t *weft.Thread, fileURL func(thread, path string) string) (any, bool, error) {
		return a2a.ThreadTasks(ctx, store, t, fileURL)
	}
	api := httpapi.New(apiOpt)
	openaiapi.Register(api)
	aisdkapi.Register(api)
	aguiapi.Register(api)
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		sched.stop()
		return exit(exitUsage, fmt.Errorf("--addr %s: %w", f.addr, err))
	}
	// Streams end when the server shuts down: their requests' context is this one.
	baseCtx, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	srv := api.HTTPServer(baseCtx, httpapi.Limits{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	go func() {
		select {
		case <-recovered:
			api.SetReady(true)
		case <-ctx.Done():
		}
	}()
	log.Info("serving", "addr", ln.Addr().String(), "mcp", "/mcp", "db", redactDSN(f.db), "workers", f.workers, "auth", !f.noAuth)
	if f.inspect {
		fmt.Fprintf(cmd.OutOrStdout(), "weft: inspector at http://%s/\n", ln.Addr())
	} else {
		fmt.Fprintf(cmd.OutOrStdout(), "weft: serving http://%s/api\n", ln.Addr())
		fmt.Fprintf(cmd.OutOrStdout(), "weft: inspector at http://%s/\n", ln.Addr())
	}

	if f.watch {
		go watchDefinitions(ctx, g.dir, stamp, log, func(reg *weft.Registry) error {
			e, err := newEngine(reg)
			if err != nil {
				return err
			}
			sched.swap(e)
			api.EndStreams() // their clients reconnect with their cursor, to the new engine
			return nil
		})
	}

	select {
	case <-ctx.Done():
	case err := <-served:
		sched.stop()
		return exit(exitFailure, err)
	}
	log.Info("shutting down", "drain", f.drain.String())
	api.SetReady(false)
	cancelBase()
	shutCtx, cancel := context.WithTimeout(context.Background(), f.drain+5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutCtx)
	sched.stop()
	log.Info("stopped")
	return nil
}

// scheduler runs the engine's scheduler (Serve) and swaps engines when the definitions reload:
// the old one drains (its runs reach a boundary and release their leases) and the new one
// resumes them.
type scheduler struct {
	log *slog.Logger
	opt engine.ServeOptions

	cur     atomic.Pointer[engine.Engine]
	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	stopped bool // stop was called: a late swap does nothing
}

func (s *scheduler) engine() *engine.Engine { return s.cur.Load() }

// start serves e until stop or the next swap.
func (s *scheduler) start(e *engine.Engine) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.cur.Store(e)
	s.cancel, s.done = cancel, done
	go func() {
		defer close(done)
		if err := e.Serve(ctx, s.opt); err != nil {
			s.log.Error("the scheduler stopped", "error", err)
		}
	}()
}

// swap drains the current engine and serves e.
func (s *scheduler) swap(e *engine.Engine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.cancel()
	<-s.done
	s.start(e)
}

// stop drains the current engine.
func (s *scheduler) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	s.cancel()
	<-s.done
}

// watchDefinitions reloads the definitions when a file under dir changes from the stamp last
// (checked every second); an invalid set is logged and the old one kept.
func watchDefinitions(ctx context.Context, dir, last string, log *slog.Logger, apply func(*weft.Registry) error) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		stamp := treeStamp(dir)
		if stamp == last {
			continue
		}
		last = stamp
		reg, diags := project.Open(dir, project.Options{})
		if diags.HasErrors() {
			for _, d := range diags.Errors() {
				log.Error("definitions reload refused; keeping the previous set", "problem", d.String())
			}
			continue
		}
		if err := apply(reg); err != nil {
			log.Error("definitions reload failed; keeping the previous set", "error", err)
			continue
		}
		log.Info("definitions reloaded", "dir", dir)
	}
}

// treeStamp summarizes the names, sizes and modification times of the files under dir.
func treeStamp(dir string) string {
	var b strings.Builder
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			fmt.Fprintf(&b, "%s|%d|%d;", p, info.Size(), info.ModTime().UnixNano())
		}
		return nil
	})
	return b.String()
}

// mkParent creates the directory of a SQLite file store.
func mkParent(db string) error {
	if db == "" || db == ":memory:" || strings.HasPrefix(db, "postgres") {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(db), 0o755); err != nil {
		return exit(exitUsage, fmt.Errorf("--db %s: %w", redactDSN(db), unwrapPath(err)))
	}
	return nil
}

// newFormatLogger returns a text or JSON logger at the level.
func newFormatLogger(level, format string, w *os.File) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	o := &slog.HandlerOptions{Level: l}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}
