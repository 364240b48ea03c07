// Package mcp connects Weft to the Model Context Protocol, both ways, with the official Go SDK: a
// Client that offers the tools of declared MCP servers to agents (weft.MCPClient), and a Server
// that exposes a project's agents and prompts as MCP tools to any MCP client.
package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

// ClientOptions configure a Client.
type ClientOptions struct {
	// Root is the project directory: stdio servers start there, and relative programs resolve
	// against it.
	Root string
	// Logger receives operational logs (a server started, died, restarted); nil discards them.
	// Resolved commands, URLs and headers are never logged: they may hold secrets.
	Logger *slog.Logger
	// ConnectTimeout bounds starting a server and its initialize handshake (default 30s).
	ConnectTimeout time.Duration
	// RetryAfter is how long a server that failed to start is not tried again (default 5s), so that
	// a broken server does not stall every step.
	RetryAfter time.Duration
	// HTTPClient makes streamable-HTTP requests; nil = a client without an overall timeout (calls
	// are bounded by their context).
	HTTPClient *http.Client
	// Version is reported to servers as the client's version.
	Version string
}

// Client is Weft's MCP client: one session per declared server (and resolved configuration) per
// process, started on first use, restarted after it dies, closed by Close. It implements
// weft.MCPClient and is safe for concurrent use.
type Client struct {
	opt    ClientOptions
	mu     sync.Mutex
	conns  map[string]*conn
	closed bool
}

// NewClient returns a client; it starts nothing until a server's tools are first needed.
func NewClient(opt ClientOptions) *Client {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.ConnectTimeout <= 0 {
		opt.ConnectTimeout = 30 * time.Second
	}
	if opt.RetryAfter <= 0 {
		opt.RetryAfter = 5 * time.Second
	}
	if opt.Version == "" {
		opt.Version = "dev"
	}
	return &Client{opt: opt, conns: map[string]*conn{}}
}

var _ weft.MCPClient = (*Client)(nil)

// Tools implements weft.MCPClient.
func (c *Client) Tools(ctx context.Context, s *weft.MCPServer, env weft.EnvLookup) ([]weft.MCPTool, error) {
	cn, err := c.conn(s, env)
	if err != nil {
		return nil, err
	}
	return cn.tools(ctx)
}

// Call implements weft.MCPClient.
func (c *Client) Call(ctx context.Context, s *weft.MCPServer, remote string, args json.RawMessage, env weft.EnvLookup) (weft.ToolResult, error) {
	cn, err := c.conn(s, env)
	if err != nil {
		return weft.ToolResult{}, err
	}
	return cn.call(ctx, remote, args)
}

// Close ends every session and stops every stdio server (its whole process group).
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	conns := make([]*conn, 0, len(c.conns))
	for _, cn := range c.conns {
		conns = append(conns, cn)
	}
	c.conns = map[string]*conn{}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, cn := range conns {
		wg.Go(cn.close)
	}
	wg.Wait()
	return nil
}

// conn returns the connection for a server's resolved configuration, creating it (unstarted).
func (c *Client) conn(s *weft.MCPServer, env weft.EnvLookup) (*conn, error) {
	cfg, err := resolve(s, env)
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: %w", s.Name, err)
	}
	key := cfg.key()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("MCP server %s: the client is closed", s.Name)
	}
	cn, ok := c.conns[key]
	if !ok {
		cn = &conn{c: c, server: s, cfg: cfg}
		c.conns[key] = cn
	}
	return cn, nil
}

// config is a server declaration with its ${env:} references resolved.
type config struct {
	name    string
	argv    []string
	env     []string
	url     string
	headers map[string]string
	// secrets are the values ${env:} references resolved to: errors never show them.
	secrets []string
}

// scrub replaces the configuration's resolved values in an error's text with [redacted] (a URL
// in a transport error may carry a key).
func (c config) scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	changed := false
	for _, v := range c.secrets {
		if len(v) >= 4 && strings.Contains(msg, v) {
			msg, changed = strings.ReplaceAll(msg, v, weft.Redacted), true
		}
	}
	if !changed {
		return err
	}
	return scrubbed{msg: msg, err: err}
}

// scrubbed is an error whose text had secrets removed; errors.Is still sees the original.
type scrubbed struct {
	msg string
	err error
}

func (e scrubbed) Error() string { return e.msg }
func (e scrubbed) Unwrap() error { return e.err }

