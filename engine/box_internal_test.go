package engine

import (
	"strings"
	"testing"

	"github.com/weft-agents/weft"
)

// TestBoxedPayloadValues: the values converted once for event payloads keep the dynamic type and
// value a plain conversion gives (consumers assert ev.Data["side"].(weft.Side)), and the usual ones
// cost no allocation.
func TestBoxedPayloadValues(t *testing.T) {
	other := weft.Side(strings.Repeat("x", 2)) // not a constant: converting it allocates
	cases := []struct {
		name   string
		box    func() any
		plain  any
		allocs float64 // per conversion
	}{
		{"side a", func() any { return boxedSides.box(weft.SideA) }, weft.SideA, 0},
		{"side b", func() any { return boxedSides.box(weft.SideB) }, weft.SideB, 0},
		{"side other", func() any { return boxedSides.box(other) }, weft.Side("xx"), 1},
		{"tool success", func() any { return boxedStatuses.box(weft.ToolSuccess) }, weft.ToolSuccess, 0},
		{"tool error", func() any { return boxedStatuses.box(weft.ToolError) }, weft.ToolError, 0},
		{"trigger message", func() any { return boxedTriggers.box("message") }, "message", 0},
		{"trigger resume", func() any { return boxedTriggers.box("resume") }, "resume", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.box(); got != c.plain {
				t.Fatalf("boxed %#v (%T), want %#v (%T)", got, got, c.plain, c.plain)
			}
			if n := testing.AllocsPerRun(100, func() { _ = c.box() }); n > c.allocs {
				t.Errorf("%v allocations per conversion, want at most %v", n, c.allocs)
			}
		})
	}
}
