package scripted

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/weft-agents/weft"
)

// check evaluates the expectations on req in a fixed order (system text, messages, last message,
// tool results, counts and roles, offered tools, tool choice, model, prompt, images) and returns the
// first failure ("" when all hold), phrased as `expected … (got …)`.
func (x *Expect) check(req *weft.Request) string {
	if len(x.SystemContains) > 0 || len(x.SystemNotContains) > 0 {
		sys := systemText(req.Messages)
		for _, s := range x.SystemContains {
			if !strings.Contains(sys, s) {
				if sys == "" {
					return "expected system prompt to contain " + strconv.Quote(s) + " (got no system prompt)"
				}
				return "expected system prompt to contain " + strconv.Quote(s) + " (got " + quoteClip(sys) + ")"
			}
		}
		for _, s := range x.SystemNotContains {
			if i := strings.Index(sys, s); i >= 0 {
				return "expected system prompt not to contain " + strconv.Quote(s) + " (found in " + excerpt(sys, i, len(s)) + ")"
			}
		}
	}
	for _, s := range x.Contains {
		n, last, found := 0, "", false
		for i := range req.Messages {
			m := &req.Messages[i]
			if m.Role == weft.RoleSystem {
				continue
			}
			t := m.Text()
			if strings.Contains(t, s) {
				found = true
				break
			}
			n, last = n+1, t
		}
		if !found {
			return "expected a non-system message to contain " + strconv.Quote(s) + " (got " + countLast(n, "non-system message", last) + ")"
		}
	}
	if len(x.NotContains) > 0 {
		trace := req.TraceJSON()
		for _, s := range x.NotContains {
			if i, n := indexInJSON(trace, s); i >= 0 {
				return "expected request not to contain " + strconv.Quote(s) + " (found in " + excerpt(string(trace), i, n) + ")"
			}
		}
	}
	if len(x.LastRole) > 0 || len(x.LastContains) > 0 {
		if len(req.Messages) == 0 {
			if len(x.LastRole) > 0 {
				return "expected last message role " + strconv.Quote(string(x.LastRole[0])) + " (got no messages)"
			}
			return "expected last message to contain " + strconv.Quote(x.LastContains[0]) + " (got no messages)"
		}
		last := &req.Messages[len(req.Messages)-1]
		for _, r := range x.LastRole {
			if last.Role != r {
				return "expected last message role " + strconv.Quote(string(r)) + " (got " + strconv.Quote(string(last.Role)) + ")"
			}
		}
		if len(x.LastContains) > 0 {
			t := last.Text()
			for _, s := range x.LastContains {
				if !strings.Contains(t, s) {
					return "expected last message to contain " + strconv.Quote(s) + " (got " + quoteClip(t) + ")"
				}
			}
		}
	}
	for _, s := range x.ToolResultContains {
		n, last, found := 0, "", false
		for i := range req.Messages {
			m := &req.Messages[i]
			if m.Role != weft.RoleTool {
				continue
			}
			t := m.Text()
			if strings.Contains(t, s) {
				found = true
				break
			}
			n, last = n+1, t
		}
		if !found {
			return "expected a tool result to contain " + strconv.Quote(s) + " (got " + countLast(n, "tool result", last) + ")"
		}
	}
	if x.MessageCount != nil || x.Roles != nil {
		n := 0
		for i := range req.Messages {
			if req.Messages[i].Role != weft.RoleSystem {
				n++
			}
		}
		if x.MessageCount != nil && n != *x.MessageCount {
			return "expected " + plural(*x.MessageCount, "non-system message") + " (got " + strconv.Itoa(n) + ")"
		}
		if x.Roles != nil {
			got := make([]string, 0, n)
			for i := range req.Messages {
				if r := req.Messages[i].Role; r != weft.RoleSystem {
					got = append(got, string(r))
				}
			}
			want := make([]string, len(x.Roles))
			for i, r := range x.Roles {
				want[i] = string(r)
			}
			if !slices.Equal(want, got) {
				return "expected roles " + list(want) + " (got " + list(got) + ")"
			}
		}
	}
	if x.Tools != nil || len(x.ToolsInclude) > 0 || len(x.ToolsExclude) > 0 {
		offered := offeredTools(req)
		if x.Tools != nil {
			if !sameSet(x.Tools, offered) {
				return "expected tools " + list(x.Tools) + " (got " + list(offered) + ")"
			}
		}
		for _, t := range x.ToolsInclude {
			if !slices.Contains(offered, t) {
				return "expected tools to include " + strconv.Quote(t) + " (got " + list(offered) + ")"
			}
		}
		for _, t := range x.ToolsExclude {
			if slices.Contains(offered, t) {
				return "expected tools to exclude " + strconv.Quote(t) + " (got " + list(offered) + ")"
			}
		}
	}
	if len(x.ToolChoice) > 0 {
		got := req.ToolChoice
		if got == "" {
			got = weft.ToolChoiceAuto
		}
		for _, c := range x.ToolChoice {
			if c != got {
				return "expected tool_choice " + strconv.Quote(string(c)) + " (got " + strconv.Quote(string(got)) + ")"
			}
		}
	}
	if len(x.Model) > 0 {
		got := modelName(req)
		for _, m := range x.Model {
			if m != got {
				return "expected model " + strconv.Quote(m) + " (got " + strconv.Quote(got) + ")"
			}
		}
	}
	for _, pr := range x.Prompt {
		if pr != req.Prompt {
			return "expected prompt " + strconv.Quote(pr) + " (got " + strconv.Quote(req.Prompt) + ")"
		}
	}
	if x.Images != nil {
		n := 0
		for i := range req.Messages {
			for _, part := range req.Messages[i].Parts {
				if part.Type == weft.PartImage {
					n++
				}
			}
		}
		if n != *x.Images {
			return "expected " + plural(*x.Images, "image part") + " (got " + strconv.Itoa(n) + ")"
		}
	}
	return ""
}

