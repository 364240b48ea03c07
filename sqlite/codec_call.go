package sqlite

// Tool-call and log rows: what a run records of its calls and of its model requests. The doc format
// itself is in codec.go.

import (
	"encoding/json"
	"time"

	"github.com/weft-agents/weft"
)

// --- tool calls: columns thread_num, call_id, seq, status; the rest in doc ---

const (
	cMessageID = iota + 1
	cName
	cArguments
	cResultMessageID
	cIdempotent
	cMeta
	cStartedAt
	cFinishedAt
)

func callDoc(c *weft.ToolCallRecord) []byte {
	w := docWriter{b: make([]byte, 0, 96)}
	w.str(cMessageID, c.MessageID)
	w.str(cName, c.Name)
	w.str(cArguments, c.Arguments)
	w.str(cResultMessageID, c.ResultMessageID)
	w.bool(cIdempotent, c.Idempotent)
	w.bytes(cMeta, c.Meta)
	if c.StartedAt != nil {
		w.time(cStartedAt, *c.StartedAt)
	}
	if c.FinishedAt != nil {
		w.time(cFinishedAt, *c.FinishedAt)
	}
	return w.b
}

func decodeCall(doc string, c *weft.ToolCallRecord) error {
	r := docReader{s: doc}
	for tag, v, ok := r.next(); ok; tag, v, ok = r.next() {
		switch tag {
		case cMessageID:
			c.MessageID = v
		case cName:
			c.Name = v
		case cArguments:
			c.Arguments = v
		case cResultMessageID:
			c.ResultMessageID = v
		case cIdempotent:
			c.Idempotent = true
		case cMeta:
			c.Meta = json.RawMessage(v)
		case cStartedAt:
			t := r.time(v)
			c.StartedAt = &t
		case cFinishedAt:
			t := r.time(v)
			c.FinishedAt = &t
		}
	}
	return r.err
}

// --- logs: columns thread_num, id, n, depth, request_body, response_body; the rest in doc ---

const (
	lRunID = iota + 1
	lMessageID
	lParentLogID
	lRetryOfLogID
	lKind
	lProvider
	lModel
	lModelID
	lPrompt
	lSide
	lDepth
	lStatusCode
	lFinishReason
	lError
	lErrorType
	lErrorOrigin
	lIsComplete
	lInputTokens
	lCachedTokens
	lOutputTokens
	lReasoningTokens
	lTotalTokens
	lCostInput
	lCostCached
	lCostOutput
	lCostTotal
	lLatencyMS
	lTTFTMS
	lGenerationMS
	lToolOffered // repeated
	lToolCalled  // repeated
	lQueuedTool  // repeated
	lToolChoice
	lCreatedAt
)

func logDoc(l *weft.LogEntry, created time.Time) []byte {
	w := docWriter{b: make([]byte, 0, 160)}
	w.str(lRunID, l.RunID)
	w.str(lMessageID, l.MessageID)
	w.str(lParentLogID, l.ParentLogID)
	w.str(lRetryOfLogID, l.RetryOfLogID)
	w.str(lKind, l.Kind)
	w.str(lProvider, l.Provider)
	w.str(lModel, l.Model)
	w.str(lModelID, l.ModelID)
	w.str(lPrompt, l.Prompt)
	w.str(lSide, string(l.Side))
	w.int(lDepth, int64(l.Depth))
	w.int(lStatusCode, int64(l.StatusCode))
	w.str(lFinishReason, l.FinishReason)
	w.str(lError, l.Error)
	w.str(lErrorType, l.ErrorType)
	w.str(lErrorOrigin, l.ErrorOrigin)
	w.bool(lIsComplete, l.IsComplete)
	w.int(lInputTokens, int64(l.InputTokens))
	w.int(lCachedTokens, int64(l.CachedTokens))
	w.int(lOutputTokens, int64(l.OutputTokens))
	w.int(lReasoningTokens, int64(l.ReasoningTokens))
	w.int(lTotalTokens, int64(l.TotalTokens))
	w.float(lCostInput, l.CostInput)
	w.float(lCostCached, l.CostCached)
	w.float(lCostOutput, l.CostOutput)
	w.float(lCostTotal, l.CostTotal)
	w.int(lLatencyMS, l.LatencyMS)
	w.int(lTTFTMS, l.TimeToFirstTokenMS)
	w.int(lGenerationMS, l.GenerationMS)
	w.strs(lToolOffered, l.ToolsOffered)
	w.strs(lToolCalled, l.ToolsCalled)
	w.strs(lQueuedTool, l.QueuedTools)
	w.str(lToolChoice, l.ToolChoice)
	w.time(lCreatedAt, created)
	return w.b
}

func decodeLog(doc string, l *weft.LogEntry) error {
	r := docReader{s: doc}
	for tag, v, ok := r.next(); ok; tag, v, ok = r.next() {
		switch tag {
		case lRunID:
			l.RunID = v
		case lMessageID:
			l.MessageID = v
		case lParentLogID:
			l.ParentLogID = v
		case lRetryOfLogID:
			l.RetryOfLogID = v
		case lKind:
			l.Kind = v
		case lProvider:
			l.Provider = v
		case lModel:
			l.Model = v
		case lModelID:
			l.ModelID = v
		case lPrompt:
			l.Prompt = v
		case lSide:
			l.Side = weft.Side(v)
		case lDepth:
			l.Depth = int(r.int(v))
		case lStatusCode:
			l.StatusCode = int(r.int(v))
		case lFinishReason:
			l.FinishReason = v
		case lError:
			l.Error = v
		case lErrorType:
			l.ErrorType = v
		case lErrorOrigin:
			l.ErrorOrigin = v
		case lIsComplete:
			l.IsComplete = true
		case lInputTokens:
			l.InputTokens = int(r.int(v))
		case lCachedTokens:
			l.CachedTokens = int(r.int(v))
		case lOutputTokens:
			l.OutputTokens = int(r.int(v))
		case lReasoningTokens:
			l.ReasoningTokens = int(r.int(v))
		case lTotalTokens:
			l.TotalTokens = int(r.int(v))
		case lCostInput:
			l.CostInput = r.float(v)
		case lCostCached:
			l.CostCached = r.float(v)
		case lCostOutput:
			l.CostOutput = r.float(v)
		case lCostTotal:
			l.CostTotal = r.float(v)
		case lLatencyMS:
			l.LatencyMS = r.int(v)
		case lTTFTMS:
			l.TimeToFirstTokenMS = r.int(v)
		case lGenerationMS:
			l.GenerationMS = r.int(v)
		case lToolOffered:
			l.ToolsOffered = append(l.ToolsOffered, v)
		case lToolCalled:
			l.ToolsCalled = append(l.ToolsCalled, v)
		case lQueuedTool:
			l.QueuedTools = append(l.QueuedTools, v)
		case lToolChoice:
			l.ToolChoice = v
		case lCreatedAt:
			l.CreatedAt = r.time(v)
		}
	}
	return r.err
}
