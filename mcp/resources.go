package mcp

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// Resource URIs: a thread's transcript and the files of its filesystem.
const (
	resourceScheme     = "weft://threads/"
	transcriptTemplate = resourceScheme + "{thread}/transcript"
	fileTemplate       = resourceScheme + "{thread}/files/{+path}"
)

// Listing bounds: resources/list names the transcripts and files of the user's most recent
// threads, at most this many of each; older ones are read by URI (the templates).
const (
	listThreads        = 50
	listFilesPerThread = 50
	// maxResourceBytes bounds one file read through resources/read.
	maxResourceBytes = 16 << 20
)

// resources serves threads as MCP resources, each user seeing only their own.
type resources struct {
	eng    *engine.Engine
	userOf func(sdk.Request) (user string, scoped bool)
}

// addResources registers the two resource templates and a receiving middleware answering
// resources/list with the caller's threads (the SDK's own listing knows only static resources).
func addResources(s *sdk.Server, r *resources) {
	s.AddResourceTemplate(&sdk.ResourceTemplate{Name: "transcript", URITemplate: transcriptTemplate, MIMEType: "text/markdown",
		Description: "The transcript of a Weft thread: its top-level messages and tool calls, secrets redacted."}, r.read)
	s.AddResourceTemplate(&sdk.ResourceTemplate{Name: "file", URITemplate: fileTemplate,
		Description: "A file of a Weft thread's filesystem (PATH without its leading slash)."}, r.read)
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method != "resources/list" {
				return next(ctx, method, req)
			}
			return r.list(ctx, req)
		}
	})
}

// list names the caller's most recent threads' transcripts and files.
func (r *resources) list(ctx context.Context, req sdk.Request) (*sdk.ListResourcesResult, error) {
	user, _ := r.userOf(req)
	st := r.eng.Store()
	threads, _, err := st.Threads(ctx, weft.ThreadQuery{UserID: user, Limit: listThreads})
	if err != nil {
		return nil, err
	}
	out := &sdk.ListResourcesResult{Resources: []*sdk.Resource{}}
	for _, t := range threads {
		label := t.Label
		if label == "" {
			label = t.Agent
		}
		out.Resources = append(out.Resources, &sdk.Resource{URI: resourceScheme + t.ID + "/transcript", Name: t.ID + "/transcript",
			Title: "Transcript of " + label + " (" + t.ID + ")", MIMEType: "text/markdown"})
		files, err := st.Files().Find(ctx, t.ID, "/**")
		if err != nil {
			continue
		}
		for i, f := range files {
			if i == listFilesPerThread {
				break
			}
			if f.IsDir {
				continue
			}
			out.Resources = append(out.Resources, &sdk.Resource{URI: fileURI(t.ID, f.Path), Name: t.ID + f.Path,
				MIMEType: f.MimeType, Size: f.Size, Description: f.Description})
		}
	}
	return out, nil
}

// fileURI is the resource URI of a thread's file (each path segment escaped).
func fileURI(threadID, path string) string {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return resourceScheme + threadID + "/files/" + strings.Join(segs, "/")
}

// parseURI splits a resource URI into its thread and, for a file, its absolute path.
func parseURI(uri string) (thread, path string, transcript bool, err error) {
	rest, ok := strings.CutPrefix(uri, resourceScheme)
	if !ok {
		return "", "", false, fmt.Errorf("not a Weft resource URI: %q", uri)
	}
	thread, rest, _ = strings.Cut(rest, "/")
	if thread == "" {
		return "", "", false, fmt.Errorf("resource URI %q names no thread", uri)
	}
	if rest == "transcript" {
		return thread, "", true, nil
	}
	p, ok := strings.CutPrefix(rest, "files/")
	if !ok || p == "" {
		return "", "", false, fmt.Errorf("resource URI %q is neither a transcript nor a file", uri)
	}
	if p, err = url.PathUnescape(p); err != nil {
		return "", "", false, fmt.Errorf("resource URI %q: %w", uri, err)
	}
	return thread, "/" + p, false, nil
}

// read returns a transcript or a file of a thread the caller may see; anything else (another
// user's thread, a missing file) is "resource not found", so that existence is not revealed.
func (r *resources) read(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	threadID, path, transcript, err := parseURI(uri)
	if err != nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	if !r.visible(ctx, req, threadID) {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	redact, err := r.eng.Redactor(ctx, threadID)
	if err != nil {
		return nil, err
	}
	if transcript {
		text, err := r.transcript(ctx, threadID)
		if err != nil {
			return nil, err
		}
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: redact(text)}}}, nil
	}
	fs := r.eng.Store().Files()
	fi, err := fs.Stat(ctx, threadID, path)
	if err != nil || fi.IsDir {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	if fi.Size > maxResourceBytes {
		return nil, fmt.Errorf("%s is %d bytes, over the %d that resources/read returns", uri, fi.Size, maxResourceBytes)
	}
	data, err := fs.ReadFile(ctx, threadID, path)
	if err != nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	c := &sdk.ResourceContents{URI: uri, MIMEType: fi.MimeType}
	if isText(fi.MimeType, data) {
		c.Text = redact(string(data))
	} else {
		c.Blob = data
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{c}}, nil
}

// visible: a local (unscoped) server sees every thread; otherwise a user sees their threads and
// those threads' descendants.
func (r *resources) visible(ctx context.Context, req sdk.Request, threadID string) bool {
	user, scoped := r.userOf(req)
	st := r.eng.Store()
	t, err := st.Thread(ctx, threadID)
	if err != nil {
		return false
	}
	if !scoped || t.UserID == user {
		return true
	}
	if t.RootID != "" && t.RootID != t.ID {
		root, err := st.Thread(ctx, t.RootID)
		return err == nil && root.UserID == user
	}
	return false
}

// isText: text/*, JSON, XML, YAML, or unknown bytes that are valid UTF-8 without NULs.
func isText(mt string, data []byte) bool {
	switch {
	case strings.HasPrefix(mt, "text/"), strings.HasSuffix(mt, "json"), strings.HasSuffix(mt, "xml"), strings.HasSuffix(mt, "yaml"):
		return utf8.Valid(data)
	case mt == "" || mt == "application/octet-stream":
		return utf8.Valid(data) && !strings.ContainsRune(string(data), 0)
	}
	return false
}

// transcript renders a thread's top-level messages as Markdown: a heading per message, its text,
// its tool calls and attachments.
func (r *resources) transcript(ctx context.Context, threadID string) (string, error) {
	st := r.eng.Store()
	t, err := st.Thread(ctx, threadID)
	if err != nil {
		return "", err
	}
	msgs, err := st.Messages(ctx, threadID, weft.MessageQuery{Limit: -1, ExcludeSilent: true})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Thread %s (agent %s)\n", t.ID, t.Agent)
	for _, m := range msgs {
		head := string(m.Role)
		if m.Name != "" {
			head += " " + m.Name
		}
		if m.Role == weft.RoleTool && m.ToolStatus != "" {
			head += " (" + string(m.ToolStatus) + ")"
		}
		fmt.Fprintf(&b, "\n## %s\n", head)
		if m.Content != "" {
			b.WriteString("\n" + m.Content + "\n")
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "\n- calls `%s` with `%s`\n", c.Name, c.Arguments)
		}
		for _, a := range m.Attachments {
			fmt.Fprintf(&b, "\n- attachment %s (%s): %s\n", a.Name, a.MimeType, fileURI(threadID, a.Path))
		}
	}
	return b.String(), nil
}
