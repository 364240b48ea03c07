package payload

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/internal/jsonstr"
)

// AppendJSON appends a payload's JSON to b, byte for byte what json.Marshal writes. The
// payloads every run emits (the message above all) are written field by field: a served run
// encodes each of its events for the event log, and through encoding/json's reflection that was
// ~9 % of a served turn's instructions (bench/README.md). Any other payload, and a message's
// metadata and attachments, go through encoding/json.
func AppendJSON(b []byte, p Payload) ([]byte, error) {
	switch d := p.(type) {
	case MessageData:
		return appendMessageData(b, &d.Message)
	case RunStarted:
		b = append(b, `{"run_id":`...)
		b = appendJSONString(b, d.RunID)
		b = append(b, `,"side":`...)
		b = appendJSONString(b, string(d.Side))
		b = append(b, `,"trigger":`...)
		b = appendJSONString(b, d.Trigger)
		return append(b, '}'), nil
	case RunStopped:
		b = append(b, `{"error":`...)
		b = appendJSONString(b, d.Error)
		if d.LastLineRedactions != 0 {
			b = appendJSONInt(b, `,"last_line_redactions":`, int64(d.LastLineRedactions))
		}
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, string(d.Reason))
		b = append(b, `,"run_id":`...)
		b = appendJSONString(b, d.RunID)
		b = appendJSONInt(b, `,"seq":`, int64(d.Seq))
		b = append(b, `,"side":`...)
		b = appendJSONString(b, string(d.Side))
		b = appendJSONInt(b, `,"steps":`, int64(d.Steps))
		return append(b, '}'), nil
	case StepStarted:
		b = appendStep(b, d.Depth, d.Prompt, d.RunID, d.Side, d.Step)
		return append(b, '}'), nil
	case StepCompleted:
		b = appendStep(b, d.Depth, d.Prompt, d.RunID, d.Side, d.Step)
		b = appendJSONInt(b, `,"tool_calls":`, int64(d.ToolCalls))
		return append(b, '}'), nil
	case ModelRequest:
		b = appendJSONInt(b, `{"attempt":`, int64(d.Attempt))
		b = append(b, `,"log_id":`...)
		b = appendJSONString(b, d.LogID)
		b = append(b, `,"model":`...)
		b = appendJSONString(b, d.Model)
		b = append(b, `,"provider":`...)
		b = appendJSONString(b, d.Provider)
		return append(b, '}'), nil
	case ModelResponse:
		return appendModelResponse(b, &d)
	case ToolStarted:
		b = append(b, `{"call_id":`...)
		b = appendJSONString(b, d.CallID)
		b = appendJSONInt(b, `,"depth":`, int64(d.Depth))
		b = append(b, `,"name":`...)
		b = appendJSONString(b, d.Name)
		return append(b, '}'), nil
	case ToolCompleted:
		b = append(b, `{"call_id":`...)
		b = appendJSONString(b, d.CallID)
		b = appendJSONInt(b, `,"depth":`, int64(d.Depth))
		b = append(b, `,"name":`...)
		b = appendJSONString(b, d.Name)
		b = append(b, `,"status":`...)
		b = appendJSONString(b, string(d.Status))
		return append(b, '}'), nil
	case Chunk:
		b = append(b, `{"delta":`...)
		b = appendJSONString(b, d.Delta)
		b = appendJSONInt(b, `,"depth":`, int64(d.Depth))
		b = append(b, `,"message_id":`...)
		b = appendJSONString(b, d.MessageID)
		return append(b, '}'), nil
	}
	return appendMarshalled(b, p)
}

// appendJSONString appends s quoted as json.Marshal quotes it.
func appendJSONString(b []byte, s string) []byte { return jsonstr.AppendHTMLSafe(b, s) }

// SizeHint is about how many bytes AppendJSON writes for p (a message: its field
// names, ids and time, and its texts).
func SizeHint(p Payload) int {
	d, ok := p.(MessageData)
	if !ok {
		return 160
	}
	m := &d.Message
	n := 320 + len(m.Content) + len(m.Reasoning) + len(m.Name) + len(m.Prompt)
	for _, c := range m.ToolCalls {
		n += 40 + len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	if len(m.Metadata) > 0 || len(m.Attachments) > 0 {
		n += 256
	}
	return n
}

func appendMarshalled(b []byte, v any) ([]byte, error) {
	enc, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, enc...), nil
}

