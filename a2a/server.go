package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// The headers through which the HTTP API that mounts the server tells it who is calling; the API
// sets them after authenticating the request and replaces whatever the client sent.
const (
	HeaderUser  = "Weft-A2a-User"
	HeaderAdmin = "Weft-A2a-Admin"
)

// TagA2A marks the threads A2A clients create.
const TagA2A = "a2a"

// ServerOptions configure NewServer.
type ServerOptions struct {
	// Engine returns the engine that runs the threads (asked on every request, so that a server
	// which reloads its definitions can swap engines); required.
	Engine func() *engine.Engine
	// Version is the cards' version.
	Version string
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
	// KeepAlive is the period of comments on an idle stream (default 15s).
	KeepAlive time.Duration
}

// Server serves each agent as an A2A agent under /a2a/{agent}: its card at
// /a2a/{agent}/.well-known/agent-card.json and the JSON-RPC binding at /a2a/{agent}. Mount it
// behind authentication that sets HeaderUser (and HeaderAdmin for admins).
type Server struct {
	opt ServerOptions
	mux *http.ServeMux
}

// NewServer returns the A2A server.
func NewServer(opt ServerOptions) *Server {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.KeepAlive <= 0 {
		opt.KeepAlive = 15 * time.Second
	}
	s := &Server{opt: opt, mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /a2a/{agent}/.well-known/agent-card.json", s.card)
	s.mux.HandleFunc("POST /a2a/{agent}", s.rpc)
	return s
}

// ServeHTTP serves the cards and the JSON-RPC endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// baseURL is the scheme and host the client reached this server at.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// RPCPath is the path of an agent's JSON-RPC endpoint.
func RPCPath(agent string) string { return "/a2a/" + url.PathEscape(agent) }

// CardPath is the path of an agent's card.
func CardPath(agent string) string { return RPCPath(agent) + "/.well-known/agent-card.json" }

func (s *Server) card(w http.ResponseWriter, r *http.Request) {
	agent := r.PathValue("agent")
	card, ok := Card(s.opt.Engine().Registry(), agent, baseURL(r)+RPCPath(agent), s.opt.Version)
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": "not_found", "message": fmt.Sprintf("no agent named %q", agent)}})
		return
	}
	a2asrv.NewStaticAgentCardHandler(card).ServeHTTP(w, r)
}

func (s *Server) rpc(w http.ResponseWriter, r *http.Request) {
	agent := r.PathValue("agent")
	eng := s.opt.Engine()
	if a, ok := eng.Registry().Agent(agent); !ok || a.Internal {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": "not_found", "message": fmt.Sprintf("no agent named %q", agent)}})
		return
	}
	base := baseURL(r)
	h := &handler{eng: eng, agent: agent, user: r.Header.Get(HeaderUser), admin: r.Header.Get(HeaderAdmin) == "true", log: s.opt.Logger,
		fileURL: func(thread, p string) string {
			return base + "/api/threads/" + url.PathEscape(thread) + "/fs" + (&url.URL{Path: p}).EscapedPath()
		}}
	a2asrv.NewJSONRPCHandler(h, a2asrv.WithTransportKeepAlive(s.opt.KeepAlive)).ServeHTTP(flusher{w}, r)
}

// flusher gives the SDK's stream writer, which needs an http.Flusher, a writer that flushes
// through the wrappers the server's middleware put around the connection.
type flusher struct{ http.ResponseWriter }

func (f flusher) Flush() { _ = http.NewResponseController(f.ResponseWriter).Flush() }

func (f flusher) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// handler answers one request's A2A methods for one agent and one user.
type handler struct {
	eng     *engine.Engine
	agent   string
	user    string
	admin   bool
	log     *slog.Logger
	fileURL func(thread, p string) string
}

var _ a2asrv.RequestHandler = (*handler)(nil)

