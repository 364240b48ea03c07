package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// The `weft threads` commands against a server (--server URL --api-key KEY): each does over the
// HTTP API what it does on a local store, and prints the same.

// remoteSource reads what a thread's document needs from a server; the server redacts it.
type remoteSource struct{ r *remote }

func threadPath(id string) string { return "/api/threads/" + url.PathEscape(id) }

func (s remoteSource) Thread(ctx context.Context, id string) (*weft.Thread, error) {
	var t weft.Thread
	if err := s.r.do(ctx, "GET", threadPath(id), nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

func (s remoteSource) Messages(ctx context.Context, id string, _ weft.MessageQuery) ([]weft.Message, error) {
	return s.r.messages(ctx, id)
}

// pages reads every page of a list route into out.
func pages[T any](ctx context.Context, r *remote, path string) ([]T, error) {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	all := []T{}
	for offset := 0; ; {
		var page struct {
			Items   []T  `json:"items"`
			HasMore bool `json:"has_more"`
		}
		if err := r.do(ctx, "GET", path+sep+"limit=500&offset="+strconv.Itoa(offset), nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Items...)
		offset += len(page.Items)
		if !page.HasMore || len(page.Items) == 0 {
			return all, nil
		}
	}
}

func (s remoteSource) Logs(ctx context.Context, id string, _ weft.LogQuery) ([]weft.LogEntry, error) {
	return pages[weft.LogEntry](ctx, s.r, threadPath(id)+"/logs?depth=1048576")
}

func (s remoteSource) Effects(ctx context.Context, id string) ([]weft.EffectRecord, error) {
	return pages[weft.EffectRecord](ctx, s.r, threadPath(id)+"/effects")
}

func (s remoteSource) Threads(ctx context.Context, q weft.ThreadQuery) ([]*weft.Thread, int, error) {
	ts, err := pages[*weft.Thread](ctx, s.r, "/api/threads?include_children=true&sort=oldest&parent="+url.QueryEscape(q.ParentID))
	return ts, len(ts), err
}

// threadsExport prints the thread's document, as `weft threads export` does locally.
func (r *remote) threadsExport(cmd *cobra.Command, id string) error {
	doc, err := buildDocument(cmd.Context(), remoteSource{r}, id, &engine.RunResult{}, nil)
	if err != nil {
		return remoteExit(err)
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	fmt.Fprintln(cmd.OutOrStdout(), string(b))
	return nil
}

// decide sends an approval decision and, once no call of the reply waits any more, follows the
// run the server starts, printing it as weft run does (exit 6 while calls still wait).
func (r *remote) decide(cmd *cobra.Command, f *runFlags, id string, req *decideRequest) error {
	if f.asJSON || f.script != "" {
		return exit(exitUsage, fmt.Errorf("--json and --model-script apply to local runs only (not with --server)"))
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	after, err := r.lastCursor(ctx, id)
	if err != nil {
		return remoteExit(err)
	}
	resp, err := r.openStream(ctx, id, after)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body := map[string]any{"approve": req.decision.Approve}
	if req.decision.Arguments != nil {
		body["arguments"] = req.decision.Arguments
	}
	if req.decision.Reason != "" {
		body["reason"] = req.decision.Reason
	}
	var out struct{ Ready bool }
	if err := r.do(ctx, "POST", threadPath(id)+"/approvals/"+url.PathEscape(req.call), body, &out); err != nil {
		return remoteExit(err)
	}
	if !out.Ready {
		if !f.quiet {
			r.waitingCalls(ctx, cmd.ErrOrStderr(), id)
		}
		return exit(exitApproval, nil)
	}
	return r.follow(ctx, cmd, f, id, "", resp)
}

// budget sets the thread's own budget when asked and prints its spend, as locally.
func (r *remote) budget(cmd *cobra.Command, id string, set *weft.Budget) error {
	ctx := cmd.Context()
	th := &weft.Thread{}
	if set != nil {
		if err := r.do(ctx, "PATCH", threadPath(id), map[string]any{"budget": set}, th); err != nil {
			return remoteExit(err)
		}
	} else if err := r.do(ctx, "GET", threadPath(id), nil, th); err != nil {
		return remoteExit(err)
	}
	var c struct {
		CostTotal        float64 `json:"cost_total"`
		InputTokens      int64   `json:"input_tokens"`
		OutputTokens     int64   `json:"output_tokens"`
		Calls            int     `json:"calls"`
		UnknownCostCalls int     `json:"unknown_cost_calls"`
	}
	if err := r.do(ctx, "GET", threadPath(id)+"/cost", nil, &c); err != nil {
		return remoteExit(err)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "spent: $%.4f, %d tokens, %s", c.CostTotal, c.InputTokens+c.OutputTokens, plural(c.Calls, "model call"))
	if c.UnknownCostCalls > 0 {
		fmt.Fprintf(out, " (%d without a known price)", c.UnknownCostCalls)
	}
	fmt.Fprintln(out)
	if b := engine.BudgetOf(th, nil); b != nil {
		fmt.Fprintf(out, "budget: %s\n", describeBudget(b))
	} else {
		fmt.Fprintf(out, "budget: none of its own (the agent %s's, if it declares one)\n", th.Agent)
	}
	if th.Status == weft.ThreadPaused {
		fmt.Fprintf(out, "the thread is paused (%s); raising its budget lets it go on\n", th.StopReason)
	}
	return nil
}

// apiFile is a file entry as the API lists it.
type apiFile struct {
	Path     string `json:"path"`
	IsDir    bool   `json:"is_dir"`
	MimeType string `json:"mime_type"`
	Size     int64  `json:"size"`
}

// walk lists the thread's files under dir, depth first, as walkFiles does on a store.
func (r *remote) walk(ctx context.Context, id, dir string, out *[]apiFile) error {
	var d struct {
		Entries []apiFile `json:"entries"`
	}
	p := strings.TrimPrefix(dir, "/")
	if err := r.do(ctx, "GET", threadPath(id)+"/fs/"+escapePath(p), nil, &d); err != nil {
		if weft.ErrorCode(err) == weft.ENotFound && dir == "/" {
			return nil
		}
		return err
	}
	for _, e := range d.Entries {
		if e.IsDir {
			if err := r.walk(ctx, id, e.Path, out); err != nil {
				return err
			}
			continue
		}
		*out = append(*out, e)
	}
	return nil
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

func (r *remote) files(cmd *cobra.Command, id string) error {
	if err := r.do(cmd.Context(), "GET", threadPath(id), nil, nil); err != nil {
		return remoteExit(err)
	}
	var all []apiFile
	if err := r.walk(cmd.Context(), id, "/", &all); err != nil {
		return remoteExit(err)
	}
	files := make([]weft.FileInfo, len(all))
	for i, f := range all {
		files[i] = weft.FileInfo{Path: f.Path, MimeType: f.MimeType, Size: f.Size}
	}
	printFiles(cmd, files)
	return nil
}

// file writes one file's bytes to standard output or outFile.
func (r *remote) file(cmd *cobra.Command, id, p, outFile string) error {
	cp, err := weft.CleanPath(p)
	if err != nil {
		return exit(exitUsage, fmt.Errorf("%s: %w", p, err))
	}
	var st apiFile
	if err := r.do(cmd.Context(), "GET", threadPath(id)+"/fs/"+escapePath(strings.TrimPrefix(cp, "/"))+"?stat=true", nil, &st); err != nil {
		return remoteExit(err)
	}
	if st.IsDir {
		return exit(exitUsage, fmt.Errorf("thread %s: %s is a directory", id, cp))
	}
	req, err := r.request(cmd.Context(), "GET", threadPath(id)+"/fs/"+escapePath(strings.TrimPrefix(cp, "/")), nil)
	if err != nil {
		return err
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return exit(exitFailure, fmt.Errorf("--server %s: %w", r.base, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return exit(exitFailure, fmt.Errorf("thread %s: %s: %s", id, cp, resp.Status))
	}
	var w io.Writer = cmd.OutOrStdout()
	if outFile != "" {
		f, err := os.OpenFile(outFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return exit(exitUsage, fmt.Errorf("-o: %w", unwrapPath(err)))
		}
		defer f.Close()
		w = f
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return exit(exitFailure, err)
	}
	if outFile != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s (%s)\n", outFile, weft.ByteSize(n))
	}
	return nil
}

// provideEnv answers a subagent's request for variables; the server starts the subagent.
func (r *remote) provideEnv(cmd *cobra.Command, id, request string, env map[string]string) error {
	var out struct {
		ChildThreadID string `json:"child_thread_id"`
	}
	if err := r.do(cmd.Context(), "POST", threadPath(id)+"/variables/"+url.PathEscape(request), map[string]any{"env": env}, &out); err != nil {
		return remoteExit(err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "subagent %s started; follow it with: weft threads show %s\n", out.ChildThreadID, id)
	return nil
}
