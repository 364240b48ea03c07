package intake

import (
	"context"

	"github.com/weft-agents/weft"
)

// Rollback deletes in tx, for run runID stopped by a message with weft.IfBusyRollback, the replies
// and tool results the run stored at every depth, and returns their ids: the messages it took from
// the queue and its context summaries stay. cached are the thread's top-level rows in seq order
// (the run's cache), which tell where the run's own begin; the rows to delete are read from st, as
// a sub-prompt's rows are not all cached.
func Rollback(ctx context.Context, st weft.Store, tx weft.Tx, threadID, runID string, cached []*weft.Message) ([]string, error) {
	after := int64(-1)
	for _, m := range cached {
		if m.RunID == runID {
			after = m.Seq - 1
			break
		}
	}
	if after < 0 {
		return nil, nil // the run stored nothing
	}
	rows, err := st.Messages(ctx, threadID, weft.MessageQuery{AfterSeq: after, MaxDepth: 1 << 20})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, m := range rows {
		if m.RunID != runID || (m.Role != weft.RoleAssistant && m.Role != weft.RoleTool) {
			continue
		}
		if err := tx.DeleteMessage(m.ID); err != nil {
			return nil, err
		}
		ids = append(ids, m.ID)
	}
	return ids, nil
}
