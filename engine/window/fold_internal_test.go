package window

import (
	"strings"
	"testing"

	"github.com/weft-agents/weft"
)

// TestFold: a summarizer call's chunk keeps a tool turn whole and takes at least one unit; its
// input skips the rows the summary holds already and asks for the summary within its target; the
// summary row it makes counts every row folded so far and names the kept question.
func TestFold(t *testing.T) {
	rows := []*weft.Message{
		{ID: "u1", Seq: 1, Role: weft.RoleUser, Side: weft.SideB, Content: "question"},
		{ID: "c1", Seq: 2, Role: weft.RoleAssistant, Side: weft.SideA, ToolCalls: []weft.ToolCall{{ID: "k", Name: "look"}}},
		{ID: "t1", Seq: 3, Role: weft.RoleTool, Side: weft.SideA, ToolCallID: "k", Content: "found"},
		{ID: "a1", Seq: 4, Role: weft.RoleAssistant, Side: weft.SideA, Content: "answer"},
	}
	cost := []int{10, 10, 10, 10}
	if end := ChunkEnd(rows, cost, 0, 4, 15); end != 1 {
		t.Errorf("ChunkEnd with room for one row = %d, want 1", end)
	}
	if end := ChunkEnd(rows, cost, 1, 4, 15); end != 3 {
		t.Errorf("ChunkEnd at a tool turn larger than the chunk = %d, want 3 (the turn whole)", end)
	}
	if end := ChunkEnd(rows, cost, 0, 4, 100); end != 4 {
		t.Errorf("ChunkEnd with room for all = %d, want 4", end)
	}

	input, folded := FoldInput(nil, rows[:1], weft.SideA, 100, 1000)
	if len(folded) != 1 || !strings.Contains(input, "(none yet)") || !strings.Contains(input, "question") ||
		!strings.Contains(input, "at most 75 words") {
		t.Errorf("FoldInput without a summary = %q, %d rows", input, len(folded))
	}
	first := NewSummary("s1", "asked a question", weft.SideA, "main", "sum", nil, rows[:1], rows[0])
	if MetaInt(first, MetaSummaryThrough) != 1 || MetaInt(first, MetaSummaryMessages) != 1 ||
		first.Metadata[MetaSummaryKept] != "u1" || first.Prompt != "sum" || !IsSummary(first) {
		t.Errorf("first summary: %+v", first)
	}
	input, folded = FoldInput(first, rows[:3], weft.SideA, 100, 1000)
	if len(folded) != 2 || folded[0].ID != "c1" || !strings.Contains(input, "asked a question") || strings.Contains(input, "(none yet)") {
		t.Errorf("FoldInput with a summary = %q, %v", input, folded)
	}
	if _, none := FoldInput(first, rows[:1], weft.SideA, 100, 1000); len(none) != 0 {
		t.Errorf("FoldInput of rows the summary holds = %v, want none", none)
	}
	second := NewSummary("s2", "looked it up", weft.SideA, "main", "sum", first, folded, rows[0])
	if MetaInt(second, MetaSummaryThrough) != 3 || MetaInt(second, MetaSummaryMessages) != 3 || second.Metadata[MetaSummaryThroughID] != "t1" {
		t.Errorf("second summary: %+v", second.Metadata)
	}
}