// key identifies a configuration without holding its (possibly secret) values in clear.
func (c config) key() string {
	b, _ := json.Marshal(c.argv)
	h := sha256.New()
	h.Write([]byte(c.name + "\x00" + c.url + "\x00"))
	h.Write(b)
	for _, e := range c.env {
		h.Write([]byte("\x00" + e))
	}
	keys := make([]string, 0, len(c.headers))
	for k := range c.headers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		h.Write([]byte("\x00" + k + "\x01" + c.headers[k]))
	}
	return c.name + "/" + hex.EncodeToString(h.Sum(nil))
}

// resolve expands a declaration's ${env:NAME} references from the thread env. A stdio server's
// environment is its declared variables and env plus only PATH, HOME, LANG, LC_*, TMPDIR and TZ of
// Weft's own — never provider keys.
func resolve(s *weft.MCPServer, env weft.EnvLookup) (config, error) {
	cfg := config{name: s.Name, headers: map[string]string{}}
	lookup := func(name string) (string, bool, error) {
		if env == nil {
			return "", false, nil
		}
		v, _, ok := env(name)
		if ok {
			cfg.secrets = append(cfg.secrets, v)
		}
		return v, ok, nil
	}
	var err error
	expand := func(field, v string) string {
		out, e := weft.ExpandEnv(v, lookup)
		if e != nil && err == nil {
			err = fmt.Errorf("%s: %w", field, e)
		}
		return out
	}
	for i, a := range s.Command {
		cfg.argv = append(cfg.argv, expand(fmt.Sprintf("server.command[%d]", i), a))
	}
	if len(cfg.argv) > 0 {
		cfg.env = weft.InheritedEnv()
		for _, vd := range s.Variables {
			if v, ok, _ := lookup(vd.Name); ok {
				cfg.env = append(cfg.env, vd.Name+"="+v)
			}
		}
		keys := make([]string, 0, len(s.Env))
		for k := range s.Env {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			cfg.env = append(cfg.env, k+"="+expand("server.env."+k, s.Env[k]))
		}
	}
	cfg.url = expand("server.url", s.URL)
	for k, v := range s.Headers {
		cfg.headers[k] = expand("server.headers."+k, v)
	}
	return cfg, err
}

// conn is one server session: started lazily, its tool list cached until the server says the
// list changed, replaced by a fresh one after it dies.
type conn struct {
	c      *Client
	server *weft.MCPServer
	cfg    config

	mu       sync.Mutex
	sess     *sdk.ClientSession
	ended    chan struct{} // closed when sess ends
	proc     *process      // stdio servers only
	gen      int           // incremented per started session
	list     []weft.MCPTool
	listed   bool
	failErr  error
	failedAt time.Time
	// stale is set when the server says its tool list changed.
	stale atomic.Bool
}

// errSessionEnded cancels requests of a session that ended (the server exited, or the connection
// broke on a malformed message): the SDK would leave them waiting for their deadline.
var errSessionEnded = errors.New("the MCP session ended")

// session returns the live session (and a channel closed when it ends), starting one if there is
// none.
func (cn *conn) session(ctx context.Context) (*sdk.ClientSession, int, <-chan struct{}, error) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.sess != nil {
		return cn.sess, cn.gen, cn.ended, nil
	}
	if cn.failErr != nil && time.Since(cn.failedAt) < cn.c.opt.RetryAfter {
		return nil, 0, nil, cn.failErr
	}
	sess, proc, err := cn.start(ctx)
	if err != nil {
		cn.failErr, cn.failedAt = cn.cfg.scrub(fmt.Errorf("MCP server %s could not be started: %w", cn.server.Name, err)), time.Now()
		return nil, 0, nil, cn.failErr
	}
	cn.failErr = nil
	cn.gen++
	ended := make(chan struct{})
	cn.sess, cn.proc, cn.listed, cn.ended = sess, proc, false, ended
	gen := cn.gen
	go func() {
		// The session ends when the server exits or the connection breaks: the next use starts a
		// new one.
		_ = sess.Wait()
		close(ended)
		if proc != nil && !proc.waitExit(time.Second) {
			proc.kill()
		}
		cn.mu.Lock()
		if cn.gen == gen && cn.sess == sess {
			cn.sess, cn.listed = nil, false
			cn.c.opt.Logger.Warn("MCP server session ended; it restarts on next use", "server", cn.server.Name)
		}
		cn.mu.Unlock()
		if proc != nil {
			proc.kill()
		}
	}()
	return sess, gen, ended, nil
}

// bound returns a context that also ends when the session does.
func bound(ctx context.Context, ended <-chan struct{}) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-ended:
			cancel(errSessionEnded)
		case <-cctx.Done():
		}
	}()
	return cctx, func() { cancel(nil) }
}

