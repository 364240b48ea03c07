package mcp

import (
	"net/http"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-agents/weft/engine"
)

// UserHeader carries the authenticated user to the /mcp handler. The HTTP API sets it after
// authenticating each request (replacing anything a client sent), so it can be trusted there.
const UserHeader = "Weft-Mcp-User"

// requestUser is the user of an HTTP request: the bearer token's user when the handler runs
// behind auth.RequireBearerToken (which also binds each session to that user), else UserHeader.
func requestUser(req sdk.Request) string {
	extra := req.GetExtra()
	if extra == nil {
		return ""
	}
	if extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
		return extra.TokenInfo.UserID
	}
	if extra.Header != nil {
		return extra.Header.Get(UserHeader)
	}
	return ""
}

// NewHTTPHandler serves the MCP server over streamable HTTP. current returns the engine to use
// (a server that reloads its definitions swaps engines; new sessions see the new set). Threads
// belong to the user named by UserHeader.
func NewHTTPHandler(current func() *engine.Engine, opt ServerOptions) http.Handler {
	var mu sync.Mutex
	var last *engine.Engine
	var srv *sdk.Server
	opt.UserID = requestUser
	server := func(*http.Request) *sdk.Server {
		mu.Lock()
		defer mu.Unlock()
		if e := current(); e != last || srv == nil {
			o := opt
			o.Engine = e
			last, srv = e, NewServer(o)
		}
		return srv
	}
	// The go-sdk serves the 2026-07-28 revision (no initialize, server/discover, the Mcp-Method
	// header) only from a stateless handler, and the earlier ones (initialize, Mcp-Session-Id)
	// from a stateful one: a request declaring 2026-07-28 or later without a session goes to the
	// first, everything else to the second.
	stateful := sdk.NewStreamableHTTPHandler(server, &sdk.StreamableHTTPOptions{Logger: opt.Logger})
	stateless := sdk.NewStreamableHTTPHandler(server, &sdk.StreamableHTTPOptions{Logger: opt.Logger, Stateless: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Session-Id") == "" && r.Header.Get("Mcp-Protocol-Version") >= statelessRevision {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// statelessRevision is the first MCP revision without sessions.
const statelessRevision = "2026-07-28"
