package main

import (
	"context"
	"slices"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/scripted"
)

// document is the `weft run --json` document. Secrets are redacted; keys are stable and new keys
// may be added.
type document struct {
	// Version is the weft that wrote the document.
	Version  string         `json:"version"`
	Thread   *weft.Thread   `json:"thread"`
	Result   runResult      `json:"result"`
	Messages []weft.Message `json:"messages"`
	Usage    usage          `json:"usage"`
	Children []childRow     `json:"children"`
	Effects  []effectRow    `json:"effects"`
	Script   *scriptStats   `json:"script"`
}

// childRow is a child thread in the document: its registry status and its own document.
type childRow struct {
	Reference string    `json:"reference"`
	Agent     string    `json:"agent"`
	Status    string    `json:"status"`
	Document  *document `json:"document"`
}

type runResult struct {
	Reason weft.StopReason `json:"reason"`
	OK     bool            `json:"ok"`
	Error  *string         `json:"error"`
	Text   string          `json:"text"`
	// Value is the structured answer of a prompt with an output schema (absent otherwise).
	Value any `json:"value,omitempty"`
	Steps int `json:"steps"`
}

// effectRow lists a thread's effect in the document.
type effectRow struct {
	ID     string            `json:"id"`
	Name   string            `json:"name"`
	Status weft.EffectStatus `json:"status"`
	RunAt  time.Time         `json:"run_at"`
	Error  string            `json:"error,omitempty"`
}

type usage struct {
	Calls              int      `json:"calls"`
	InputTokens        int      `json:"input_tokens"`
	OutputTokens       int      `json:"output_tokens"`
	CachedTokens       int      `json:"cached_tokens"`
	ReasoningTokens    int      `json:"reasoning_tokens"`
	CostTotal          *float64 `json:"cost_total"`
	RedactionsLastLine int      `json:"redactions_last_line"`
}

type scriptStats struct {
	Consumed  int `json:"consumed"`
	Remaining int `json:"remaining"`
}

// docSource is what a document is read from: a store, or a server (remoteSource).
type docSource interface {
	Thread(ctx context.Context, id string) (*weft.Thread, error)
	Messages(ctx context.Context, threadID string, q weft.MessageQuery) ([]weft.Message, error)
	Logs(ctx context.Context, threadID string, q weft.LogQuery) ([]weft.LogEntry, error)
	Effects(ctx context.Context, threadID string) ([]weft.EffectRecord, error)
	Threads(ctx context.Context, q weft.ThreadQuery) ([]*weft.Thread, int, error)
}

func buildDocument(ctx context.Context, st docSource, threadID string, res *engine.RunResult, script *scripted.Provider) (*document, error) {
	th, err := st.Thread(ctx, threadID)
	if err != nil {
		return nil, err
	}
	msgs, err := st.Messages(ctx, threadID, weft.MessageQuery{Limit: 1 << 30, MaxDepth: 1 << 20})
	if err != nil {
		return nil, err
	}
	logs, err := st.Logs(ctx, threadID, weft.LogQuery{Limit: 1 << 30, MaxDepth: 1 << 20})
	if err != nil {
		return nil, err
	}
	doc := &document{Version: version(), Thread: th, Messages: msgs, Children: []childRow{}, Effects: []effectRow{}}
	effects, err := st.Effects(ctx, threadID)
	if err != nil {
		return nil, err
	}
	for _, e := range effects {
		doc.Effects = append(doc.Effects, effectRow{ID: e.ID, Name: e.Name, Status: e.Status, RunAt: e.RunAt, Error: e.Error})
	}
	if doc.Messages == nil {
		doc.Messages = []weft.Message{}
	}
	last := res.Last()
	reason := last.Reason
	if reason == "" {
		reason = th.StopReason
	}
	doc.Result = runResult{Reason: reason, OK: reason.OK(), Steps: res.Steps, Text: resultText(msgs), Value: resultValue(msgs)}
	if last.Error != "" {
		e := last.Error
		doc.Result.Error = &e
	}
	for _, l := range logs {
		if l.Kind != "llm" {
			continue
		}
		doc.Usage.Calls++
		doc.Usage.InputTokens += l.InputTokens
		doc.Usage.OutputTokens += l.OutputTokens
		doc.Usage.CachedTokens += l.CachedTokens
		doc.Usage.ReasoningTokens += l.ReasoningTokens
		if l.CostTotal != nil {
			c := *l.CostTotal
			if doc.Usage.CostTotal != nil {
				c = weft.RoundUSD(c + *doc.Usage.CostTotal)
			}
			doc.Usage.CostTotal = &c
		}
	}
	doc.Usage.RedactionsLastLine = res.LastLineRedactions
	// Every direct child, terminated included, in creation order, with its own document.
	kids, _, err := st.Threads(ctx, weft.ThreadQuery{ParentID: threadID, Sort: "oldest", Limit: -1})
	if err != nil {
		return nil, err
	}
	for _, k := range kids {
		cd, err := buildDocument(ctx, st, k.ID, &engine.RunResult{}, nil)
		if err != nil {
			return nil, err
		}
		doc.Children = append(doc.Children, childRow{Reference: k.ID, Agent: k.Agent, Status: k.Status.SubagentStatus(), Document: cd})
	}
	if script != nil {
		doc.Script = &scriptStats{Consumed: script.Consumed(), Remaining: script.Remaining()}
	}
	return doc, nil
}

// resultText is the text of the last completed top-level message authored by an AI side: side A's
// assistant rows and side B's replies of a dual_ai agent (stored as user rows).
func resultText(msgs []weft.Message) string {
	if m := lastReply(msgs); m != nil {
		return m.Content
	}
	return ""
}

// resultValue is the structured value of the last reply, if it has one.
func resultValue(msgs []weft.Message) any {
	if m := lastReply(msgs); m != nil {
		return m.Metadata["structured"]
	}
	return nil
}

// lastReply is the last completed top-level reply of an AI side.
func lastReply(msgs []weft.Message) *weft.Message {
	for i, m := range slices.Backward(msgs) {
		if m.Depth != 0 || m.Status != weft.MessageCompleted || m.Prompt == "" {
			continue
		}
		if m.Role == weft.RoleAssistant || m.Role == weft.RoleUser {
			return &msgs[i]
		}
	}
	return nil
}