func appendStep(b []byte, depth int, prompt, runID string, side weft.Side, step int) []byte {
	b = appendJSONInt(b, `{"depth":`, int64(depth))
	b = append(b, `,"prompt":`...)
	b = appendJSONString(b, prompt)
	b = append(b, `,"run_id":`...)
	b = appendJSONString(b, runID)
	b = append(b, `,"side":`...)
	b = appendJSONString(b, string(side))
	return appendJSONInt(b, `,"step":`, int64(step))
}

func appendModelResponse(b []byte, d *ModelResponse) ([]byte, error) {
	if d.Status == "error" {
		b = append(b, `{"error":`...)
		b = appendJSONString(b, d.Error)
		b = append(b, `,"log_id":`...)
		b = appendJSONString(b, d.LogID)
		b = append(b, `,"status":`...)
		b = appendJSONString(b, d.Status)
		return append(b, '}'), nil
	}
	b = append(b, `{"cost_total":`...)
	if d.CostTotal == nil {
		b = append(b, "null"...)
	} else {
		var err error
		if b, err = appendMarshalled(b, *d.CostTotal); err != nil {
			return b, err
		}
	}
	if d.Error != "" {
		b = append(b, `,"error":`...)
		b = appendJSONString(b, d.Error)
	}
	b = appendJSONInt(b, `,"input_tokens":`, int64(d.InputTokens))
	b = appendJSONInt(b, `,"latency_ms":`, d.LatencyMS)
	b = append(b, `,"log_id":`...)
	b = appendJSONString(b, d.LogID)
	b = appendJSONInt(b, `,"output_tokens":`, int64(d.OutputTokens))
	b = append(b, `,"status":`...)
	b = appendJSONString(b, d.Status)
	return append(b, '}'), nil
}

// appendMessageData appends {"message": m} as weft.Message's field tags have json.Marshal write it.
func appendMessageData(b []byte, m *weft.Message) ([]byte, error) {
	_, offset := m.CreatedAt.Zone()
	if y := m.CreatedAt.Year(); y < 0 || y > 9999 || offset <= -24*60*60 || offset >= 24*60*60 {
		return appendMarshalled(b, MessageData{Message: *m}) // a time RFC 3339 cannot write: json.Marshal's error
	}
	b = append(b, `{"message":{"id":`...)
	b = appendJSONString(b, m.ID)
	b = append(b, `,"thread_id":`...)
	b = appendJSONString(b, m.ThreadID)
	b = appendJSONInt(b, `,"seq":`, m.Seq)
	b = append(b, `,"role":`...)
	b = appendJSONString(b, string(m.Role))
	b = appendOptString(b, `,"side":`, string(m.Side))
	b = append(b, `,"content":`...)
	b = appendJSONString(b, m.Content)
	b = appendOptString(b, `,"name":`, m.Name)
	if len(m.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range m.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = appendJSONString(b, c.ID)
			b = append(b, `,"name":`...)
			b = appendJSONString(b, c.Name)
			b = append(b, `,"arguments":`...)
			b = appendJSONString(b, c.Arguments)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = appendOptString(b, `,"tool_call_id":`, m.ToolCallID)
	b = appendOptString(b, `,"tool_status":`, string(m.ToolStatus))
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(m.Status))
	b = append(b, `,"silent":`...)
	b = strconv.AppendBool(b, m.Silent)
	b = appendJSONInt(b, `,"depth":`, int64(m.Depth))
	b = appendOptString(b, `,"parent_id":`, m.ParentID)
	b = appendOptString(b, `,"prompt":`, m.Prompt)
	b = appendOptString(b, `,"reasoning":`, m.Reasoning)
	var err error
	if len(m.Attachments) > 0 {
		b = append(b, `,"attachments":`...)
		if b, err = appendMarshalled(b, m.Attachments); err != nil {
			return b, err
		}
	}
	b = appendOptString(b, `,"log_id":`, m.LogID)
	b = appendOptString(b, `,"run_id":`, m.RunID)
	if len(m.Metadata) > 0 {
		b = append(b, `,"metadata":`...)
		if b, err = appendMarshalled(b, m.Metadata); err != nil {
			return b, err
		}
	}
	b = append(b, `,"created_at":"`...)
	b = m.CreatedAt.AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}}`...), nil
}

func appendOptString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, key...)
	return appendJSONString(b, s)
}

func appendJSONInt(b []byte, key string, n int64) []byte {
	b = append(b, key...)
	return strconv.AppendInt(b, n, 10)
}
