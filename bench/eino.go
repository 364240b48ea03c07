package bench

import (
	"context"
	"fmt"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	toolutils "github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
)

// eino's ReAct agent (flow/agent/react), the fastest Go peer: a compiled graph of a chat model
// node and a tools node, run with Generate. It keeps no state: the history travels in the call.

type einoModel struct {
	c     *Counts
	args  string
	tools []*schema.ToolInfo
}

func (m *einoModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	c := *m
	c.tools = tools
	return &c, nil
}

func (m *einoModel) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	if len(m.tools) != 1 || m.tools[0].Name != ToolName {
		return nil, fmt.Errorf("%w: the tool was not offered", ErrConversation)
	}
	last := in[len(in)-1]
	call, err := m.c.Reply(len(in), string(last.Role), last.Content)
	if err != nil {
		return nil, err
	}
	if call {
		return &schema.Message{Role: schema.Assistant, ToolCalls: []schema.ToolCall{{
			ID: CallID, Type: "function", Function: schema.FunctionCall{Name: ToolName, Arguments: m.args}}}}, nil
	}
	return schema.AssistantMessage(Answer, nil), nil
}

func (m *einoModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	out, err := m.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{out}), nil
}

type einoRunner struct {
	agent *react.Agent
	prior []*schema.Message
}

func newEino(cfg Config) (Runner, error) {
	lookup, err := toolutils.InferTool(ToolName, ToolDoc, func(_ context.Context, a LookupArgs) (string, error) {
		return cfg.Counts.Lookup(a)
	})
	if err != nil {
		return nil, err
	}
	a, err := react.NewAgent(context.Background(), &react.AgentConfig{
		ToolCallingModel: &einoModel{c: cfg.Counts, args: argsFor(cfg)},
		ToolsConfig:      compose.ToolsNodeConfig{Tools: []tool.BaseTool{lookup}},
		MaxStep:          8,
	})
	if err != nil {
		return nil, err
	}
	r := &einoRunner{agent: a, prior: []*schema.Message{schema.SystemMessage(System)}}
	for i := range Prior {
		if i%2 == 0 {
			r.prior = append(r.prior, schema.UserMessage(PriorText(i)))
		} else {
			r.prior = append(r.prior, schema.AssistantMessage(PriorText(i), nil))
		}
	}
	return r, nil
}

func (r *einoRunner) Prepare(context.Context, int) error { return nil }
func (r *einoRunner) Close() error                       { return nil }

func (r *einoRunner) Turn(ctx context.Context, _ int) (string, error) {
	in := make([]*schema.Message, len(r.prior), len(r.prior)+1)
	copy(in, r.prior)
	out, err := r.agent.Generate(ctx, append(in, schema.UserMessage(Question)))
	if err != nil {
		return "", err
	}
	return out.Content, nil
}
