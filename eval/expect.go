package eval

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Outcome is what one turn of a case produced: what its expectations are checked against.
type Outcome struct {
	// Text is the turn's answer: the last completed, non-empty top-level reply of an AI side.
	Text string `json:"text"`
	// Value is the reply's structured value when its prompt declares an output schema.
	Value any `json:"value,omitempty"`
	// ToolCalls are the tool calls the turn made (sub-prompts included), in order.
	ToolCalls []Call `json:"tool_calls,omitempty"`
	// Steps, Tokens and CostUSD count the turn's steps and model calls (the thread's own calls,
	// sub-prompts included; judges are counted apart).
	Steps   int     `json:"steps"`
	Tokens  int     `json:"tokens"`
	CostUSD float64 `json:"cost_usd"`
	// LatencyMS is the turn's wall-clock time.
	LatencyMS int64 `json:"latency_ms"`
	// Reason is the run's stop reason; Error its failure text.
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Call is one tool call of an outcome.
type Call struct {
	Name string `json:"name"`
	// Args are the decoded arguments (nil when the model's text was not a JSON object).
	Args map[string]any `json:"args,omitempty"`
}

// Result is the verdict on one expectation.
type Result struct {
	// Expectation is the expectation as written (Expectation.String).
	Expectation string `json:"expectation"`
	Kind        string `json:"kind"`
	// Pass tells the verdict.
	Pass bool `json:"pass"`
	// Actual is the value found, shown beside a failure.
	Actual string `json:"actual,omitempty"`
	// Score and JudgeCostUSD are a judge's.
	Score        *float64 `json:"score,omitempty"`
	JudgeCostUSD float64  `json:"judge_cost_usd,omitempty"`
	// Reason is a judge's explanation, or why the check could not be made.
	Reason string `json:"reason,omitempty"`
}

// Check checks every expectation but judges (which Run asks) against an outcome.
func (x *Expectation) Check(o *Outcome) Result {
	r := Result{Expectation: x.String(), Kind: x.Kind}
	switch x.Kind {
	case KindContains:
		r.Pass, r.Actual = strings.Contains(o.Text, x.Text), quote(o.Text)
	case KindNotContains:
		r.Pass, r.Actual = !strings.Contains(o.Text, x.Text), quote(o.Text)
	case KindEquals:
		r.Pass, r.Actual = strings.TrimSpace(o.Text) == strings.TrimSpace(x.Text), quote(o.Text)
	case KindRegex:
		r.Pass, r.Actual = x.re.MatchString(o.Text), quote(o.Text)
	case KindJSONSchema:
		v := o.Value
		if v == nil {
			if err := json.Unmarshal([]byte(strings.TrimSpace(o.Text)), &v); err != nil {
				r.Actual, r.Reason = quote(o.Text), "the reply is not JSON"
				return r
			}
		}
		if _, err := x.validator.Validate(v); err != nil {
			r.Actual, r.Reason = compactJSON(v), firstLine(err.Error())
			return r
		}
		r.Pass = true
	case KindToolCalled, KindNotToolCalled:
		found := false
		for _, c := range o.ToolCalls {
			if c.Name == x.Tool && (len(x.Args) == 0 || subset(x.Args, c.Args)) {
				found = true
				break
			}
		}
		r.Pass = found == (x.Kind == KindToolCalled)
		r.Actual = callsText(o.ToolCalls)
	case KindMaxToolCalls:
		r.Pass, r.Actual = float64(len(o.ToolCalls)) <= x.Max, strconv.Itoa(len(o.ToolCalls))
	case KindMaxTokens:
		r.Pass, r.Actual = float64(o.Tokens) <= x.Max, strconv.Itoa(o.Tokens)
	case KindMaxSteps:
		r.Pass, r.Actual = float64(o.Steps) <= x.Max, strconv.Itoa(o.Steps)
	case KindMaxLatencyMS:
		r.Pass, r.Actual = float64(o.LatencyMS) <= x.Max, strconv.FormatInt(o.LatencyMS, 10)
	case KindMaxCostUSD:
		r.Pass, r.Actual = o.CostUSD <= x.Max, formatNumber(o.CostUSD)
	default:
		r.Reason = "not checked here: " + x.Kind
	}
	return r
}

// subset reports whether every key of want is in got with an equal value (mappings compared
// as subsets too, numbers by value).
func subset(want, got map[string]any) bool {
	for k, w := range want {
		g, ok := got[k]
		if !ok || !sameValue(w, g) {
			return false
		}
	}
	return true
}

func sameValue(w, g any) bool {
	if wn, ok := number(w); ok {
		gn, ok := number(g)
		return ok && wn == gn
	}
	switch wv := w.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		return ok && subset(wv, gv)
	case []any:
		gv, ok := g.([]any)
		if !ok || len(gv) != len(wv) {
			return false
		}
		for i := range wv {
			if !sameValue(wv[i], gv[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(w, g)
}

func callsText(calls []Call) string {
	if len(calls) == 0 {
		return "no tool calls"
	}
	parts := make([]string, len(calls))
	for i, c := range calls {
		parts[i] = c.Name + compactJSON(c.Args)
	}
	return strings.Join(parts, ", ")
}

func compactJSON(v any) string {
	if v == nil {
		return "{}"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// quote shows a text beside a failure: quoted, at most 200 characters.
func quote(s string) string {
	r := []rune(s)
	if len(r) > 200 {
		return strconv.Quote(string(r[:200])) + "…"
	}
	return strconv.Quote(s)
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
