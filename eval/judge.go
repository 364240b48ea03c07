package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/prompty"
	"github.com/weft-agents/weft/schema"
)

// judge is a loaded judge prompt: a .prompty file, or a YAML file with system and prompt
// templates.
type judge struct {
	name  string
	model string // the prompt's own model name ("" when none)
	file  *prompty.File
	// system and user are a YAML judge's templates ({{name}} placeholders).
	system, user string
	options      map[string]any
}

// loadJudge reads a judge prompt.
func loadJudge(path string) (*judge, error) {
	if strings.EqualFold(filepath.Ext(path), ".prompty") {
		// A judge's own model connection (Microsoft's evaluators name an Azure deployment through
		// ${env:}) is not used: the eval names the model that judges.
		f, err := prompty.Load(path, prompty.Options{LookupEnv: func(string) (string, bool) { return "", true }})
		if err != nil {
			return nil, err
		}
		return &judge{name: f.Name, model: f.Model, file: f, options: f.ModelOptions}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPath(err))
	}
	var y struct {
		Name    string         `yaml:"name"`
		Model   string         `yaml:"model"`
		System  string         `yaml:"system"`
		Prompt  string         `yaml:"prompt"`
		Options map[string]any `yaml:"options"`
	}
	if err := yaml.UnmarshalWithOptions(data, &y, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("%s: %s (keys: name, model, system, prompt, options)", path, firstLine(err.Error()))
	}
	if strings.TrimSpace(y.Prompt) == "" {
		return nil, fmt.Errorf("%s: prompt: required: the judge's instructions, with {{answer}}, {{question}}, … placeholders", path)
	}
	if y.Name == "" {
		y.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return &judge{name: y.Name, model: y.Model, system: y.System, user: y.Prompt, options: y.Options}, nil
}

var placeholder = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)

// messages renders the judge with its inputs.
func (j *judge) messages(inputs map[string]any) ([]weft.LLMMessage, error) {
	if j.file != nil {
		r, err := j.file.Render(prompty.RenderInput{Args: inputs})
		if err != nil {
			return nil, err
		}
		var out []weft.LLMMessage
		if r.System != "" {
			out = append(out, weft.LLMMessage{Role: weft.RoleSystem, Content: r.System})
		}
		out = append(out, r.Prefix...)
		out = append(out, r.Suffix...)
		if len(out) == 0 || out[len(out)-1].Role == weft.RoleAssistant || out[len(out)-1].Role == weft.RoleSystem {
			out = append(out, weft.LLMMessage{Role: weft.RoleUser, Content: "Score the answer."})
		}
		return out, nil
	}
	fill := func(s string) string {
		return placeholder.ReplaceAllStringFunc(s, func(m string) string {
			v, ok := inputs[placeholder.FindStringSubmatch(m)[1]]
			if !ok || v == nil {
				return ""
			}
			if s, ok := v.(string); ok {
				return s
			}
			return compactJSON(v)
		})
	}
	var out []weft.LLMMessage
	if j.system != "" {
		out = append(out, weft.LLMMessage{Role: weft.RoleSystem, Content: fill(j.system)})
	}
	return append(out, weft.LLMMessage{Role: weft.RoleUser, Content: fill(j.user)}), nil
}

// scoreSchema is the structured answer a judge is asked for.
var scoreSchema = schema.Object(
	schema.Field("score", schema.Describe(schema.Number(), "the score, on the scale the instructions give")),
	schema.Field("reason", schema.Describe(schema.String(), "one or two sentences on why")),
)

// verdict is a judge's answer.
type verdict struct {
	score   float64
	reason  string
	costUSD float64
}

// ask calls the judge's model once and reads its score.
func (j *judge) ask(ctx context.Context, p weft.Provider, apiKey string, m *weft.Model, inputs map[string]any) (verdict, error) {
	msgs, err := j.messages(inputs)
	if err != nil {
		return verdict{}, err
	}
	opts := map[string]any{}
	for k, v := range m.ProviderOptions {
		opts[k] = v
	}
	for k, v := range j.options {
		opts[k] = v
	}
	req := &weft.Request{Model: m, Messages: msgs, Options: opts, APIKey: apiKey, Timeouts: m.Timeouts,
		Output: &weft.OutputSpec{Name: "judge_score", Schema: scoreSchema}, Prompt: j.name, Agent: "eval_judge", Side: weft.SideA}
	resp, err := p.Call(ctx, req, nil)
	if err != nil {
		return verdict{}, fmt.Errorf("judge %s: %w", j.name, err)
	}
	v := verdict{costUSD: priceOf(m, resp.Usage)}
	score, reason, ok := readScore(resp.Text)
	if !ok {
		return v, fmt.Errorf("judge %s: no score in its answer %s", j.name, quote(resp.Text))
	}
	v.score, v.reason = score, reason
	return v, nil
}

var (
	taggedScore = regexp.MustCompile(`(?s)<S2>\s*(-?[0-9]+(?:\.[0-9]+)?)\s*</S2>`)
	firstNumber = regexp.MustCompile(`-?[0-9]+(?:\.[0-9]+)?`)
)

// readScore reads a judge's answer: the structured {"score", "reason"} object, else the shapes
// Microsoft's evaluator prompts answer in (a bare number, or <S2>score</S2>).
func readScore(text string) (float64, string, bool) {
	t := strings.TrimSpace(text)
	t = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(t, "```json"), "```"), "```")
	var obj map[string]any
	if json.Unmarshal([]byte(strings.TrimSpace(t)), &obj) == nil {
		for _, k := range []string{"score", "rating", "Score"} {
			if n, ok := number(obj[k]); ok {
				reason, _ := obj["reason"].(string)
				return n, reason, true
			}
			if s, ok := obj[k].(string); ok {
				if n, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
					reason, _ := obj["reason"].(string)
					return n, reason, true
				}
			}
		}
		return 0, "", false
	}
	if m := taggedScore.FindStringSubmatch(t); m != nil {
		n, _ := strconv.ParseFloat(m[1], 64)
		return n, "", true
	}
	if n, err := strconv.ParseFloat(t, 64); err == nil {
		return n, "", true
	}
	if m := firstNumber.FindString(t); m != "" && len(t) < 40 {
		n, _ := strconv.ParseFloat(m, 64)
		return n, "", true
	}
	return 0, "", false
}

// priceOf is a call's cost in USD: the provider's figure, else the model's prices (as the
// engine prices its own calls).
func priceOf(m *weft.Model, u weft.Usage) float64 {
	if u.Cost != nil {
		return *u.Cost
	}
	in, out, cached := deref(m.InputPrice), deref(m.OutputPrice), deref(m.InputPrice)
	if m.CachedPrice != nil {
		cached = *m.CachedPrice
	}
	return (float64(u.InputTokens-u.CachedTokens)*in + float64(u.CachedTokens)*cached + float64(u.OutputTokens+u.ReasoningTokens)*out) / 1e6
}

func deref(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}
