package window

import (
	"testing"

	"github.com/weft-agents/weft"
)

// TestFoldPoint: how many of the oldest rows a step folds into the summary, case by case. Every
// row costs 10 tokens; "u" is a user's row, "a" the side's own reply, "c" a reply with a tool call
// and "t" its result.
func TestFoldPoint(t *testing.T) {
	rowsOf := func(kinds string) []*weft.Message {
		var rows []*weft.Message
		for _, k := range kinds {
			m := &weft.Message{Side: weft.SideA}
			switch k {
			case 'u':
				m.Role, m.Side = weft.RoleUser, weft.SideB
			case 'a':
				m.Role = weft.RoleAssistant
			case 'c':
				m.Role, m.ToolCalls = weft.RoleAssistant, []weft.ToolCall{{ID: "c", Name: "f"}}
			case 't':
				m.Role = weft.RoleTool
			}
			rows = append(rows, m)
		}
		return rows
	}
	tests := []struct {
		name   string
		rows   string
		budget int
		want   int
		keep   int
	}{
		{"fits", "uaua", 40, 0, -1},
		{"oldest exchange", "uauaua", 40, 2, -1},
		{"only what does not fit", "uauaua", 50, 2, -1},
		{"a call with its results whole", "uctttua", 25, 5, -1},
		{"the rows kept start with a user's", "uaaua", 30, 3, -1},
		{"within the turn, the question kept", "uactt", 30, 2, 0},
		{"within the turn, never the newest unit", "uctctct", 5, 5, 0},
		{"the earlier turns first", "uauctct", 50, 2, -1},
		{"then the turn's calls", "uauctct", 20, 5, 2},
		{"nothing but the question and the newest unit", "uct", 1, 0, -1},
		{"none to fold before the only user message", "u", 1, 0, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rows := rowsOf(tc.rows)
			cost := make([]int, len(rows))
			for i := range cost {
				cost[i] = 10
			}
			if got, keep := FoldPoint(cost, rows, weft.SideA, tc.budget); got != tc.want || keep != tc.keep {
				t.Errorf("FoldPoint(%s, budget %d) = %d, %d; want %d, %d", tc.rows, tc.budget, got, keep, tc.want, tc.keep)
			}
		})
	}
}
