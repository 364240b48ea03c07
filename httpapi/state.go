package httpapi

import (
	"encoding/json"
	"io"
	"maps"
	"mime"
	"net/http"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/weft-agents/weft"
)

// redactJSON replaces secret values inside a JSON document's text; a result that would no
// longer parse (a secret spanning JSON syntax) becomes the redacted text as a JSON string.
func redactJSON(v json.RawMessage, red func(string) string) json.RawMessage {
	out := red(string(v))
	if out == string(v) {
		return v
	}
	if json.Valid([]byte(out)) {
		return json.RawMessage(out)
	}
	b, _ := json.Marshal(out)
	return b
}

// logJSON is a log row in the API's snake_case shape; bodies only in the single-log view.
func logJSON(l weft.LogEntry, bodies bool, red func(string) string) map[string]any {
	m := map[string]any{"id": l.ID, "thread_id": l.ThreadID, "run_id": l.RunID, "message_id": l.MessageID,
		"parent_log_id": l.ParentLogID, "retry_of_log_id": l.RetryOfLogID, "kind": l.Kind, "provider": l.Provider,
		"model": l.Model, "model_id": l.ModelID, "prompt": l.Prompt, "side": l.Side, "depth": l.Depth,
		"status_code": l.StatusCode, "finish_reason": l.FinishReason, "error": red(l.Error), "error_type": l.ErrorType,
		"error_origin": l.ErrorOrigin, "is_complete": l.IsComplete, "input_tokens": l.InputTokens,
		"cached_tokens": l.CachedTokens, "output_tokens": l.OutputTokens, "reasoning_tokens": l.ReasoningTokens,
		"total_tokens": l.TotalTokens, "cost_input": l.CostInput, "cost_cached": l.CostCached,
		"cost_output": l.CostOutput, "cost_total": l.CostTotal, "latency_ms": l.LatencyMS,
		"time_to_first_token_ms": l.TimeToFirstTokenMS, "generation_ms": l.GenerationMS,
		"tools_offered": l.ToolsOffered, "tools_called": l.ToolsCalled, "queued_tools": l.QueuedTools,
		"tool_choice": l.ToolChoice, "created_at": l.CreatedAt}
	if bodies {
		m["request_body"] = json.RawMessage(orNull(red(string(l.RequestBody))))
		m["response_body"] = json.RawMessage(orNull(red(string(l.ResponseBody))))
	}
	return m
}

func orNull(s string) string {
	if s == "" || !json.Valid([]byte(s)) {
		if s == "" {
			return "null"
		}
		b, _ := json.Marshal(s)
		return string(b)
	}
	return s
}

func (s *Server) listLogs(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	q := &query{r: r}
	limit, offset := q.page(100)
	depth := q.int("depth", 1<<20, 0, 1<<20)
	if q.err != nil {
		return q.err
	}
	eng := s.engine()
	logs, err := eng.Store().Logs(r.Context(), t.ID, weft.LogQuery{MaxDepth: depth})
	if err != nil {
		return err
	}
	red, err := eng.Redactor(r.Context(), t.ID)
	if err != nil {
		return err
	}
	pg := pageOf(logs, limit, offset)
	items := make([]map[string]any, len(pg.Items))
	for i, l := range pg.Items {
		items[i] = logJSON(l, false, red)
	}
	writeJSON(w, http.StatusOK, list[map[string]any]{Items: items, Total: pg.Total, HasMore: pg.HasMore})
	return nil
}

func (s *Server) getLog(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	eng := s.engine()
	l, err := eng.Store().Log(r.Context(), t.ID, r.PathValue("log_id"))
	if err != nil {
		return err
	}
	red, err := eng.Redactor(r.Context(), t.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, logJSON(l, true, red))
	return nil
}

// cost is a thread's model spending.
type cost struct {
	CostTotal        float64        `json:"cost_total"`
	InputTokens      int            `json:"input_tokens"`
	CachedTokens     int            `json:"cached_tokens"`
	OutputTokens     int            `json:"output_tokens"`
	ReasoningTokens  int            `json:"reasoning_tokens"`
	Calls            int            `json:"calls"`
	UnknownCostCalls int            `json:"unknown_cost_calls"`
	ByModel          []*modelCost   `json:"by_model"`
	Children         []childCost    `json:"children"`
	byModel          map[string]int // model → index in ByModel
}

