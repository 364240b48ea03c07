package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/weft-agents/weft"
)

// Eval runs are stored in the project's store as threads of their own — one per run, holding
// no messages, its report in KV — rather than through a new Store method: the three stores and
// their contract suite stay as they are, a run is listed, exported and deleted as any thread
// is, and the inspector shows it. The tags find them: TagRun on every run, TagRun+":"+id on one,
// TagRunOf+":"+eval name on an eval's runs.
const (
	TagRun   = "eval-run"
	TagRunOf = "eval-run-of"
	// KVReport is the run thread's KV key holding the Report.
	KVReport = "eval.report"
)

// SaveRun stores a report as its run's thread.
func SaveRun(ctx context.Context, st weft.Store, r *Report) (string, error) {
	t := &weft.Thread{ID: weft.NewID("thr_"), Agent: r.Agent, Label: "eval run " + r.Name,
		Tags: []string{TagRun, TagRun + ":" + r.ID, TagRunOf + ":" + r.Name},
		Properties: map[string]any{"eval_run": r.ID, "eval": r.Name, "passed": r.Passed, "failed": r.Failed, "cost_usd": r.CostUSD,
			"judge_cost_usd": r.JudgeCostUSD},
		Status: weft.ThreadIdle, CreatedAt: r.FinishedAt, UpdatedAt: r.FinishedAt, LastActivityAt: r.FinishedAt}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = r.StartedAt
		t.UpdatedAt, t.LastActivityAt = t.CreatedAt, t.CreatedAt
	}
	t.RootID = t.ID
	if err := st.CreateThread(ctx, t, nil); err != nil {
		return "", fmt.Errorf("storing eval run %s: %w", r.ID, err)
	}
	doc, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	if err := st.Tx(ctx, t.ID, nil, func(tx weft.Tx) error { return tx.SetKV(KVReport, doc) }); err != nil {
		return "", fmt.Errorf("storing eval run %s: %w", r.ID, err)
	}
	return t.ID, nil
}

// LoadRun reads a stored run by its id (`evr_…`), or by its thread's id.
func LoadRun(ctx context.Context, st weft.Store, id string) (*Report, error) {
	threadID := id
	if !strings.HasPrefix(id, "thr_") {
		ts, _, err := st.Threads(ctx, weft.ThreadQuery{Tag: TagRun + ":" + id, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(ts) == 0 {
			return nil, weft.Errorf(weft.ENotFound, "no eval run %q in this database", id)
		}
		threadID = ts[0].ID
	}
	raw, ok, err := st.GetKV(ctx, threadID, KVReport)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, weft.Errorf(weft.ENotFound, "thread %s is not an eval run", threadID)
	}
	var r Report
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("eval run %s: %w", id, err)
	}
	return &r, nil
}

// Runs lists the stored runs of the eval named name ("" = every eval), newest first.
func Runs(ctx context.Context, st weft.Store, name string, limit int) ([]*Report, error) {
	tag := TagRun
	if name != "" {
		tag = TagRunOf + ":" + name
	}
	ts, _, err := st.Threads(ctx, weft.ThreadQuery{Tag: tag, Sort: "created", Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]*Report, 0, len(ts))
	for _, t := range ts {
		r, err := LoadRun(ctx, st, t.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartedAt.After(out[j].StartedAt) })
	return out, nil
}

// Comparison is how a run moved against a baseline run of the same eval.
type Comparison struct {
	// Run is the baseline's id.
	Run string `json:"run"`
	// Regressed passed in the baseline and fail now; Improved the other way round; New and Gone
	// are cases only one of the two runs has.
	Regressed []string `json:"regressed"`
	Improved  []string `json:"improved"`
	New       []string `json:"new,omitempty"`
	Gone      []string `json:"gone,omitempty"`
	// CostUSD and LatencyMS are the totals of both runs (cost) and the mean case latency.
	CostUSD   [2]float64 `json:"cost_usd"`
	LatencyMS [2]int64   `json:"latency_ms"`
}

// Compare compares run with baseline.
func Compare(run, baseline *Report) *Comparison {
	c := &Comparison{Run: baseline.ID, Regressed: []string{}, Improved: []string{}}
	for _, now := range run.Cases {
		was, ok := baseline.Case(now.Name)
		switch {
		case !ok:
			c.New = append(c.New, now.Name)
		case was.Pass && !now.Pass:
			c.Regressed = append(c.Regressed, now.Name)
		case !was.Pass && now.Pass:
			c.Improved = append(c.Improved, now.Name)
		}
	}
	for _, was := range baseline.Cases {
		if _, ok := run.Case(was.Name); !ok {
			c.Gone = append(c.Gone, was.Name)
		}
	}
	c.CostUSD = [2]float64{baseline.CostUSD, run.CostUSD}
	c.LatencyMS = [2]int64{meanLatency(baseline), meanLatency(run)}
	return c
}

func meanLatency(r *Report) int64 {
	if len(r.Cases) == 0 {
		return 0
	}
	var ms int64
	for _, c := range r.Cases {
		ms += c.LatencyMS
	}
	return ms / int64(len(r.Cases))
}

func (c *Comparison) write(w interface{ Write([]byte) (int, error) }) {
	fmt.Fprintf(w, "against %s: %d regressed, %d improved", c.Run, len(c.Regressed), len(c.Improved))
	if len(c.Regressed) > 0 {
		fmt.Fprintf(w, "\n  regressed: %s", strings.Join(c.Regressed, ", "))
	}
	if len(c.Improved) > 0 {
		fmt.Fprintf(w, "\n  improved: %s", strings.Join(c.Improved, ", "))
	}
	if len(c.New) > 0 {
		fmt.Fprintf(w, "\n  new: %s", strings.Join(c.New, ", "))
	}
	if len(c.Gone) > 0 {
		fmt.Fprintf(w, "\n  gone: %s", strings.Join(c.Gone, ", "))
	}
	fmt.Fprintf(w, "\n  cost %s → %s (%s); mean latency %dms → %dms (%+dms)\n", usd(c.CostUSD[0]), usd(c.CostUSD[1]), delta(c.CostUSD[0], c.CostUSD[1]),
		c.LatencyMS[0], c.LatencyMS[1], c.LatencyMS[1]-c.LatencyMS[0])
}

func delta(was, now float64) string {
	if was == 0 {
		return fmt.Sprintf("%+.4f", now-was)
	}
	return fmt.Sprintf("%+.1f%%", (now-was)/was*100)
}
