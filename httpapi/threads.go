package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// createThreadBody is the body of POST /api/threads.
type createThreadBody struct {
	Agent      string                  `json:"agent"`
	Env        map[string]string       `json:"env"`
	EnvTypes   map[string]weft.VarType `json:"env_types"`
	Arguments  map[string]any          `json:"arguments"`
	Tags       []string                `json:"tags"`
	Properties map[string]any          `json:"properties"`
	Label      string                  `json:"label"`
	Message    *messageBody            `json:"message"`
	// IfBusy is the thread's default double-texting policy (weft.PropertyIfBusy).
	IfBusy weft.IfBusy `json:"if_busy"`
	// Budget caps the thread's spend (its subagents' included), replacing its agent's.
	Budget *weft.Budget `json:"budget"`
}

func (s *Server) createThread(w http.ResponseWriter, r *http.Request, p *principal) error {
	var b createThreadBody
	if err := decodeJSON(w, r, maxMessageBody, &b, false); err != nil {
		return err
	}
	if b.Agent == "" {
		return validation("agent", "an agent name is required")
	}
	for name, t := range b.EnvTypes {
		if t != weft.VarText && t != weft.VarSecret {
			return validation("env_types."+name, "type must be text or secret")
		}
	}
	if !b.IfBusy.Valid() {
		return validation("if_busy", "if_busy is queue, reject, interrupt or rollback")
	}
	if b.IfBusy != "" {
		b.Properties = maps.Clone(b.Properties)
		if b.Properties == nil {
			b.Properties = map[string]any{}
		}
		b.Properties[weft.PropertyIfBusy] = string(b.IfBusy)
	}
	var nm *weft.NewMessage
	if b.Message != nil {
		m, err := b.Message.toNew()
		if err != nil {
			return err
		}
		nm = &m
	}
	eng := s.engine()
	if b.Budget != nil {
		if field, problem := b.Budget.Check(); problem != "" {
			return validation("budget."+field, problem)
		}
	}
	t, err := eng.CreateThread(r.Context(), engine.NewThread{Agent: b.Agent, UserID: p.userID, Env: b.Env,
		EnvTypes: b.EnvTypes, Arguments: b.Arguments, Tags: b.Tags, Properties: b.Properties, Label: b.Label, Budget: b.Budget})
	if err != nil {
		return err
	}
	out := map[string]any{"thread": t}
	if nm != nil {
		id, err := eng.Send(r.Context(), t.ID, *nm)
		if err != nil {
			return err
		}
		out["message_id"] = id
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// validation is a 400 validation_failed error on one field.
func validation(path, msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: codeValidation, message: path + ": " + msg,
		details: map[string]any{"errors": []map[string]string{{"path": path, "message": msg}}}}
}

// costSortWindow is how many matching threads sort=cost orders: the most recently active ones.
const costSortWindow = 1000

// listedThread is a thread in a list, with its spend when the query asks for it.
type listedThread struct {
	*weft.Thread
	// CostTotal is the thread's spend with its descendants' (with_cost or sort=cost).
	CostTotal *float64 `json:"cost_total,omitempty"`
}

func (s *Server) listThreads(w http.ResponseWriter, r *http.Request, p *principal) error {
	q := &query{r: r}
	limit, offset := q.page(50)
	order := q.oneOf("sort", "activity", "activity", "created", "oldest", "cost")
	withCost := q.bool("with_cost") || order == "cost"
	tq := weft.ThreadQuery{Agent: q.str("agent"), Tag: q.str("tag"), ParentID: q.str("parent"), Search: q.str("search"),
		ForkedFrom: q.str("forked_from"),
		Status:     weft.ThreadStatus(q.str("status")), Sort: order, Limit: limit, Offset: offset}
	if order == "cost" {
		tq.Sort, tq.Limit, tq.Offset = "activity", costSortWindow, 0
	}
	tq.RootsOnly = !q.bool("include_children")
	if q.err != nil {
		return q.err
	}
	if !p.admin {
		tq.UserID = p.userID
	}
	if tq.ParentID != "" {
		if _, err := s.visibleThread(r.Context(), p, tq.ParentID); err != nil {
			return err
		}
		tq.UserID = ""
	}
	threads, total, err := s.engine().Store().Threads(r.Context(), tq)
	if err != nil {
		return err
	}
	items := make([]listedThread, len(threads))
	for i, t := range threads {
		items[i].Thread = t
		if withCost {
			c, err := s.costOf(r, t, true)
			if err != nil {
				return err
			}
			items[i].CostTotal = &c.CostTotal
		}
	}
	if order == "cost" {
		sort.SliceStable(items, func(i, j int) bool { return *items[i].CostTotal > *items[j].CostTotal })
		total = len(items)
		pg := pageOf(items, limit, offset)
		items = pg.Items
	}
	for _, it := range items {
		if err := s.redactThread(r.Context(), it.Thread); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, list[listedThread]{Items: items, Total: total, HasMore: offset+len(items) < total})
	return nil
}

func (s *Server) getThread(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	st := s.engine().Store()
	count, err := st.CountMessages(r.Context(), t.ID, weft.MessageQuery{})
	if err != nil {
		return err
	}
	kids, _, err := st.Threads(r.Context(), weft.ThreadQuery{ParentID: t.ID, Limit: maxListLimit})
	if err != nil {
		return err
	}
	children := make([]map[string]any, len(kids))
	for i, k := range kids {
		children[i] = map[string]any{"id": k.ID, "agent": k.Agent, "label": k.Label, "status": k.Status}
	}
	// The thread's forks the caller may see: its own (all for an admin).
	fq := weft.ThreadQuery{ForkedFrom: t.ID, Sort: "oldest", Limit: maxListLimit}
	if !p.admin {
		fq.UserID = p.userID
	}
	fks, _, err := st.Threads(r.Context(), fq)
	if err != nil {
		return err
	}
	forks := make([]map[string]any, len(fks))
	for i, f := range fks {
		forks[i] = map[string]any{"id": f.ID, "message": f.ForkedFrom.Message, "before": f.ForkedFrom.Before,
			"user_id": f.UserID, "created_at": f.CreatedAt}
	}
	c, err := s.costOf(r, t, true)
	if err != nil {
		return err
	}
	if err := s.redactThread(r.Context(), t); err != nil {
		return err
	}
	// The last stop and the last run's context report, found among the newest events without
	// reading the others' payloads (a message of 20 MiB among them).
	seq, newest, err := st.LastEvents(r.Context(), t.ID, stopLookback, append([]string{"run_stopped", "run_started"}, contextReports...)...)
	if err != nil {
		return err
	}
	lastStop, lastReport := lastOf(newest, isStop), lastOf(newest, isContextReport)
	if started := lastOf(newest, func(typ string) bool { return typ == "run_started" }); lastReport != nil && started != nil && lastReport.Seq < started.Seq {
		lastReport = nil // an earlier run's
	}
	stop, err := stopOf(t.ID, lastStop)
	if err != nil {
		return err
	}
	lastContext, err := contextOf(t.ID, lastReport)
	if err != nil {
		return err
	}
	if stop == nil && t.StopReason != "" && !t.StopReason.OK() {
		// A run of an engine that records no events (weft run, chat): its error is in its logs.
		if stop, err = loggedStop(r.Context(), st, t); err != nil {
			return err
		}
	}
	if stop != nil {
		red, err := s.engine().Redactor(r.Context(), t.ID)
		if err != nil {
			return err
		}
		stop["error"] = red(stop["error"].(string))
	}
	out, err := merge(t, map[string]any{"cost_total": c.CostTotal, "message_count": count, "children": children,
		"forks": forks, "event_seq": seq, "last_stop": stop, "last_context": lastContext})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// stopLookback is how many of a thread's newest events GET /api/threads/{id} looks for its last
// stop among: a run's stop is among its last events, so a longer look only costs reads.
const stopLookback = 256

// contextReports are the types of the events that say how a request was kept inside the model's
// window.
var contextReports = []string{"context_trimmed", "context_summarized", "context_summary_failed"}

// lastOf returns the newest of evs (in seq order) whose type accept accepts; nil when none is.
func lastOf(evs []weft.EventRecord, accept func(typ string) bool) *weft.EventRecord {
	for i := len(evs) - 1; i >= 0; i-- {
		if accept(evs[i].Type) {
			return &evs[i]
		}
	}
	return nil
}

func isStop(typ string) bool { return typ == "run_stopped" }

// isContextReport accepts the events that say how a request was kept inside the model's window.
func isContextReport(typ string) bool { return slices.Contains(contextReports, typ) }

// contextOf is last_context: the last run's newest context report, its data with its "type" and
// "at", so that a page shows how the run kept its requests inside the model's window without
// replaying the event log; nil without one.
func contextOf(threadID string, ev *weft.EventRecord) (map[string]any, error) {
	if ev == nil {
		return nil, nil
	}
	var d map[string]any
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return nil, fmt.Errorf("thread %s: event %d: %w", threadID, ev.Seq, err)
	}
	d["type"], d["at"] = ev.Type, ev.CreatedAt
	return d, nil
}

// stopOf is last_stop: what a run_stopped event says — {run_id, reason, side, steps, error, at}
// — so that a page can show why and at which step the last run ended; nil without one.
func stopOf(threadID string, ev *weft.EventRecord) (map[string]any, error) {
	if ev == nil {
		return nil, nil
	}
	var d struct {
		RunID  string `json:"run_id"`
		Reason string `json:"reason"`
		Side   string `json:"side"`
		Steps  int    `json:"steps"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return nil, fmt.Errorf("thread %s: event %d: %w", threadID, ev.Seq, err)
	}
	return map[string]any{"run_id": d.RunID, "reason": d.Reason, "side": d.Side, "steps": d.Steps,
		"error": d.Error, "at": ev.CreatedAt}, nil
}

// loggedStop is last_stop for a thread whose failed run recorded no run_stopped event (the
// engine of weft run and weft chat records none): its reason from the thread, its error the
// newest error logged by the thread's newest run (a model call, hook or tool error), with
// "from": "log" and the log's id; no side or step count, which only the event has. Nil when the
// thread has no logs.
func loggedStop(ctx context.Context, st weft.Store, t *weft.Thread) (map[string]any, error) {
	logs, err := st.Logs(ctx, t.ID, weft.LogQuery{MaxDepth: 1 << 20})
	if err != nil || len(logs) == 0 {
		return nil, err
	}
	run := logs[len(logs)-1].RunID
	stop := map[string]any{"run_id": run, "reason": t.StopReason, "error": "",
		"at": t.LastActivityAt, "from": "log"}
	for i := len(logs) - 1; i >= 0 && logs[i].RunID == run; i-- {
		if logs[i].Error != "" {
			stop["error"], stop["log_id"] = logs[i].Error, logs[i].ID
			break
		}
	}
	return stop, nil
}

// merge returns v's JSON object with extra keys added.
func merge(v any, extra map[string]any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	for k, x := range extra {
		out[k] = x
	}
	return out, nil
}

// patchThreadBody is the body of PATCH /api/threads/{id}.
type patchThreadBody struct {
	Tags       []string       `json:"tags"`
	Properties map[string]any `json:"properties"`
	// Budget replaces the thread's budget; a thread paused at its old one goes on.
	Budget *weft.Budget `json:"budget"`
	// IfBusy replaces the thread's default double-texting policy (weft.PropertyIfBusy).
	IfBusy weft.IfBusy `json:"if_busy"`
	Env    *struct {
		Set map[string]struct {
			Value string       `json:"value"`
			Type  weft.VarType `json:"type"`
		} `json:"set"`
		Delete []string `json:"delete"`
	} `json:"env"`
}

func (s *Server) patchThread(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	var b patchThreadBody
	if err := decodeJSON(w, r, maxJSONBody, &b, false); err != nil {
		return err
	}
	if !b.IfBusy.Valid() {
		return validation("if_busy", "if_busy is queue, reject, interrupt or rollback")
	}
	if b.IfBusy != "" {
		// Kept among the properties, which a patch replaces whole: those given, else the thread's.
		props := b.Properties
		if props == nil {
			props = t.Properties
		}
		b.Properties = maps.Clone(props)
		if b.Properties == nil {
			b.Properties = map[string]any{}
		}
		b.Properties[weft.PropertyIfBusy] = string(b.IfBusy)
	}
	st := s.engine().Store()
	if b.Env != nil {
		var vals []weft.EnvValue
		for name, v := range b.Env.Set {
			typ := v.Type
			if typ == "" {
				typ = weft.VarSecret
			}
			if typ != weft.VarText && typ != weft.VarSecret {
				return validation("env.set."+name+".type", "type must be text or secret")
			}
			vals = append(vals, weft.EnvValue{Name: name, Value: v.Value, Type: typ})
		}
		for _, name := range b.Env.Delete {
			vals = append(vals, weft.EnvValue{Name: name, Delete: true})
		}
		if len(vals) > 0 {
			if err := st.SetEnv(r.Context(), weft.EnvThread, t.ID, vals); err != nil {
				return err
			}
		}
	}
	if b.Budget != nil {
		if field, problem := b.Budget.Check(); problem != "" {
			return validation("budget."+field, problem)
		}
		// Raising a paused thread's budget lets it go on (at once: the server schedules it).
		if err := s.engine().SetBudget(r.Context(), t.ID, *b.Budget); err != nil {
			return err
		}
	}
	if b.Tags != nil || b.Properties != nil {
		if err := st.Tx(r.Context(), t.ID, nil, func(tx weft.Tx) error {
			return tx.UpdateThread(weft.ThreadPatch{Tags: b.Tags, Properties: b.Properties})
		}); err != nil {
			return err
		}
	}
	t, err = st.Thread(r.Context(), t.ID)
	if err != nil {
		return err
	}
	s.engine().Subscribers().Announce(engine.Event{Type: "thread_updated", ThreadID: t.ID, RootID: t.RootID})
	if err := s.redactThread(r.Context(), t); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

func (s *Server) deleteThread(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	eng := s.engine()
	if err := eng.Stop(r.Context(), t.ID); err != nil && weft.ErrorCode(err) != weft.EConflict && weft.ErrorCode(err) != weft.ENotFound {
		return err
	}
	if err := eng.Store().DeleteThread(r.Context(), t.ID); err != nil {
		return err
	}
	owner := t.UserID
	if !p.admin {
		owner = p.userID // a user deletes only threads of its own trees
	}
	s.engine().Subscribers().Announce(engine.Event{Type: "thread_deleted", ThreadID: t.ID, RootID: t.RootID, Data: engine.Fields{"user_id": owner}})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// messageBody is a posted message.
type messageBody struct {
	Content     string           `json:"content"`
	Role        weft.Role        `json:"role"`
	Attachments []attachmentBody `json:"attachments"`
	Silent      bool             `json:"silent"`
	// IfBusy is what happens to the message while a run of the thread is in progress; the
	// thread's default when empty.
	IfBusy weft.IfBusy `json:"if_busy"`
}

// attachmentBody is a posted attachment; data is base64.
type attachmentBody struct {
	Name     string `json:"name"`
	MimeType string `json:"mime_type"`
	Data     []byte `json:"data"`
}

func (b *messageBody) toNew() (weft.NewMessage, error) {
	if b.Content == "" && len(b.Attachments) == 0 {
		return weft.NewMessage{}, validation("content", "a message needs content or attachments")
	}
	switch b.Role {
	case "", weft.RoleUser, weft.RoleAssistant, weft.RoleSystem:
	default:
		return weft.NewMessage{}, validation("role", fmt.Sprintf("role must be user, assistant or system, not %q", b.Role))
	}
	if !b.IfBusy.Valid() {
		return weft.NewMessage{}, validation("if_busy", fmt.Sprintf("if_busy is queue, reject, interrupt or rollback, not %q", b.IfBusy))
	}
	m := weft.NewMessage{Role: b.Role, Content: b.Content, Silent: b.Silent, IfBusy: b.IfBusy}
	for i, a := range b.Attachments {
		if a.Name == "" || len(a.Data) == 0 {
			return weft.NewMessage{}, validation(fmt.Sprintf("attachments[%d]", i), "an attachment needs a name and data (base64)")
		}
		mt := a.MimeType
		if mt == "" {
			mt = http.DetectContentType(a.Data)
		}
		att := weft.ToolAttachment{Name: a.Name, MimeType: mt, Data: a.Data}
		if isImage(mt, a.Data) {
			data, fitted, w, h, err := fitImage(a.Data, mt)
			if err != nil {
				return weft.NewMessage{}, validation(fmt.Sprintf("attachments[%d]", i), err.Error())
			}
			if fitted != mt && fitted == "image/png" {
				att.Name = strings.TrimSuffix(att.Name, path.Ext(att.Name)) + ".png"
			}
			att.Data, att.MimeType, att.Width, att.Height = data, fitted, w, h
		}
		m.Attachments = append(m.Attachments, att)
	}
	return m, nil
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	var b messageBody
	if err := decodeJSON(w, r, maxMessageBody, &b, false); err != nil {
		return err
	}
	m, err := b.toNew()
	if err != nil {
		return err
	}
	if t.Status == weft.ThreadTerminated {
		return &apiError{status: http.StatusConflict, code: codeTerminated, message: "thread " + t.ID + " is terminated"}
	}
	if m.IfBusy == "" {
		m.IfBusy = weft.IfBusyOf(t)
	}
	id, err := s.engine().Send(r.Context(), t.ID, m)
	if err != nil {
		return s.busyRun(r.Context(), t.ID, err)
	}
	status := "started"
	if t.Status == weft.ThreadRunning {
		status = "queued"
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"status": status, "queue_id": id, "message_id": id})
	return nil
}

// busyRun completes the refusal of a message with if_busy reject, when the run in progress runs
// on another node, with that run's id: the newest run_started's among the thread's recent events.
func (s *Server) busyRun(ctx context.Context, threadID string, err error) error {
	var be *weft.BusyError
	if !errors.As(err, &be) || be.RunID != "" {
		return err
	}
	_, evs, serr := s.engine().Store().LastEvents(ctx, threadID, stopLookback, "run_started")
	if serr != nil || len(evs) == 0 {
		return err
	}
	var started struct {
		RunID string `json:"run_id"`
	}
	if json.Unmarshal(evs[0].Data, &started) == nil {
		be.RunID = started.RunID
	}
	return err
}

func (s *Server) listMessages(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	q := &query{r: r}
	limit, offset := q.page(100)
	order := q.oneOf("order", "asc", "asc", "desc")
	mq := weft.MessageQuery{Limit: limit, Offset: offset, Desc: order == "desc", ExcludeSilent: !q.bool("include_silent"),
		MaxDepth: q.int("depth", 0, 0, 1<<20), AfterSeq: q.int64("after_seq")}
	if q.err != nil {
		return q.err
	}
	// The store reads the page alone, and counts the rows only when the page does not tell their
	// number (it is full, or empty past its start): a page of a long thread costs what a page
	// costs (it used to read every message, 67 ms a page at 10,000; BenchmarkLongThreadRead).
	st := s.engine().Store()
	items, err := st.Messages(r.Context(), t.ID, mq)
	if err != nil {
		return err
	}
	total := offset + len(items)
	if len(items) == limit || len(items) == 0 && offset > 0 {
		n, err := st.CountMessages(r.Context(), t.ID, mq)
		if err != nil {
			return err
		}
		if len(items) == 0 {
			total = n
		} else {
			total = max(total, n) // a message deleted between the two reads is in the page only
		}
	}
	red, err := s.engine().Redactor(r.Context(), t.ID)
	if err != nil {
		return err
	}
	pg := list[weft.Message]{Items: items, Total: total, HasMore: offset+len(items) < total}
	for i := range pg.Items {
		redactMessage(&pg.Items[i], red)
	}
	writeJSON(w, http.StatusOK, pg)
	return nil
}

// redactMessage replaces secret values in a message's text.
func redactMessage(m *weft.Message, red func(string) string) {
	m.Content = red(m.Content)
	m.Reasoning = red(m.Reasoning)
	for i := range m.ToolCalls {
		m.ToolCalls[i].Arguments = red(m.ToolCalls[i].Arguments)
	}
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	m, err := s.engine().Store().Message(r.Context(), t.ID, r.PathValue("mid"))
	if err != nil {
		return err
	}
	red, err := s.engine().Redactor(r.Context(), t.ID)
	if err != nil {
		return err
	}
	redactMessage(&m, red)
	writeJSON(w, http.StatusOK, m)
	return nil
}

func (s *Server) stopThread(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := s.engine().Stop(r.Context(), t.ID); err != nil && weft.ErrorCode(err) != weft.EConflict {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"stopped": true})
	return nil
}

func (s *Server) continueThread(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	var b struct {
		Side weft.Side `json:"side"`
	}
	if err := decodeJSON(w, r, maxJSONBody, &b, true); err != nil {
		return err
	}
	if b.Side != "" && b.Side != "a" && b.Side != "b" {
		return validation("side", `side must be "a" or "b"`)
	}
	switch t.Status {
	case weft.ThreadTerminated:
		return &apiError{status: http.StatusConflict, code: codeTerminated, message: "thread " + t.ID + " is terminated"}
	case weft.ThreadRunning:
		return &apiError{status: http.StatusConflict, code: codeRunning, message: "thread " + t.ID + " is running"}
	}
	if err := s.engine().ContinueAsync(r.Context(), t.ID, b.Side); err != nil {
		if weft.ErrorCode(err) == weft.EConflict && !isTerminated(err) {
			return &apiError{status: http.StatusConflict, code: codeRunning, message: err.Error()}
		}
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"status": "started"})
	return nil
}

func isTerminated(err error) bool {
	_, code := statusOf(err)
	return code == codeTerminated
}

func (s *Server) terminateThread(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	eng := s.engine()
	if err := eng.Terminate(r.Context(), t.ID); err != nil {
		return err
	}
	t, err = eng.Store().Thread(r.Context(), t.ID)
	if err != nil {
		return err
	}
	s.engine().Subscribers().Announce(engine.Event{Type: "thread_updated", ThreadID: t.ID, RootID: t.RootID})
	if err := s.redactThread(r.Context(), t); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

// redactThread replaces the thread's secret values in its preview and label.
func (s *Server) redactThread(ctx context.Context, t *weft.Thread) error {
	if t.Preview == "" && t.Label == "" {
		return nil
	}
	red, err := s.engine().Redactor(ctx, t.ID)
	if err != nil {
		return err
	}
	t.Preview, t.Label = red(t.Preview), red(t.Label)
	return nil
}

// threadTasks lists a thread's A2A tasks (Options.A2ATasks): {items, a2a}, items as the A2A
// JSON of tasks, oldest first; a2a tells whether A2A clients talk to the thread.
func (s *Server) threadTasks(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	if s.opt.A2ATasks == nil {
		return weft.Errorf(weft.ENotFound, "this server does not list A2A tasks")
	}
	fileURL := func(thread, p string) string {
		return "/api/threads/" + url.PathEscape(thread) + "/fs" + (&url.URL{Path: p}).EscapedPath()
	}
	tasks, via, err := s.opt.A2ATasks(r.Context(), t, fileURL)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": tasks, "a2a": via})
	return nil
}
