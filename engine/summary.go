package engine

import (
	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/modelcall"
)

// foldHistory folds, under context.strategy summarize, the oldest of a top-level step's rows into
// s's summary when req (built from rows) would not fit the prompt's model (modelcall.Caller.Fold):
// it reports whether it wrote a summary, after which the request is built again.
func (r *run) foldHistory(s *scope, req *weft.Request, rows []*weft.Message) (bool, error) {
	summary, wrote, err := r.model.Fold((*foldRun)(r), s.call(), r.thread.Agent, s.summary, s.env, req, rows)
	s.summary = summary
	return wrote, err
}

// foldRun is a run as its summarizer calls see it (modelcall.Folder): a conversion of *run.
type foldRun run

func (f *foldRun) CheckBudget() error { return (*run)(f).checkBudget() }

// Store stores a summarizer call's log rows through the committer, with the summary row when
// there is one, which then reaches the run's cache and stream.
func (f *foldRun) Store(row *weft.Message, logs []*weft.LogEntry) error {
	r := (*run)(f)
	if err := r.tx(func(tx weft.Tx) error {
		if row != nil {
			if err := r.journal.Insert(tx, row); err != nil {
				return err
			}
		}
		return putLogs(tx, logs)
	}); err != nil || row == nil {
		return err
	}
	r.addRow(*row)
	r.journal.Stored(*row)
	return nil
}

func (f *foldRun) Report(s modelcall.Scope, req *weft.Request, logs []*weft.LogEntry, row *weft.Message, err error) {
	if f.obs != nil {
		f.obs.ModelCall(f.model.Record(s, req, logs, row, err))
	}
}