// start connects: a stdio process or a streamable-HTTP endpoint, then the initialize handshake,
// bounded by ConnectTimeout.
func (cn *conn) start(ctx context.Context) (*sdk.ClientSession, *process, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cn.c.opt.ConnectTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "weft", Version: cn.c.opt.Version}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{},
		// Never blocks: it may run while session() holds the lock around the handshake.
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { cn.stale.Store(true) },
	})
	var transport sdk.Transport
	var proc *process
	if len(cn.cfg.argv) > 0 {
		prog, err := weft.LookProgram(cn.c.opt.Root, cn.cfg.argv[0])
		if err != nil {
			return nil, nil, err
		}
		proc, err = startProcess(prog, cn.cfg.argv[1:], cn.cfg.env, cn.c.opt.Root)
		if err != nil {
			return nil, nil, err
		}
		transport = &sdk.IOTransport{Reader: proc.stdout, Writer: proc.stdin}
	} else {
		hc := cn.c.opt.HTTPClient
		if hc == nil {
			hc = &http.Client{}
		}
		hc = &http.Client{Transport: headerTransport{base: hc.Transport, headers: cn.cfg.headers}, Timeout: hc.Timeout}
		transport = &sdk.StreamableClientTransport{Endpoint: cn.cfg.url, HTTPClient: hc, MaxRetries: 1}
	}
	sess, err := client.Connect(ctx, transport, nil)
	if err != nil {
		if proc != nil {
			proc.kill()
			err = proc.explain(err)
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("no answer to initialize within %s", cn.c.opt.ConnectTimeout)
		}
		return nil, nil, err
	}
	return sess, proc, nil
}

// tools returns the cached listing, listing again when it is stale.
func (cn *conn) tools(ctx context.Context) ([]weft.MCPTool, error) {
	sess, gen, ended, err := cn.session(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := bound(ctx, ended)
	defer cancel()
	stale := cn.stale.Swap(false)
	cn.mu.Lock()
	if cn.listed && cn.gen == gen && !stale {
		l := cn.list
		cn.mu.Unlock()
		return l, nil
	}
	cn.mu.Unlock()
	var list []weft.MCPTool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, cn.failure(ctx, "listing tools", err)
		}
		if cn.server.Tools != nil && !slices.Contains(cn.server.Tools, t.Name) {
			continue
		}
		list = append(list, convertTool(cn.server, t))
	}
	cn.mu.Lock()
	if cn.gen == gen {
		cn.list, cn.listed = list, true
	}
	cn.mu.Unlock()
	return list, nil
}

// convertTool maps a listed tool, checking its input schema against the allowed subset.
func convertTool(s *weft.MCPServer, t *sdk.Tool) weft.MCPTool {
	out := weft.MCPTool{Name: s.Prefix + t.Name, Remote: t.Name, Description: strings.TrimSpace(t.Description)}
	if out.Description == "" {
		out.Description = strings.TrimSpace(t.Title)
	}
	if out.Description == "" {
		out.Description = "Tool " + t.Name + " of MCP server " + s.Name + "."
	}
	args, problem := checkSchema(t.InputSchema)
	out.Args, out.Problem = args, problem
	return out
}

// checkSchema parses an input schema, checks it against the subset and inlines local $refs. An
// empty object schema means a tool without arguments.
func checkSchema(v any) (*schema.Schema, string) {
	raw, err := json.Marshal(v)
	if err != nil || v == nil {
		return nil, "the input schema is missing"
	}
	s, err := schema.Parse(raw)
	if err != nil {
		return nil, "the input schema is not valid JSON Schema: " + err.Error()
	}
	if ps := schema.Check(s); len(ps) > 0 {
		msgs := make([]string, len(ps))
		for i, p := range ps {
			msgs[i] = p.String()
		}
		return nil, strings.Join(msgs, "; ")
	}
	in, err := schema.Inline(s)
	if err != nil {
		return nil, err.Error()
	}
	in.Schema = "" // $schema is accepted and ignored
	if len(in.Properties) == 0 && in.AdditionalProperties == nil && len(in.Required) == 0 {
		return nil, ""
	}
	return in, ""
}

// call calls one tool and maps the reply.
func (cn *conn) call(ctx context.Context, remote string, args json.RawMessage) (weft.ToolResult, error) {
	sess, _, ended, err := cn.session(ctx)
	if err != nil {
		return weft.ToolResult{}, err
	}
	ctx, cancel := bound(ctx, ended)
	defer cancel()
	params := &sdk.CallToolParams{Name: remote, Arguments: args}
	cn.annotate(ctx, sess, params)
	res, err := sess.CallTool(ctx, params)
	if err != nil {
		return weft.ToolResult{}, cn.failure(ctx, "calling "+remote, err)
	}
	return convertResult(res), nil
}

