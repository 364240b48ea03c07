package declared

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/weft-agents/weft"
)

// maxHTTPResponse bounds an http tool's response body; a longer one is refused, not cut.
const maxHTTPResponse = 8 << 20

// httpClient sends http tools' requests. It follows redirects only within the tool's own host: the
// declared headers (often a secret key) must never reach another host, and Go's client forwards
// custom headers to any redirect target (it strips only Authorization and cookies there).
var httpClient = &http.Client{
	CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if from := via[0].URL; req.URL.Scheme != from.Scheme || req.URL.Host != from.Host {
			return &crossHostRedirect{from: from.Scheme + "://" + from.Host, to: req.URL.Scheme + "://" + req.URL.Host}
		}
		return nil
	},
}

// crossHostRedirect refuses a redirect that leaves the tool's host.
type crossHostRedirect struct{ from, to string }

func (e *crossHostRedirect) Error() string {
	return fmt.Sprintf("the tool's URL redirected from %s to %s; an http tool follows redirects only within its own host, "+
		"so its headers never reach another (point the tool at the final URL)", e.from, e.to)
}

// HTTP is the handler of a declared http tool (t.HTTP set): POST (the default) sends the
// arguments as a JSON body, GET as query parameters; ${env:NAME} in the URL and header values is
// resolved from the thread's variables. A 2xx response's body is the result (a JSON object with a
// status key as a weft.ToolResult, anything else as text); another status is an error quoting the
// body's start. Redirects are followed within the tool's host only, and a body over 8 MiB is
// refused.
func HTTP(t *weft.Tool, o Options) weft.ToolHandler {
	return weft.ToolFunc(func(ctx context.Context, st weft.State, args json.RawMessage) (weft.ToolResult, error) {
		return runHTTP(ctx, st, t, o, args)
	})
}

func runHTTP(ctx context.Context, st weft.State, t *weft.Tool, o Options, args json.RawMessage) (weft.ToolResult, error) {
	h := t.HTTP
	if t.Timeout == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	u, err := expand(ctx, st, h.URL)
	if err != nil {
		return weft.ToolResult{}, err
	}
	method := strings.ToUpper(h.Method)
	if method == "" {
		method = http.MethodPost
	}
	var body io.Reader
	var argHeaders http.Header
	if h.Placed() {
		if u, body, argHeaders, err = placeArgs(h, u, args); err != nil {
			return weft.ToolResult{}, err
		}
	} else if method == http.MethodGet {
		pu, err := url.Parse(u)
		if err != nil {
			return weft.ToolResult{}, fmt.Errorf("invalid url: %w", err)
		}
		// Numbers keep their JSON spelling: a query value is what the body would have held.
		var obj map[string]any
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		if err := dec.Decode(&obj); err != nil && len(bytes.TrimSpace(args)) > 0 {
			return weft.ToolResult{}, fmt.Errorf("the arguments are not a JSON object: %w", err)
		}
		q := pu.Query()
		for k, v := range obj {
			switch x := v.(type) {
			case string:
				q.Set(k, x)
			case nil:
			default:
				b, _ := json.Marshal(x)
				q.Set(k, strings.Trim(string(b), `"`))
			}
		}
		pu.RawQuery = q.Encode()
		u = pu.String()
	} else {
		if len(bytes.TrimSpace(args)) == 0 {
			args = json.RawMessage("{}")
		}
		body = bytes.NewReader(args)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return weft.ToolResult{}, fmt.Errorf("invalid request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range argHeaders {
		req.Header[k] = vs
	}
	for k, v := range h.Headers {
		ev, err := expand(ctx, st, v)
		if err != nil {
			return weft.ToolResult{}, err
		}
		req.Header.Set(k, ev)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		var cross *crossHostRedirect
		switch {
		case errors.As(err, &cross):
			return weft.ToolResult{}, cross
		case ctx.Err() == context.DeadlineExceeded:
			return weft.ToolResult{}, fmt.Errorf("request timed out")
		}
		cause := err
		if u := errors.Unwrap(err); u != nil {
			cause = u
		}
		return weft.ToolResult{}, fmt.Errorf("request failed: %s", o.redact(cause.Error()))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxHTTPResponse+1))
	if err != nil {
		return weft.ToolResult{}, fmt.Errorf("reading the response: %w", err)
	}
	if len(data) > maxHTTPResponse {
		return weft.ToolResult{}, fmt.Errorf("the response is over the %s limit of an http tool; nothing of it was kept",
			weft.ByteSize(maxHTTPResponse))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		snippet := data
		if len(snippet) > 1024 {
			snippet = snippet[:1024]
		}
		return weft.ToolResult{}, fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(snippet)))
	}
	return parseToolOutput(data), nil
}

// placeArgs builds an OpenAPI operation's request from the arguments: each argument In names goes
// into the URL's `{name}` (path-escaped), the query or a header; the Body argument is the JSON
// body; the rest are not sent. A path parameter without a value is an error naming it.
func placeArgs(h *weft.HTTPSpec, u string, args json.RawMessage) (string, io.Reader, http.Header, error) {
	var obj map[string]json.RawMessage
	if len(bytes.TrimSpace(args)) > 0 {
		if err := json.Unmarshal(args, &obj); err != nil {
			return "", nil, nil, fmt.Errorf("the arguments are not a JSON object: %w", err)
		}
	}
	// text is a value as it goes into a URL or a header: strings as they are, other JSON as written.
	text := func(raw json.RawMessage) (string, bool) {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s, true
		}
		t := strings.TrimSpace(string(raw))
		return t, t != "" && t != "null"
	}
	for arg, where := range h.In {
		if where != "path" {
			continue
		}
		v, ok := text(obj[arg])
		if !ok {
			return "", nil, nil, fmt.Errorf("missing the path parameter %q", arg)
		}
		u = strings.ReplaceAll(u, "{"+arg+"}", url.PathEscape(v))
	}
	pu, err := url.Parse(u)
	if err != nil {
		return "", nil, nil, fmt.Errorf("invalid url: %w", err)
	}
	q := pu.Query()
	hdr := http.Header{}
	for arg, where := range h.In {
		v, ok := text(obj[arg])
		if !ok {
			continue
		}
		switch where {
		case "query":
			q.Set(arg, v)
		case "header":
			hdr.Set(arg, v)
		}
	}
	pu.RawQuery = q.Encode()
	var body io.Reader
	if raw, ok := obj[h.Body]; ok && h.Body != "" {
		body = bytes.NewReader(raw)
	}
	return pu.String(), body, hdr, nil
}
