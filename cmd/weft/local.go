package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/mcp"
	"github.com/weft-agents/weft/providers"
	"github.com/weft-agents/weft/scripted"
)

// local is what a command that runs agents in its own process (run, chat, mcp) opens: the store
// --db names, the model script --model-script names, one MCP client for the process and the
// telemetry the OTEL_* environment asks for, and engine options wired with them all.
type local struct {
	store  weft.Store
	script *scripted.Provider // nil without --model-script
	clock  weft.Clock         // the script's clock, else the system's
	mcp    *mcp.Client
	opt    engine.Options
	flush  func()
}

// openLocal opens a command's local runtime; Close releases it. ctx bounds the telemetry setup
// only: the store outlives a cancelled command context, so a stopping run can still record its
// stop. An encryption key file the store creates is told to noteKey (nil: logged as a warning).
func openLocal(ctx context.Context, reg *weft.Registry, db, scriptPath string, log *slog.Logger, noteKey keyNotice) (*local, error) {
	script, err := loadScript(scriptPath)
	if err != nil {
		return nil, err
	}
	var clock weft.Clock = weft.SystemClock{}
	if script != nil {
		clock = script.Clock()
	}
	maxMsgs, err := envMaxThreadMessages()
	if err != nil {
		return nil, err
	}
	store, err := openStoreNotingKey(context.WithoutCancel(ctx), db, log, clock.Now, noteKey)
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return nil, err
		}
		return nil, exit(exitUsage, fmt.Errorf("--db %s: %w", redactDSN(db), err))
	}
	obs, flush, err := telemetry(ctx, log)
	if err != nil {
		store.Close()
		return nil, err
	}
	l := &local{store: store, script: script, clock: clock, mcp: newMCPClient(reg, log), flush: flush}
	l.opt = engine.Options{Registry: reg, Store: store, Logger: log, Providers: providers.Cache(providers.Options{Registry: reg}),
		MaxThreadMessages: maxMsgs, MCP: l.mcp}
	if obs != nil {
		l.opt.Observer = obs
	}
	if script != nil {
		l.opt.Override, l.opt.Clock = script, script.Clock()
	}
	return l, nil
}

// Close flushes telemetry, stops the MCP servers the process started and closes the store.
func (l *local) Close() {
	l.flush()
	l.mcp.Close()
	l.store.Close()
}