// failure explains a failed request: a server that died says so with the tail of its stderr; a
// dead session is dropped so that the next use restarts the server.
func (cn *conn) failure(ctx context.Context, what string, err error) error {
	return cn.cfg.scrub(cn.explain(ctx, what, err))
}

func (cn *conn) explain(ctx context.Context, what string, err error) error {
	cn.mu.Lock()
	proc := cn.proc
	cn.mu.Unlock()
	ended := errors.Is(context.Cause(ctx), errSessionEnded)
	if !ended && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return fmt.Errorf("MCP server %s: %s: %w", cn.server.Name, what, err)
	}
	if proc != nil && proc.waitExit(time.Second) {
		cn.drop()
		return fmt.Errorf("MCP server %s stopped while %s: %w", cn.server.Name, what, proc.explain(nil))
	}
	if ended || errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		cn.drop()
		return fmt.Errorf("MCP server %s closed the connection while %s", cn.server.Name, what)
	}
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) {
		// Not the server's error answer: the stream is in an unknown state (say, a line that was
		// not JSON-RPC swallowed an answer), so the session is replaced on the next use.
		cn.drop()
		return fmt.Errorf("MCP server %s broke the protocol while %s (Weft restarts it): %v", cn.server.Name, what, err)
	}
	return fmt.Errorf("MCP server %s: %s: %v", cn.server.Name, what, err)
}

// drop discards the current session (and kills its process) so the next use starts afresh.
func (cn *conn) drop() {
	cn.mu.Lock()
	sess, proc := cn.sess, cn.proc
	cn.sess, cn.proc, cn.listed = nil, nil, false
	cn.mu.Unlock()
	if proc != nil {
		proc.kill()
	}
	if sess != nil {
		go sess.Close()
	}
}

// close ends the session: stdin closed so the server can exit, then its process group killed.
func (cn *conn) close() {
	cn.mu.Lock()
	sess, proc := cn.sess, cn.proc
	cn.sess, cn.proc = nil, nil
	cn.gen++
	cn.mu.Unlock()
	if sess == nil {
		return
	}
	done := make(chan struct{})
	go func() { sess.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	if proc != nil {
		proc.kill()
	}
}

// headerTransport adds a server's configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	return base.RoundTrip(req)
}

// annotate adds the MCP semantic conventions' client attributes to the span in ctx (the engine's
// execute_tool span: the conventions ask MCP instrumentation to enrich an existing tool span
// rather than open a second one) and propagates its trace context in params._meta (traceparent,
// tracestate), as the conventions recommend.
func (cn *conn) annotate(ctx context.Context, sess *sdk.ClientSession, params *sdk.CallToolParams) {
	span := trace.SpanFromContext(ctx)
	if !span.SpanContext().IsValid() {
		return
	}
	attrs := []attribute.KeyValue{semconv.McpMethodNameKey.String("tools/call"), AttrMCPTool.String(params.Name)}
	if id := sess.ID(); id != "" {
		attrs = append(attrs, semconv.McpSessionIDKey.String(id))
	}
	if ir := sess.InitializeResult(); ir != nil && ir.ProtocolVersion != "" {
		attrs = append(attrs, semconv.McpProtocolVersionKey.String(ir.ProtocolVersion))
	}
	if cn.cfg.url == "" {
		attrs = append(attrs, semconv.NetworkTransportPipe)
	} else if u, err := url.Parse(cn.cfg.url); err == nil {
		attrs = append(attrs, semconv.NetworkTransportTCP, semconv.NetworkProtocolName("http"), semconv.ServerAddress(u.Hostname()))
		port := 443
		if u.Scheme == "http" {
			port = 80
		}
		if p, err := strconv.Atoi(u.Port()); err == nil {
			port = p
		}
		attrs = append(attrs, semconv.ServerPort(port))
	}
	span.SetAttributes(attrs...)
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	if len(carrier) > 0 {
		params.Meta = sdk.Meta{}
		for k, v := range carrier {
			params.Meta[k] = v
		}
	}
}

// AttrMCPTool is the tool's name on its MCP server (gen_ai.tool.name is the name the model
// called, which a declaration's prefix may change).
const AttrMCPTool = attribute.Key("weft.mcp.tool")