// systemText is the text of the system messages, joined by blank lines when there are several.
func systemText(msgs []weft.LLMMessage) string {
	var first string
	var b *strings.Builder
	n := 0
	for i := range msgs {
		if msgs[i].Role != weft.RoleSystem {
			continue
		}
		t := msgs[i].Text()
		switch n {
		case 0:
			first = t
		case 1:
			b = &strings.Builder{}
			b.WriteString(first)
			fallthrough
		default:
			b.WriteString("\n\n")
			b.WriteString(t)
		}
		n++
	}
	if b != nil {
		return b.String()
	}
	return first
}

// offeredTools lists the tool names sent: none under tool choice none.
func offeredTools(req *weft.Request) []string {
	if req.ToolChoice == weft.ToolChoiceNone {
		return []string{}
	}
	names := make([]string, len(req.Tools))
	for i, t := range req.Tools {
		names[i] = t.Name
	}
	return names
}

func modelName(req *weft.Request) string {
	if req.Model == nil {
		return ""
	}
	return req.Model.Name
}

// sameSet reports whether a and b hold the same names, ignoring order and repeats.
func sameSet(a, b []string) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	for _, s := range b {
		if !slices.Contains(a, s) {
			return false
		}
	}
	return true
}

// indexInJSON finds s in a JSON text, as written or JSON-escaped; it returns the offset and length of
// the hit, or -1.
func indexInJSON(doc []byte, s string) (int, int) {
	if i := bytes.Index(doc, []byte(s)); i >= 0 {
		return i, len(s)
	}
	enc, err := json.Marshal(s)
	if err != nil || len(enc) < 2 {
		return -1, 0
	}
	enc = enc[1 : len(enc)-1]
	if string(enc) == s {
		return -1, 0
	}
	if i := bytes.Index(doc, enc); i >= 0 {
		return i, len(enc)
	}
	return -1, 0
}

// excerpt quotes the hit at s[i:i+n] with some context around it.
func excerpt(s string, i, n int) string {
	const around = 30
	start, end := max(i-around, 0), min(i+n+around, len(s))
	for start > 0 && !utf8.RuneStart(s[start]) {
		start--
	}
	for end < len(s) && !utf8.RuneStart(s[end]) {
		end++
	}
	q := s[start:end]
	if start > 0 {
		q = "…" + q
	}
	if end < len(s) {
		q += "…"
	}
	return strconv.Quote(q)
}

// countLast describes n items with the last one's text: `2 tool results, last "…"`.
func countLast(n int, noun, last string) string {
	if n == 0 {
		return "no " + noun + "s"
	}
	return plural(n, noun) + ", last " + quoteClip(last)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// list formats names as `[a, b]`.
func list(names []string) string {
	return "[" + strings.Join(names, ", ") + "]"
}

// quoteClip quotes the start of s.
func quoteClip(s string) string { return strconv.Quote(clip(s, 60)) }

// clip shortens s to n runes, marking a cut with an ellipsis.
func clip(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}