// thread returns a thread of the agent the caller may see; a task or context of another user or
// another agent is not found.
func (h *handler) thread(ctx context.Context, id string) (*weft.Thread, error) {
	t, err := h.eng.Store().Thread(ctx, id)
	if err != nil || (!h.admin && t.UserID != h.user) || t.OriginAgent != h.agent {
		return nil, fmt.Errorf("%w: no task or context %s for agent %s", sdk.ErrTaskNotFound, id, h.agent)
	}
	return t, nil
}

// load folds the thread's recorded events (and its queued messages) into its tasks.
func (h *handler) load(ctx context.Context, threadID string) (*fold, error) {
	return loadFold(ctx, h.eng.Store(), threadID, h.fileURL)
}

// loadFold folds a thread's recorded events (and its queued messages) into its tasks.
func loadFold(ctx context.Context, st weft.Store, threadID string, fileURL func(thread, p string) string) (*fold, error) {
	f := newFold(threadID, fileURL)
	// The queue is read before the events: a run (on any node) that drains a message between the
	// two reads records its event in the same commit, so the message is then in the events; read
	// the other way round, it would be in neither and its task "not found".
	queued, err := st.Queued(ctx, threadID)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var after int64
	for {
		recs, err := st.Events(ctx, threadID, after, 500)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			ev, err := decode(rec)
			if err != nil {
				return nil, err
			}
			if d, ok := ev.Data.(engine.MessageData); ok {
				seen[d.Message.ID] = true
			}
			f.add(ev)
			after = rec.Seq
		}
		if len(recs) < 500 {
			break
		}
	}
	for _, q := range queued {
		if q.Role == weft.RoleUser && !q.Silent && !seen[q.ID] {
			f.submitted(weft.Message{ID: q.ID, Role: q.Role, Content: q.Content, Metadata: q.Metadata, CreatedAt: q.CreatedAt})
		}
	}
	return f, nil
}

// taskFold loads the fold of the thread a task id names and checks that the task exists.
func (h *handler) taskFold(ctx context.Context, id sdk.TaskID) (*fold, error) {
	threadID, _, err := ParseTaskID(id)
	if err != nil {
		return nil, err
	}
	if _, err := h.thread(ctx, threadID); err != nil {
		return nil, err
	}
	f, err := h.load(ctx, threadID)
	if err != nil {
		return nil, err
	}
	if f.tasks[id] == nil {
		return nil, fmt.Errorf("%w: %s", sdk.ErrTaskNotFound, id)
	}
	return f, nil
}