type modelCost struct {
	Model        string  `json:"model"`
	Calls        int     `json:"calls"`
	CostTotal    float64 `json:"cost_total"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
}

type childCost struct {
	ThreadID  string  `json:"thread_id"`
	Agent     string  `json:"agent"`
	CostTotal float64 `json:"cost_total"`
	Calls     int     `json:"calls"`
}

// addCost counts a log row into a thread's own cost when it is a model call's.
func addCost(c *cost, l *weft.LogEntry) {
	if l.Kind != "llm" {
		return
	}
	if c.byModel == nil {
		c.byModel = map[string]int{}
	}
	c.Calls++
	c.InputTokens += l.InputTokens
	c.CachedTokens += l.CachedTokens
	c.OutputTokens += l.OutputTokens
	c.ReasoningTokens += l.ReasoningTokens
	i, ok := c.byModel[l.Model]
	if !ok {
		i = len(c.ByModel)
		c.byModel[l.Model] = i
		c.ByModel = append(c.ByModel, &modelCost{Model: l.Model})
	}
	mc := c.ByModel[i]
	mc.Calls++
	mc.InputTokens += l.InputTokens
	mc.OutputTokens += l.OutputTokens
	if l.CostTotal == nil {
		c.UnknownCostCalls++
		return
	}
	c.CostTotal = weft.RoundUSD(c.CostTotal + *l.CostTotal)
	mc.CostTotal = weft.RoundUSD(mc.CostTotal + *l.CostTotal)
}

// clone copies a cost so that the copy can be added to alone.
func (c cost) clone() cost {
	c.byModel = maps.Clone(c.byModel)
	c.ByModel = slices.Clone(c.ByModel)
	for i, m := range c.ByModel {
		mc := *m
		c.ByModel[i] = &mc
	}
	c.Children = slices.Clone(c.Children)
	return c
}

// costOf sums a thread's model calls (every depth), with its descendants' when recursive.
func (s *Server) costOf(r *http.Request, t *weft.Thread, recursive bool) (*cost, error) {
	st := s.engine().Store()
	own, err := s.costs.Of(r.Context(), st, t.ID)
	if err != nil {
		return nil, err
	}
	own = own.clone()
	c := &own
	if c.byModel == nil {
		c.byModel = map[string]int{}
	}
	if c.ByModel == nil {
		c.ByModel = []*modelCost{}
	}
	c.Children = []childCost{}
	if !recursive {
		return c, nil
	}
	kids, _, err := st.Threads(r.Context(), weft.ThreadQuery{ParentID: t.ID, Limit: 1000})
	if err != nil {
		return nil, err
	}
	for _, k := range kids {
		kc, err := s.costOf(r, k, true)
		if err != nil {
			return nil, err
		}
		c.Children = append(c.Children, childCost{ThreadID: k.ID, Agent: k.Agent, CostTotal: kc.CostTotal, Calls: kc.Calls})
		c.CostTotal = weft.RoundUSD(c.CostTotal + kc.CostTotal)
		c.Calls += kc.Calls
		c.UnknownCostCalls += kc.UnknownCostCalls
		c.InputTokens += kc.InputTokens
		c.CachedTokens += kc.CachedTokens
		c.OutputTokens += kc.OutputTokens
		c.ReasoningTokens += kc.ReasoningTokens
		for _, m := range kc.ByModel {
			i, ok := c.byModel[m.Model]
			if !ok {
				i = len(c.ByModel)
				c.byModel[m.Model] = i
				c.ByModel = append(c.ByModel, &modelCost{Model: m.Model})
			}
			c.ByModel[i].Calls += m.Calls
			c.ByModel[i].CostTotal = weft.RoundUSD(c.ByModel[i].CostTotal + m.CostTotal)
			c.ByModel[i].InputTokens += m.InputTokens
			c.ByModel[i].OutputTokens += m.OutputTokens
		}
	}
	return c, nil
}

func (s *Server) getCost(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	q := &query{r: r}
	rec := true
	if q.str("recursive") != "" {
		rec = q.bool("recursive")
	}
	if q.err != nil {
		return q.err
	}
	c, err := s.costOf(r, t, rec)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c)
	return nil
}

// listSubagents lists the registry rows of the thread's subagents: how each was started (agent,
// label, owner side, blocking, resumable) with its current status.
func (s *Server) listSubagents(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	kids, _, err := s.engine().Store().Threads(r.Context(), weft.ThreadQuery{ParentID: t.ID, Sort: "oldest", Limit: 1000})
	if err != nil {
		return err
	}
	rows := make([]map[string]any, 0, len(kids))
	for _, k := range kids {
		row := map[string]any{}
		if stored, ok := k.Properties["weft.subagent"].(map[string]any); ok {
			for key, v := range stored {
				row[key] = v
			}
		}
		row["reference"], row["parent_thread_id"], row["agent"] = k.ID, t.ID, k.Agent
		if _, ok := row["label"]; !ok {
			row["label"] = k.Label
		}
		if _, ok := row["status"]; !ok || k.Status == weft.ThreadTerminated {
			row["status"] = subagentStatus(k)
		}
		row["created_at"], row["updated_at"] = k.CreatedAt, k.UpdatedAt
		rows = append(rows, row)
	}
	writeJSON(w, http.StatusOK, rows)
	return nil
}

// subagentStatus is a child's registry status: running, idle, failed or terminated.
func subagentStatus(k *weft.Thread) string {
	switch {
	case k.Status == weft.ThreadRunning:
		return "running"
	case k.Status == weft.ThreadTerminated:
		return "terminated"
	case strings.Contains(string(k.StopReason), "error") || strings.Contains(string(k.StopReason), "fail"):
		return "failed"
	}
	return "idle"
}

// envRow is a variable as the API shows it: a value only when its type is text.
type envRow struct {
	Name  string       `json:"name"`
	Type  weft.VarType `json:"type"`
	Layer string       `json:"layer"`
	Set   bool         `json:"set"`
	Value *string      `json:"value,omitempty"`
}

func rowOf(v weft.EnvValue, layer string) envRow {
	row := envRow{Name: v.Name, Type: v.Type, Layer: layer, Set: true}
	if v.Type == weft.VarText {
		val := v.Value
		row.Value = &val
	}
	return row
}

func (s *Server) threadEnv(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	st := s.engine().Store()
	rows := []envRow{}
	layers := []struct {
		scope weft.EnvScope
		owner string
	}{{weft.EnvThread, t.ID}, {weft.EnvUser, t.UserID}, {weft.EnvInstance, ""}}
	for _, l := range layers {
		if l.scope == weft.EnvUser && l.owner == "" {
			continue
		}
		vals, err := st.Env(r.Context(), l.scope, l.owner)
		if err != nil {
			return err
		}
		for _, v := range vals {
			rows = append(rows, rowOf(v, string(l.scope)))
		}
	}
	writeJSON(w, http.StatusOK, rows)
	return nil
}

func (s *Server) listKV(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	kv, err := s.engine().Store().ListKV(r.Context(), t.ID)
	if err != nil {
		return err
	}
	red, err := s.engine().Redactor(r.Context(), t.ID)
	if err != nil {
		return err
	}
	for k, v := range kv {
		kv[k] = redactJSON(v, red)
	}
	writeJSON(w, http.StatusOK, kv)
	return nil
}

func (s *Server) getKV(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	v, found, err := s.engine().Store().GetKV(r.Context(), t.ID, r.PathValue("key"))
	if err != nil {
		return err
	}
	if !found {
		return weft.Errorf(weft.ENotFound, "no value under %q", r.PathValue("key"))
	}
	red, err := s.engine().Redactor(r.Context(), t.ID)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(redactJSON(v, red))
	return nil
}

func (s *Server) putKV(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	b, err := readBody(w, r, maxJSONBody)
	if err != nil {
		return err
	}
	if !json.Valid(b) {
		return badRequest("the body must be one JSON value")
	}
	st, err := s.engine().State(r.Context(), t.ID)
	if err != nil {
		return err
	}
	if err := st.SetValue(r.Context(), r.PathValue("key"), json.RawMessage(b)); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"key": r.PathValue("key")})
	return nil
}

func (s *Server) deleteKV(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	st, err := s.engine().State(r.Context(), t.ID)
	if err != nil {
		return err
	}
	if err := st.SetValue(r.Context(), r.PathValue("key"), nil); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// fileJSON is a file's metadata in the API's shape.
func fileJSON(f weft.FileInfo) map[string]any {
	return map[string]any{"path": f.Path, "name": f.Name, "mime_type": f.MimeType, "size": f.Size, "is_dir": f.IsDir,
		"width": f.Width, "height": f.Height, "description": f.Description, "created_at": f.CreatedAt, "updated_at": f.UpdatedAt}
}

func fsPath(r *http.Request) (string, error) {
	p, err := weft.CleanPath("/" + r.PathValue("path"))
	if err != nil {
		return "", badRequest("invalid path " + strconv.Quote("/"+r.PathValue("path")))
	}
	return p, nil
}

// inlineTypes are the file types served inline: raster images, which a browser renders without
// running anything. Every other file is an attachment, so that an uploaded page or script never
// runs from the API's origin.
var inlineTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true, "image/avif": true}

// fileRoute wraps a route of a thread's files: whatever it answers, the browser neither sniffs a
// type nor runs it (a sandboxing CSP with no sources).
func fileRoute(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, p *principal) error {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox; frame-ancestors 'none'")
		return h(w, r, p)
	}
}

func (s *Server) getFile(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	fp, err := fsPath(r)
	if err != nil {
		return err
	}
	files := s.engine().Store().Files()
	fi, err := files.Stat(r.Context(), t.ID, fp)
	if err != nil {
		return err
	}
	q := &query{r: r}
	if q.bool("stat") {
		writeJSON(w, http.StatusOK, fileJSON(fi))
		return nil
	}
	if q.err != nil {
		return q.err
	}
	if fi.IsDir {
		entries, err := files.ReadDir(r.Context(), t.ID, fp)
		if err != nil {
			return err
		}
		out := make([]map[string]any, len(entries))
		for i, e := range entries {
			out[i] = fileJSON(e)
		}
		writeJSON(w, http.StatusOK, map[string]any{"path": fp, "entries": out})
		return nil
	}
	rc, err := files.Open(r.Context(), t.ID, fp)
	if err != nil {
		return err
	}
	defer rc.Close()
	ct := fi.MimeType
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.FormatInt(fi.Size, 10))
	disposition := "attachment"
	if inlineTypes[strings.ToLower(strings.TrimSpace(strings.Split(ct, ";")[0]))] && r.URL.Query().Get("download") == "" {
		disposition = "inline"
	}
	w.Header().Set("Content-Disposition", mime.FormatMediaType(disposition, map[string]string{"filename": path.Base(fp)}))
	_, _ = io.Copy(w, rc)
	return nil
}

func (s *Server) putFile(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	fp, err := fsPath(r)
	if err != nil {
		return err
	}
	b, err := readBody(w, r, maxFileBody)
	if err != nil {
		return err
	}
	st, err := s.engine().State(r.Context(), t.ID)
	if err != nil {
		return err
	}
	mt := r.Header.Get("Content-Type")
	if mt == "" {
		mt = http.DetectContentType(b)
	}
	fi, err := st.Files().WriteFile(r.Context(), fp, b, weft.WriteOptions{MimeType: mt})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, fileJSON(fi))
	return nil
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	fp, err := fsPath(r)
	if err != nil {
		return err
	}
	st, err := s.engine().State(r.Context(), t.ID)
	if err != nil {
		return err
	}
	fi, err := st.Files().Stat(r.Context(), fp)
	if err != nil {
		return err
	}
	if fi.IsDir {
		err = st.Files().RemoveDir(r.Context(), fp, true)
	} else {
		err = st.Files().Remove(r.Context(), fp)
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) searchFiles(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	q := &query{r: r}
	grep, glob, prefix, icase := q.str("grep"), q.str("glob"), q.str("path"), q.bool("ignore_case")
	if q.err != nil {
		return q.err
	}
	files := s.engine().Store().Files()
	switch {
	case grep != "":
		ms, err := files.Grep(r.Context(), t.ID, grep, weft.GrepOptions{Path: prefix, Glob: glob, IgnoreCase: icase})
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, ms)
	case glob != "":
		fs, err := files.Find(r.Context(), t.ID, glob)
		if err != nil {
			return err
		}
		out := make([]map[string]any, len(fs))
		for i, f := range fs {
			out[i] = fileJSON(f)
		}
		writeJSON(w, http.StatusOK, out)
	default:
		return validation("grep", "give grep (a pattern) or glob")
	}
	return nil
}

func (s *Server) listEffects(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	q := &query{r: r}
	limit, offset := q.page(100)
	if q.err != nil {
		return q.err
	}
	effs, err := s.engine().Store().Effects(r.Context(), t.ID)
	if err != nil {
		return err
	}
	sort.SliceStable(effs, func(i, j int) bool { return effs[i].RunAt.Before(effs[j].RunAt) })
	writeJSON(w, http.StatusOK, pageOf(effs, limit, offset))
	return nil
}

func (s *Server) cancelEffect(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	st, err := s.engine().State(r.Context(), t.ID)
	if err != nil {
		return err
	}
	if err := st.CancelEffect(r.Context(), r.PathValue("eff")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) getEnvRequest(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	req, err := s.engine().EnvRequest(r.Context(), t.ID, r.PathValue("request_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, req)
	return nil
}

func (s *Server) provideEnv(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.visibleThread(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	var b struct {
		Env map[string]string `json:"env"`
	}
	if err := decodeJSON(w, r, maxJSONBody, &b, false); err != nil {
		return err
	}
	if len(b.Env) == 0 {
		return validation("env", "give the missing variables' values")
	}
	out, err := s.engine().ProvideEnv(r.Context(), t.ID, r.PathValue("request_id"), b.Env)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}
