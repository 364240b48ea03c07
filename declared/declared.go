// Package declared runs the tools a definitions directory declares without Go code: command tools
// (`kind: command`, a program started without a shell) and http tools (`kind: http`, one request).
// Each is a weft.ToolHandler, so the engine calls them as it calls a Go tool's Execute.
package declared

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/weft-agents/weft"
)

// DefaultTimeout bounds one call of a declared tool whose definition sets no timeout.
const DefaultTimeout = 60 * time.Second

// Options are what a declared tool needs from the program that runs it.
type Options struct {
	// Root is the project root, which a command tool's cwd is relative to; "" runs commands in the
	// process's working directory.
	Root string
	// Redact removes secrets from an error that quotes what was sent (a failed request's URL may
	// hold a key); nil leaves it as it is.
	Redact func(string) string
	// RunErr reports why the run the call is part of ended (its context's Err), nil while it goes
	// on, so that a result can say that the run's time limit, not the tool's, ended a call; nil
	// means a run that never ends.
	RunErr func() error
}

// runErr is RunErr's answer, nil without one.
func (o Options) runErr() error {
	if o.RunErr == nil {
		return nil
	}
	return o.RunErr()
}

// redact applies Redact when there is one.
func (o Options) redact(s string) string {
	if o.Redact == nil {
		return s
	}
	return o.Redact(s)
}

// expand resolves ${env:NAME} (and ${env:NAME:default}) in a declared value from the thread's
// variables at call time.
func expand(ctx context.Context, st weft.State, v string) (string, error) {
	return weft.ExpandEnv(v, func(name string) (string, bool, error) { return st.LookupEnv(ctx, name) })
}

// parseToolOutput reads a JSON object with a status key as a ToolResult, anything else as text.
func parseToolOutput(out []byte) weft.ToolResult {
	trimmed := bytes.TrimSpace(out)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var probe map[string]json.RawMessage
		if json.Unmarshal(trimmed, &probe) == nil {
			if _, ok := probe["status"]; ok {
				var res weft.ToolResult
				if json.Unmarshal(trimmed, &res) == nil && (res.Status == weft.ToolSuccess || res.Status == weft.ToolError) {
					return res
				}
			}
		}
	}
	return weft.Success(string(trimmed))
}