// GetTask returns a task as its thread's events have it.
func (h *handler) GetTask(ctx context.Context, req *sdk.GetTaskRequest) (*sdk.Task, error) {
	f, err := h.taskFold(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	return f.snapshot(req.ID, req.HistoryLength), nil
}

// ListTasks lists the caller's tasks with this agent, newest first: of one context, or of every
// thread A2A clients created (the newest 100 threads).
func (h *handler) ListTasks(ctx context.Context, req *sdk.ListTasksRequest) (*sdk.ListTasksResponse, error) {
	var threads []string
	if req.ContextID != "" {
		if _, err := h.thread(ctx, req.ContextID); err != nil {
			return nil, err
		}
		threads = []string{req.ContextID}
	} else {
		q := weft.ThreadQuery{UserID: h.user, Tag: TagA2A, Limit: 100}
		if h.admin {
			q.UserID = ""
		}
		ts, _, err := h.eng.Store().Threads(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			if t.OriginAgent == h.agent {
				threads = append(threads, t.ID)
			}
		}
	}
	var all []*sdk.Task
	for _, id := range threads {
		f, err := h.load(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, tid := range slices.Backward(f.order) {
			t := f.snapshot(tid, req.HistoryLength)
			if req.Status != "" && t.Status.State != req.Status {
				continue
			}
			if req.StatusTimestampAfter != nil && (t.Status.Timestamp == nil || !t.Status.Timestamp.After(*req.StatusTimestampAfter)) {
				continue
			}
			if !req.IncludeArtifacts {
				t.Artifacts = nil
			}
			all = append(all, t)
		}
	}
	size := req.PageSize
	if size <= 0 || size > 100 {
		size = 50
	}
	offset := 0
	if req.PageToken != "" {
		n, err := strconv.Atoi(req.PageToken)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: pageToken %q is not one this server gave", sdk.ErrInvalidParams, req.PageToken)
		}
		offset = n
	}
	resp := &sdk.ListTasksResponse{Tasks: []*sdk.Task{}, TotalSize: len(all), PageSize: size}
	if offset < len(all) {
		end := min(offset+size, len(all))
		resp.Tasks = all[offset:end]
		if end < len(all) {
			resp.NextPageToken = strconv.Itoa(end)
		}
	}
	return resp, nil
}

// CancelTask stops the run working on the task (Engine.Stop) and returns the task once its run
// has stopped. A task that is not working (finished, or waiting for input) cannot be canceled.
func (h *handler) CancelTask(ctx context.Context, req *sdk.CancelTaskRequest) (*sdk.Task, error) {
	f, err := h.taskFold(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	state := f.tasks[req.ID].task.Status.State
	if state != sdk.TaskStateWorking && state != sdk.TaskStateSubmitted {
		return nil, fmt.Errorf("%w: task %s is %s", sdk.ErrTaskNotCancelable, req.ID, state)
	}
	if err := h.eng.Stop(ctx, f.thread); err != nil {
		if weft.ErrorCode(err) != weft.EConflict {
			return nil, err
		}
		// Not running: its run stopped meanwhile, or its message waits in the queue for one.
	}
	for _, err := range h.follow(ctx, f, req.ID) {
		if err != nil {
			return nil, err
		}
	}
	return f.snapshot(req.ID, nil), nil
}

// SendMessage queues the message in its context's thread (a new thread without a context) and,
// unless the client asked to return at once, waits until its task finishes or needs input.
func (h *handler) SendMessage(ctx context.Context, req *sdk.SendMessageRequest) (sdk.SendMessageResult, error) {
	f, id, err := h.send(ctx, req)
	if err != nil {
		return nil, err
	}
	if req.Config == nil || !req.Config.ReturnImmediately {
		for _, err := range h.follow(ctx, f, id) {
			if err != nil {
				return nil, err
			}
		}
	}
	var hl *int
	if req.Config != nil {
		hl = req.Config.HistoryLength
	}
	return f.snapshot(id, hl), nil
}

// SendStreamingMessage queues the message and streams its task: the task first, then its
// updates until it finishes or needs input.
func (h *handler) SendStreamingMessage(ctx context.Context, req *sdk.SendMessageRequest) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		f, id, err := h.send(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		h.stream(ctx, f, id, yield)
	}
}

// SubscribeToTask streams a task from where it stands: the task as it is now (everything a
// client missed is in it), then the updates after it, none repeated.
func (h *handler) SubscribeToTask(ctx context.Context, req *sdk.SubscribeToTaskRequest) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		f, err := h.taskFold(ctx, req.ID)
		if err != nil {
			yield(nil, err)
			return
		}
		h.stream(ctx, f, req.ID, yield)
	}
}

// stream yields the task as it stands, then its updates until it finishes or needs input.
func (h *handler) stream(ctx context.Context, f *fold, id sdk.TaskID, yield func(sdk.Event, error) bool) {
	if !yield(f.snapshot(id, nil), nil) {
		return
	}
	for u, err := range h.follow(ctx, f, id) {
		if err != nil {
			yield(nil, err)
			return
		}
		if !yield(u, nil) {
			return
		}
	}
}

// final reports whether a task's stream is over: a terminal state, or waiting for input.
func final(s sdk.TaskState) bool {
	return s.Terminal() || s == sdk.TaskStateInputRequired || s == sdk.TaskStateAuthRequired
}

