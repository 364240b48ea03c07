package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/eval"
)

// EvalService runs eval files for POST /api/evals; cmd/weft builds it over the server's engine
// options, so that the case threads run as the server's threads do.
type EvalService interface {
	// Run parses the eval file named file (in the project's evals directory) — or content, when
	// given, as if it were that file — runs it, stores the run and returns its report. An invalid
	// file is an *eval.FileError.
	Run(ctx context.Context, file string, content []byte) (*eval.Report, error)
}

// evalRequest is the body of POST /api/evals.
type evalRequest struct {
	// File names an eval file of the project's evals directory.
	File string `json:"file"`
	// Content, when set, is the eval file's YAML (its relative paths resolve against the evals
	// directory; File then only names it, default "posted.yaml").
	Content string `json:"content"`
}

// runEval runs an eval file and answers its report (admins: the case threads belong to no user).
func (s *Server) runEval(w http.ResponseWriter, r *http.Request, p *principal) error {
	if s.opt.Evals == nil {
		return &apiError{status: http.StatusNotFound, code: string(weft.ENotFound), message: "this server runs no evals"}
	}
	var req evalRequest
	if err := decodeJSON(w, r, 4<<20, &req, false); err != nil {
		return err
	}
	if req.File == "" && req.Content == "" {
		return badRequest("file or content: one is required")
	}
	rep, err := s.opt.Evals.Run(r.Context(), req.File, []byte(req.Content))
	var fe *eval.FileError
	if errors.As(err, &fe) {
		return weft.Errorf(weft.EInvalid, "%s", fe.Error())
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

// evalRunSummary is one stored run in GET /api/evals.
type evalRunSummary struct {
	ID           string  `json:"id"`
	Name         string  `json:"name"`
	Agent        string  `json:"agent"`
	Model        string  `json:"model,omitempty"`
	StartedAt    string  `json:"started_at"`
	Passed       int     `json:"passed"`
	Failed       int     `json:"failed"`
	CostUSD      float64 `json:"cost_usd"`
	JudgeCostUSD float64 `json:"judge_cost_usd"`
}

// listEvalRuns lists the stored eval runs, newest first (?name= one eval's, ?limit=, default 50).
func (s *Server) listEvalRuns(w http.ResponseWriter, r *http.Request, p *principal) error {
	limit := 50
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return badRequest("limit: a whole number from 1 to 1000")
		}
		limit = n
	}
	runs, err := eval.Runs(r.Context(), s.engine().Store(), r.URL.Query().Get("name"), limit)
	if err != nil {
		return err
	}
	out := make([]evalRunSummary, 0, len(runs))
	for _, rep := range runs {
		out = append(out, evalRunSummary{ID: rep.ID, Name: rep.Name, Agent: rep.Agent, Model: rep.Model,
			StartedAt: rep.StartedAt.UTC().Format("2006-01-02T15:04:05Z"), Passed: rep.Passed, Failed: rep.Failed,
			CostUSD: rep.CostUSD, JudgeCostUSD: rep.JudgeCostUSD})
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": out})
	return nil
}

// getEvalRun answers one stored run's report.
func (s *Server) getEvalRun(w http.ResponseWriter, r *http.Request, p *principal) error {
	rep, err := eval.LoadRun(r.Context(), s.engine().Store(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
