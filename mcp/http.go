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
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server {
		mu.Lock()
		defer mu.Unlock()
		if e := current(); e != last || srv == nil {
			o := opt
			o.Engine = e
			last, srv = e, NewServer(o)
		}
		return srv
	}, &sdk.StreamableHTTPOptions{Logger: opt.Logger})
}