// follow folds the thread's events after the fold's cursor, stored then live, and yields the
// task's updates until it is final.
func (h *handler) follow(ctx context.Context, f *fold, id sdk.TaskID) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		if final(f.tasks[id].task.Status.State) {
			return
		}
		feed, err := h.eng.Follow(ctx, f.thread, f.seq)
		if err != nil {
			yield(nil, err)
			return
		}
		defer feed.Close()
		var buf []engine.Event
		for {
			select {
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			case <-feed.Ready():
			}
			var err error
			buf, err = feed.Next(ctx, buf[:0])
			for _, ev := range buf {
				if ev.Seq == 0 || ev.ThreadID != f.thread {
					continue // live-only deltas are not part of a task: a resumed stream could not repeat them
				}
				for _, u := range f.add(ev) {
					if u.task == id && !yield(u.event, nil) {
						return
					}
				}
				if final(f.tasks[id].task.Status.State) {
					return
				}
			}
			if err != nil {
				yield(nil, err)
				return
			}
		}
	}
}

// send checks and queues the request's message; it returns the thread's fold as it stood just
// before (with the task added, submitted) and the task's id.
func (h *handler) send(ctx context.Context, req *sdk.SendMessageRequest) (*fold, sdk.TaskID, error) {
	m := req.Message
	if m == nil {
		return nil, "", fmt.Errorf("%w: message is required", sdk.ErrInvalidParams)
	}
	if m.Role != sdk.MessageRoleUser {
		return nil, "", fmt.Errorf("%w: message.role must be %s, not %q", sdk.ErrInvalidParams, sdk.MessageRoleUser, string(m.Role))
	}
	if req.Config != nil && req.Config.PushConfig != nil {
		return nil, "", sdk.ErrPushNotificationNotSupported
	}
	nm, err := NewMessage(m)
	if err != nil {
		return nil, "", err
	}
	var threadID string
	var cont sdk.TaskID
	switch {
	case m.TaskID != "":
		t, _, err := ParseTaskID(m.TaskID)
		if err != nil {
			return nil, "", err
		}
		if m.ContextID != "" && m.ContextID != t {
			return nil, "", fmt.Errorf("%w: message.contextId %s is not the context %s of task %s", sdk.ErrInvalidParams, m.ContextID, t, m.TaskID)
		}
		threadID, cont = t, m.TaskID
	case m.ContextID != "":
		threadID = m.ContextID
	}
	if threadID != "" {
		t, err := h.thread(ctx, threadID)
		if err != nil {
			return nil, "", err
		}
		if nm.IfBusy == "" {
			nm.IfBusy = weft.IfBusyOf(t) // the thread's default, as for POST …/messages
		}
	} else {
		t, err := h.eng.CreateThread(ctx, engine.NewThread{Agent: h.agent, UserID: h.user, Tags: []string{TagA2A}})
		if err != nil {
			return nil, "", mapError(err)
		}
		threadID = t.ID
	}
	f, err := h.load(ctx, threadID)
	if err != nil {
		return nil, "", err
	}
	if cont != "" {
		t := f.tasks[cont]
		if t == nil {
			return nil, "", fmt.Errorf("%w: %s", sdk.ErrTaskNotFound, cont)
		}
		if s := t.task.Status.State; s != sdk.TaskStateInputRequired {
			return nil, "", fmt.Errorf("%w: task %s is %s; only a task that needs input takes another message (send without taskId to start a new task in the same context)", sdk.ErrInvalidParams, cont, s)
		}
		nm.Metadata[MetaTask] = string(cont)
	}
	msgID, err := h.eng.Send(ctx, threadID, nm)
	if err != nil {
		return nil, "", mapError(err)
	}
	id := TaskID(threadID, msgID)
	if cont != "" {
		id = cont
	}
	f.submitted(weft.Message{ID: msgID, Role: weft.RoleUser, Content: nm.Content, Metadata: nm.Metadata, CreatedAt: time.Now()})
	return f, id, nil
}

// MetaIfBusy is the metadata key of a user message that says what it does when its context's
// thread is running (weft.IfBusy: queue, reject, interrupt, rollback); without it, the thread's
// default applies.
const MetaIfBusy = "weft_if_busy"

