package window

import (
	"fmt"
	"strings"

	"github.com/weft-agents/weft"
)

// ChunkEnd returns the end of the chunk of rows[start:n] that one summarizer call folds: whole
// units (RowUnits: a tool turn is not cut in two) whose costs (cost, by row) add up to at most
// chunk tokens, and at least one unit however large.
func ChunkEnd(rows []*weft.Message, cost []int, start, n, chunk int) int {
	end, used := start, 0
	for _, u := range RowUnits(rows[start:n]) {
		c := 0
		for k := start + u[0]; k < start+u[1]; k++ {
			c += cost[k]
		}
		if end > start && used+c > chunk {
			break
		}
		end, used = start+u[1], used+c
	}
	return end
}

// FoldInput is the user message of a summarizer call that folds rows into the summary prev (nil:
// none yet), as side sees them, in a reply of about target tokens; a row longer than the
// summarizer's window (chunk tokens) is cut to its head. It returns the rows folded: those prev
// does not hold already (none: nothing to fold).
func FoldInput(prev *weft.Message, rows []*weft.Message, side weft.Side, target, chunk int) (string, []*weft.Message) {
	if prev != nil {
		// A kept row the summary holds already is not folded again.
		through := MetaInt(prev, MetaSummaryThrough)
		fresh := rows[:0:0]
		for _, m := range rows {
			if m.Seq > through {
				fresh = append(fresh, m)
			}
		}
		if len(fresh) == 0 {
			return "", nil
		}
		rows = fresh
	}
	var in strings.Builder
	in.WriteString("Summary so far:\n")
	if prev != nil {
		in.WriteString(prev.Content)
	} else {
		in.WriteString("(none yet)")
	}
	in.WriteString("\n\nMessages that left the window, oldest first:\n")
	limit := max(512, chunk*2)
	for _, m := range rows {
		WriteTranscript(&in, m, side, limit)
	}
	fmt.Fprintf(&in, "\nReply with the updated summary, at most %d words.", max(50, target*3/4))
	return in.String(), rows
}

// NewSummary returns the summary row id of prompt's side (text, by the summarizer), which folds
// rows into prev (nil: none yet); keep is the row the requests still carry once folded (the
// turn's question), nil when none.
func NewSummary(id, text string, side weft.Side, prompt, summarizer string, prev *weft.Message, rows []*weft.Message, keep *weft.Message) *weft.Message {
	last := rows[len(rows)-1]
	covered := int64(len(rows))
	if prev != nil {
		covered += MetaInt(prev, MetaSummaryMessages)
	}
	row := &weft.Message{ID: id, Role: weft.RoleSystem, Side: side, Content: text, Status: weft.MessageCompleted, Silent: true,
		Prompt: summarizer, Metadata: map[string]any{MetaSummary: true, MetaSummaryPrompt: prompt,
			MetaSummaryThrough: last.Seq, MetaSummaryThroughID: last.ID, MetaSummaryMessages: covered}}
	if keep != nil && keep.Seq <= last.Seq {
		row.Metadata[MetaSummaryKept] = keep.ID
	}
	return row
}
