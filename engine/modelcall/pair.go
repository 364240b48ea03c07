package modelcall

import (
	"strings"
	"unicode/utf8"

	"github.com/weft-agents/weft"
)

// joinNonEmpty joins a and b with sep, or returns the one that is not empty.
func joinNonEmpty(a, b, sep string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + sep + b
}

// missingResult is the synthetic result of a call whose result was never stored.
const missingResult = "Tool result missing (execution was interrupted)"

// blank reports whether s is empty or only white space. It checks the ends first: context
// assembly asks it of every message, and almost none are blank.
func blank(s string) bool {
	if s == "" {
		return true
	}
	if c, d := s[0], s[len(s)-1]; c > ' ' && c < utf8.RuneSelf || d > ' ' && d < utf8.RuneSelf {
		return false
	}
	return strings.TrimSpace(s) == ""
}

// needsPairing reports whether pair would change the list: an assistant message whose calls are
// not followed by exactly their results in order, an orphan tool message, an empty message, or
// tool-result images to move.
func needsPairing(in []weft.LLMMessage) bool {
	for i := 0; i < len(in); i++ {
		m := &in[i]
		switch {
		case m.Role == weft.RoleTool:
			return true
		case (m.Role == weft.RoleAssistant || m.Role == weft.RoleUser) && len(m.ToolCalls) == 0 && len(m.Parts) == 0 && blank(m.Content):
			return true
		case m.Role == weft.RoleAssistant && len(m.ToolCalls) > 0:
			for _, c := range m.ToolCalls {
				i++
				if i >= len(in) || in[i].Role != weft.RoleTool || in[i].ToolCallID != c.ID || in[i].Metadata != nil {
					return true
				}
			}
		}
	}
	return false
}

// pair makes every assistant message with calls be followed by exactly its results in call order,
// wherever those results were stored (a message injected while a tool ran sits between them),
// synthesises missing results, drops orphan tool messages and empty messages, and moves
// tool-result images into a user message after the results block.
func pair(in []weft.LLMMessage) []weft.LLMMessage {
	out := make([]weft.LLMMessage, 0, len(in))
	used := make([]bool, len(in))
	for i, m := range in {
		if used[i] {
			continue
		}
		switch {
		case m.Role == weft.RoleTool:
			continue // orphan: results are placed with their calls
		case m.Role == weft.RoleAssistant && len(m.ToolCalls) > 0:
			out = append(out, m)
			var images []weft.ContentPart
			for _, c := range m.ToolCalls {
				res, found := weft.LLMMessage{}, false
				for j := i + 1; j < len(in); j++ {
					if !used[j] && in[j].Role == weft.RoleTool && in[j].ToolCallID == c.ID {
						res, found, used[j] = in[j], true, true
						break
					}
				}
				if !found {
					res = weft.LLMMessage{Role: weft.RoleTool, Name: c.Name, ToolCallID: c.ID, ToolStatus: weft.ToolError,
						Content: "Failed to execute tool: " + missingResult}
				}
				if imgs, ok := res.Metadata["images"].([]weft.ContentPart); ok {
					images = append(images, imgs...)
					res.Metadata = nil
				}
				out = append(out, res)
			}
			if len(images) > 0 {
				out = append(out, weft.LLMMessage{Role: weft.RoleUser, Parts: append([]weft.ContentPart{{Type: weft.PartText, Text: "Images from the tool results above:"}}, images...)})
			}
		case (m.Role == weft.RoleAssistant || m.Role == weft.RoleUser) && blank(m.Content) && len(m.Parts) == 0:
			continue // empty message (an empty reply, or the other side's calls stripped)
		default:
			out = append(out, m)
		}
	}
	return out
}