// NewMessage converts an A2A message into a Weft user message (its if_busy from MetaIfBusy): text parts joined by blank lines,
// data parts as JSON text, raw file parts as attachments, URL file parts as a line naming the URL
// (the server fetches nothing).
func NewMessage(m *sdk.Message) (weft.NewMessage, error) {
	nm := weft.NewMessage{Role: weft.RoleUser, Metadata: map[string]any{"a2a_message_id": m.ID}}
	if v, ok := m.Metadata[MetaIfBusy]; ok {
		s, _ := v.(string)
		p := weft.IfBusy(s)
		if s == "" || !p.Valid() {
			return nm, fmt.Errorf("%w: message.metadata.%s: %v is not queue, reject, interrupt or rollback", sdk.ErrInvalidParams, MetaIfBusy, v)
		}
		nm.IfBusy = p
	}
	var texts []string
	for i, p := range m.Parts {
		if p == nil {
			continue
		}
		switch c := p.Content.(type) {
		case sdk.Text:
			if s := string(c); strings.TrimSpace(s) != "" {
				texts = append(texts, s)
			}
		case sdk.Data:
			b, err := json.Marshal(c.Value)
			if err != nil {
				return nm, fmt.Errorf("%w: message.parts[%d].data: %v", sdk.ErrInvalidParams, i, err)
			}
			texts = append(texts, string(b))
		case sdk.Raw:
			name := p.Filename
			if name == "" {
				name = fmt.Sprintf("part-%d", i+1)
			}
			mt := p.MediaType
			if mt == "" {
				mt = weft.DetectMIME(name, c)
			}
			nm.Attachments = append(nm.Attachments, weft.ToolAttachment{Name: name, MimeType: mt, Data: []byte(c)})
		case sdk.URL:
			line := "[file " + string(c)
			if p.MediaType != "" {
				line += " (" + p.MediaType + ")"
			}
			texts = append(texts, line+"]")
		default:
			return nm, fmt.Errorf("%w: message.parts[%d] has no text, data, raw or url", sdk.ErrInvalidParams, i)
		}
	}
	nm.Content = strings.Join(texts, "\n\n")
	if nm.Content == "" && len(nm.Attachments) == 0 {
		return nm, fmt.Errorf("%w: message.parts holds no text and no file", sdk.ErrInvalidParams)
	}
	return nm, nil
}

// mapError gives a Weft error the A2A error of the same meaning.
func mapError(err error) error {
	switch weft.ErrorCode(err) {
	case weft.ENotFound:
		return fmt.Errorf("%w: %w", sdk.ErrTaskNotFound, err)
	case weft.EInvalid, weft.EMissingVariables:
		return fmt.Errorf("%w: %w", sdk.ErrInvalidParams, err)
	case weft.EForbidden:
		return fmt.Errorf("%w: %w", sdk.ErrUnauthorized, err)
	}
	return err
}

// GetTaskPushConfig: push notifications are not supported; clients stream or poll.
func (h *handler) GetTaskPushConfig(context.Context, *sdk.GetTaskPushConfigRequest) (*sdk.PushConfig, error) {
	return nil, sdk.ErrPushNotificationNotSupported
}

// ListTaskPushConfigs: push notifications are not supported.
func (h *handler) ListTaskPushConfigs(context.Context, *sdk.ListTaskPushConfigRequest) (*sdk.ListTaskPushConfigResponse, error) {
	return nil, sdk.ErrPushNotificationNotSupported
}

// CreateTaskPushConfig: push notifications are not supported.
func (h *handler) CreateTaskPushConfig(context.Context, *sdk.PushConfig) (*sdk.PushConfig, error) {
	return nil, sdk.ErrPushNotificationNotSupported
}

// DeleteTaskPushConfig: push notifications are not supported.
func (h *handler) DeleteTaskPushConfig(context.Context, *sdk.DeleteTaskPushConfigRequest) error {
	return sdk.ErrPushNotificationNotSupported
}

// GetExtendedAgentCard: the public card is the whole card.
func (h *handler) GetExtendedAgentCard(context.Context, *sdk.GetExtendedAgentCardRequest) (*sdk.AgentCard, error) {
	return nil, sdk.ErrExtendedCardNotConfigured
}
