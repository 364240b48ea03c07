package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/weft-agents/weft"
)

// ProviderName is this adapter's provider name. A weft.ToolSpec whose Provider
// is ProviderName ("gemini" is accepted too, and so is the request model's own provider name, for
// custom providers based on google) is one of Gemini's built-in tools, which Gemini runs itself.
const ProviderName = "google"

// builtinKeys are the tool keys of the built-in tools Weft knows by name; web_search is an alias
// of google_search, so that a prompt can offer the same search tool to any provider. Other names
// are sent in lowerCamelCase (google_maps → {"googleMaps": {}}).
var builtinKeys = map[string]string{
	"google_search":  "googleSearch",
	"web_search":     "googleSearch",
	"code_execution": "codeExecution",
	"url_context":    "urlContext",
}

// maxSummary bounds the text of one result summary.
const maxSummary = 16 << 10

// ownTool reports whether t is a built-in tool of this adapter.
func ownTool(t weft.ToolSpec, req *weft.Request) bool {
	if t.Provider == "" {
		return false
	}
	return t.Provider == ProviderName || t.Provider == "gemini" || req.Model != nil && t.Provider == req.Model.Provider
}

// builtinKey returns the tool key of a built-in tool's Weft name.
func builtinKey(name string) string {
	if k, ok := builtinKeys[name]; ok {
		return k
	}
	var b strings.Builder
	up := false
	for _, r := range name {
		switch {
		case r == '_' || r == '-':
			up = b.Len() > 0
		case up:
			b.WriteRune(unicode.ToUpper(r))
			up = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// builtins are the built-in tools of a request: the tool objects to send, and the Weft names to
// give the calls Gemini reports (the first offered name of each tool; a default when a reply uses
// a tool that was not offered by name).
type builtins struct {
	tools              []any
	search, code, urls string
	// options are the request options configuring the offered tools (one per tool, named after
	// it): they go into the tool objects, never into the request body.
	options map[string]bool
}

// offeredBuiltins collects the built-in tools of req. The keys of a map-valued request option
// named after a tool (e.g. google_search: {timeRangeFilter: {...}}) become the tool's settings.
// Like function tools, they are not sent when the tool choice is none.
func offeredBuiltins(req *weft.Request) *builtins {
	b := &builtins{search: "google_search", code: "code_execution", urls: "url_context"}
	var named map[string]bool
	var byKey map[string]map[string]any
	for _, t := range req.Tools {
		if !ownTool(t, req) {
			continue
		}
		if b.options == nil {
			b.options, named, byKey = map[string]bool{}, map[string]bool{}, map[string]map[string]any{}
		}
		b.options[t.Name] = true
		key := builtinKey(t.Name)
		if key == "" {
			continue
		}
		switch key {
		case "googleSearch", "codeExecution", "urlContext":
			if !named[key] {
				named[key] = true
				switch key {
				case "googleSearch":
					b.search = t.Name
				case "codeExecution":
					b.code = t.Name
				default:
					b.urls = t.Name
				}
			}
		}
		if req.ToolChoice == weft.ToolChoiceNone {
			continue
		}
		settings, seen := byKey[key]
		if !seen {
			settings = map[string]any{}
			byKey[key] = settings
			b.tools = append(b.tools, map[string]any{key: settings})
		}
		// Two names of one tool (google_search and web_search) become one tool object.
		switch opts := req.Option(t.Name).(type) {
		case map[string]any:
			for k, v := range opts {
				settings[k] = v
			}
		case map[string]string:
			for k, v := range opts {
				settings[k] = v
			}
		}
	}
	return b
}

// replay is how a provider-executed call of an earlier Gemini reply goes back to Gemini.
type replay struct {
	// parts are the verbatim executableCode and codeExecutionResult parts, sent in the model
	// turn; none for grounding and URL context, which Gemini cannot take back (the call is left
	// out, the text it informed stays).
	parts []json.RawMessage
}

// providerRaw reads metadata provider_raw of a tool message (json.RawMessage, bytes, a JSON
// string, or the decoded JSON after a round trip through a store) and reports how to replay the
// call, or false when the value is not Gemini's (another provider's raw items, damage): the call
// then goes as an ordinary functionCall/functionResponse pair.
func providerRaw(md map[string]any) (replay, bool) {
	raw, ok := weft.MetadataJSON(md["provider_raw"])
	if !ok {
		return replay{}, false
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return replay{}, false
	}
	switch raw[0] {
	case '[':
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
			return replay{}, false
		}
		code := false
		for _, p := range list {
			var m map[string]json.RawMessage
			if json.Unmarshal(p, &m) != nil || m == nil {
				return replay{}, false
			}
			known := false
			for k := range m {
				switch k {
				case "executableCode":
					code, known = true, true
				case "codeExecutionResult":
					known = true
				case "thoughtSignature", "thought":
				default:
					return replay{}, false
				}
			}
			if !known {
				return replay{}, false
			}
		}
		if !code {
			return replay{}, false
		}
		return replay{parts: list}, true
	case '{':
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return replay{}, false
		}
		for _, k := range []string{"webSearchQueries", "groundingChunks", "groundingSupports", "searchEntryPoint", "urlMetadata"} {
			if _, ok := m[k]; ok {
				if _, typed := m["type"]; !typed { // other providers' items carry a type
					return replay{}, true
				}
			}
		}
	}
	return replay{}, false
}

// codeRun is an executableCode part of a reply and the codeExecutionResult answering it.
type codeRun struct {
	call         int             // index of the run's call in the assembler's calls
	id           string          // the parts' own id, when Gemini gives one
	code, result json.RawMessage // verbatim parts
	outcome      string
	output       string
}

// wireExecutableCode is an executableCode part's payload.
type wireExecutableCode struct {
	ID       string `json:"id,omitempty"`
	Language string `json:"language,omitempty"`
	Code     string `json:"code"`
}

// wireCodeResult is a codeExecutionResult part's payload.
type wireCodeResult struct {
	ID      string `json:"id,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	Output  string `json:"output,omitempty"`
}

// wireGrounding is what the adapter reads of groundingMetadata.
type wireGrounding struct {
	WebSearchQueries []string `json:"webSearchQueries"`
	GroundingChunks  []struct {
		Web *struct {
			URI   string `json:"uri"`
			Title string `json:"title"`
		} `json:"web"`
		RetrievedContext *struct {
			URI   string `json:"uri"`
			Title string `json:"title"`
		} `json:"retrievedContext"`
	} `json:"groundingChunks"`
}

// wireURLContext is what the adapter reads of urlContextMetadata.
type wireURLContext struct {
	URLMetadata []struct {
		RetrievedURL       string `json:"retrievedUrl"`
		URLRetrievalStatus string `json:"urlRetrievalStatus"`
	} `json:"urlMetadata"`
}

// codeResult is the weft.ProviderToolResult of a code run. A run without a result (a reply cut
// short) is an error without Raw: a lone executableCode part is not sent back, the call then goes
// as an ordinary functionCall/functionResponse pair.
func codeResult(id string, r *codeRun) weft.ProviderToolResult {
	if r.result == nil {
		return weft.ProviderToolResult{CallID: id, Status: weft.ToolError,
			Content: "gemini: the reply carries no result for this code execution"}
	}
	res := weft.ProviderToolResult{CallID: id, Status: weft.ToolSuccess}
	out := strings.TrimRight(r.output, "\n")
	switch r.outcome {
	case "OUTCOME_OK", "":
		if out == "" {
			out = "(no output)"
		}
	default:
		res.Status = weft.ToolError
		out = strings.TrimSpace(r.outcome + "\n" + out)
	}
	res.Content = clip(out, maxSummary)
	res.Raw, _ = json.Marshal([]json.RawMessage{r.code, r.result})
	return res
}

// groundingCall returns the call and result of a reply's Google Search grounding, or false when
// the metadata shows no search (no queries).
func groundingCall(id, name string, raw json.RawMessage) (weft.ToolCall, weft.ProviderToolResult, bool) {
	var g wireGrounding
	if json.Unmarshal(raw, &g) != nil || len(g.WebSearchQueries) == 0 {
		return weft.ToolCall{}, weft.ProviderToolResult{}, false
	}
	args, _ := json.Marshal(map[string][]string{"queries": g.WebSearchQueries})
	var b strings.Builder
	b.WriteString("Google Search: " + strings.Join(g.WebSearchQueries, "; "))
	n := 0
	for _, c := range g.GroundingChunks {
		src := c.Web
		if src == nil {
			src = c.RetrievedContext
		}
		if src == nil || src.URI == "" && src.Title == "" {
			continue
		}
		n++
		title := src.Title
		if title == "" {
			title = src.URI
		}
		fmt.Fprintf(&b, "\n%d. %s\n   %s", n, title, src.URI)
	}
	return weft.ToolCall{ID: id, Name: name, Arguments: string(args)},
		weft.ProviderToolResult{CallID: id, Status: weft.ToolSuccess, Content: clip(b.String(), maxSummary), Raw: raw}, true
}

// urlContextCall returns the call and result of a reply's URL context retrievals, or false when
// there were none. It is an error when no URL could be retrieved.
func urlContextCall(id, name string, raw json.RawMessage) (weft.ToolCall, weft.ProviderToolResult, bool) {
	var u wireURLContext
	if json.Unmarshal(raw, &u) != nil || len(u.URLMetadata) == 0 {
		return weft.ToolCall{}, weft.ProviderToolResult{}, false
	}
	urls := make([]string, 0, len(u.URLMetadata))
	var b strings.Builder
	b.WriteString("URL context:")
	ok := false
	for _, m := range u.URLMetadata {
		urls = append(urls, m.RetrievedURL)
		status := strings.ToLower(strings.TrimPrefix(m.URLRetrievalStatus, "URL_RETRIEVAL_STATUS_"))
		if status == "success" {
			ok = true
		}
		fmt.Fprintf(&b, "\n- %s (%s)", m.RetrievedURL, status)
	}
	args, _ := json.Marshal(map[string][]string{"urls": urls})
	res := weft.ProviderToolResult{CallID: id, Status: weft.ToolSuccess, Content: clip(b.String(), maxSummary), Raw: raw}
	if !ok {
		res.Status = weft.ToolError
	}
	return weft.ToolCall{ID: id, Name: name, Arguments: string(args)}, res, true
}

// callPrefix makes the ids of a reply's provider-executed calls unique within a thread: Gemini
// gives them none (or ids unique only within the reply), so they derive from the response id, or
// from a fresh id when the reply has none.
func callPrefix(responseID string) string {
	var b strings.Builder
	for _, r := range responseID {
		if r < 128 && (r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return weft.NewID("gemini_")
	}
	return "gemini_" + b.String()
}

// clip shortens s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "… [truncated]"
}

// codeArgs are the arguments of a code execution call: the executableCode payload.
func codeArgs(c *wireExecutableCode) string {
	b, err := json.Marshal(c)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// runID returns the id of the n-th (from 1) code run of a reply.
func runID(prefix string, n int) string { return prefix + "_code_" + strconv.Itoa(n) }
