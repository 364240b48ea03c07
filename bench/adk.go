package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"
)

// Google's ADK for Go: an llmagent with a function tool, run by a runner over ADK's in-memory
// session service. ADK reads a conversation's history from its session service, so Prepare
// creates sessions holding the prior messages, outside the timed region.

const adkApp, adkUser, adkAgent = "bench", "user", "support"

// adkArgs is LookupArgs with the tag google/jsonschema-go reads (a bare description).
type adkArgs struct {
	OrderID int `json:"order_id" jsonschema:"Numeric id of the order"`
}

type adkModel struct {
	c    *Counts
	args string
}

func (adkModel) Name() string { return "fake" }

func (m adkModel) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		yield(m.generate(req))
	}
}

func (m adkModel) generate(req *model.LLMRequest) (*model.LLMResponse, error) {
	if req.Config == nil || len(req.Config.Tools) != 1 || len(req.Config.Tools[0].FunctionDeclarations) != 1 ||
		req.Config.Tools[0].FunctionDeclarations[0].Name != ToolName {
		return nil, fmt.Errorf("%w: the tool was not offered", ErrConversation)
	}
	n := len(req.Contents)
	if req.Config.SystemInstruction != nil {
		n++ // the system prompt travels beside the contents
	}
	last := req.Contents[len(req.Contents)-1]
	role, text := last.Role, ""
	if len(last.Parts) > 0 {
		if fr := last.Parts[0].FunctionResponse; fr != nil {
			role = "tool"
			if s, ok := fr.Response["result"].(string); ok {
				text = s
			} else {
				b, _ := json.Marshal(fr.Response)
				text = string(b)
			}
		} else {
			text = last.Parts[0].Text
		}
	}
	call, err := m.c.Reply(n, role, text)
	if err != nil {
		return nil, err
	}
	if call {
		var args map[string]any // as a provider adapter hands them over
		if err := json.Unmarshal([]byte(m.args), &args); err != nil {
			return nil, err
		}
		return &model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{
			FunctionCall: &genai.FunctionCall{ID: CallID, Name: ToolName, Args: args}}}},
			FinishReason: genai.FinishReasonStop, TurnComplete: true}, nil
	}
	return &model.LLMResponse{Content: genai.NewContentFromText(Answer, genai.RoleModel),
		FinishReason: genai.FinishReasonStop, TurnComplete: true}, nil
}

type adkRunner struct {
	r     *runner.Runner
	svc   session.Service
	prior []*genai.Content
	ids   []string
	next  int
}

func newADK(cfg Config) (Runner, error) {
	lookup, err := functiontool.New(functiontool.Config{Name: ToolName, Description: ToolDoc},
		func(_ agent.Context, a adkArgs) (string, error) { return cfg.Counts.Lookup(LookupArgs(a)) })
	if err != nil {
		return nil, err
	}
	a, err := llmagent.New(llmagent.Config{Name: adkAgent, Description: "order support",
		Model: adkModel{c: cfg.Counts, args: argsFor(cfg)}, Instruction: System, Tools: []tool.Tool{lookup}})
	if err != nil {
		return nil, err
	}
	svc := session.InMemoryService()
	r, err := runner.New(runner.Config{AppName: adkApp, Agent: a, SessionService: svc})
	if err != nil {
		return nil, err
	}
	ar := &adkRunner{r: r, svc: svc}
	for i := range Prior {
		role := genai.Role(genai.RoleUser)
		if i%2 == 1 {
			role = genai.RoleModel
		}
		ar.prior = append(ar.prior, genai.NewContentFromText(PriorText(i), role))
	}
	return ar, nil
}

func (a *adkRunner) Prepare(ctx context.Context, n int) error {
	for _, id := range a.ids {
		if err := a.svc.Delete(ctx, &session.DeleteRequest{AppName: adkApp, UserID: adkUser, SessionID: id}); err != nil {
			return err
		}
	}
	a.ids = a.ids[:0]
	for range n {
		a.next++
		id := "s" + strconv.Itoa(a.next)
		cr, err := a.svc.Create(ctx, &session.CreateRequest{AppName: adkApp, UserID: adkUser, SessionID: id})
		if err != nil {
			return err
		}
		for j, c := range a.prior {
			ev := session.NewEvent(ctx, "prior-"+strconv.Itoa(j/2))
			ev.Author = adkUser
			if c.Role == genai.RoleModel {
				ev.Author = adkAgent
			}
			ev.Content = c
			if err := a.svc.AppendEvent(ctx, cr.Session, ev); err != nil {
				return err
			}
		}
		a.ids = append(a.ids, id)
	}
	return nil
}

func (a *adkRunner) Close() error { return nil }

func (a *adkRunner) Turn(ctx context.Context, i int) (string, error) {
	var final string
	for ev, err := range a.r.Run(ctx, adkUser, a.ids[i], genai.NewContentFromText(Question, genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			return "", err
		}
		if ev != nil && ev.Content != nil && ev.IsFinalResponse() && len(ev.Content.Parts) > 0 && ev.Content.Parts[0].Text != "" {
			final = ev.Content.Parts[0].Text
		}
	}
	if final == "" {
		return "", errors.New("adk-go: no final response")
	}
	return final, nil
}
