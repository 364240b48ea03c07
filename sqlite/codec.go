package sqlite

// Rows of the hot tables (messages, tool_calls, logs) keep the columns that queries filter on and
// pack every other field into one "doc" column: SQLite through modernc costs ~175 ns per column value
// read, so a 20-column message row took ~4 µs to scan, the packed one a fraction of that.
//
// A doc is a sequence of fields, each a tag byte, a uvarint length and that many bytes; zero values
// are left out and unknown tags are skipped, so fields can be added later. Decoding works on a
// string, so the decoded strings share its memory.

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/weft-agents/weft"
)

var errBadDoc = errors.New("corrupt packed row")

// docWriter builds a doc.
type docWriter struct{ b []byte }

func (w *docWriter) bytes(tag byte, v []byte) {
	if len(v) == 0 {
		return
	}
	w.b = append(w.b, tag)
	w.b = binary.AppendUvarint(w.b, uint64(len(v)))
	w.b = append(w.b, v...)
}

func (w *docWriter) str(tag byte, v string) {
	if v == "" {
		return
	}
	w.b = append(w.b, tag)
	w.b = binary.AppendUvarint(w.b, uint64(len(v)))
	w.b = append(w.b, v...)
}

func (w *docWriter) int(tag byte, v int64) {
	if v == 0 {
		return
	}
	var tmp [binary.MaxVarintLen64]byte
	n := binary.PutVarint(tmp[:], v)
	w.b = append(w.b, tag, byte(n))
	w.b = append(w.b, tmp[:n]...)
}

func (w *docWriter) bool(tag byte, v bool) {
	if v {
		w.b = append(w.b, tag, 1, 1)
	}
}

func (w *docWriter) time(tag byte, t time.Time) {
	if !t.IsZero() {
		w.int(tag, t.UnixNano())
	}
}

func (w *docWriter) float(tag byte, f *float64) {
	if f == nil {
		return
	}
	w.b = append(w.b, tag, 8)
	w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(*f))
}

// nested writes a sub-doc built by fn.
func (w *docWriter) nested(tag byte, fn func(*docWriter)) {
	var sub docWriter
	fn(&sub)
	w.b = append(w.b, tag)
	w.b = binary.AppendUvarint(w.b, uint64(len(sub.b)))
	w.b = append(w.b, sub.b...)
}

// docReader walks the fields of a doc.
type docReader struct {
	s   string
	err error
}

// next returns the next field; ok is false at the end or on corruption (then err is set).
func (r *docReader) next() (tag byte, val string, ok bool) {
	if len(r.s) == 0 || r.err != nil {
		return 0, "", false
	}
	tag = r.s[0]
	n, k := uvarintString(r.s[1:])
	if k <= 0 || uint64(len(r.s)-1-k) < n {
		r.err = errBadDoc
		return 0, "", false
	}
	val = r.s[1+k : 1+k+int(n)]
	r.s = r.s[1+k+int(n):]
	return tag, val, true
}

func uvarintString(s string) (uint64, int) {
	var x uint64
	var sh uint
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		b := s[i]
		if b < 0x80 {
			return x | uint64(b)<<sh, i + 1
		}
		x |= uint64(b&0x7f) << sh
		sh += 7
	}
	return 0, 0
}

func (r *docReader) int(v string) int64 {
	var x uint64
	var sh uint
	for i := 0; i < len(v); i++ {
		b := v[i]
		if b < 0x80 {
			x |= uint64(b) << sh
			return int64(x>>1) ^ -int64(x&1) // zig-zag, as binary.PutVarint
		}
		x |= uint64(b&0x7f) << sh
		sh += 7
	}
	r.err = errBadDoc
	return 0
}

func (r *docReader) float(v string) *float64 {
	if len(v) != 8 {
		r.err = errBadDoc
		return nil
	}
	f := math.Float64frombits(binary.LittleEndian.Uint64([]byte(v)))
	return &f
}

func (r *docReader) time(v string) time.Time { return fromNanos(r.int(v)) }

func (r *docReader) json(v string, dst any) {
	if err := json.Unmarshal([]byte(v), dst); err != nil && r.err == nil {
		r.err = err
	}
}

// --- messages: columns thread_id, seq, id, role, silent, depth, content; the rest in doc ---

const (
	mSide = iota + 1
	mName
	mToolCall // repeated, nested
	mToolCallID
	mToolStatus
	mStatus
	mParentID
	mPrompt
	mReasoning
	mAttachment // repeated, nested
	mMetadata   // JSON
	mLogID
	mRunID
	mCreatedAt
	mID
	mRole
	mSilent
	mDepth
)

const (
	tcID = iota + 1
	tcName
	tcArguments
)

const (
	atID = iota + 1
	atPath
	atName
	atMimeType
	atSize
	atWidth
	atHeight
	atDescription
)

func putToolCalls(w *docWriter, calls []weft.ToolCall) {
	for _, c := range calls {
		w.nested(mToolCall, func(n *docWriter) {
			n.str(tcID, c.ID)
			n.str(tcName, c.Name)
			n.str(tcArguments, c.Arguments)
		})
	}
}

func putAttachments(w *docWriter, atts []weft.Attachment) {
	for _, a := range atts {
		w.nested(mAttachment, func(n *docWriter) {
			n.str(atID, a.ID)
			n.str(atPath, a.Path)
			n.str(atName, a.Name)
			n.str(atMimeType, a.MimeType)
			n.int(atSize, a.Size)
			n.int(atWidth, int64(a.Width))
			n.int(atHeight, int64(a.Height))
			n.str(atDescription, a.Description)
		})
	}
}

// messageDoc packs the message fields that have no column of their own (id, role, silent and depth
// are repeated so that a row decodes from seq, content and doc alone). metadata is JSON or nil.
func messageDoc(m *weft.Message, created time.Time, metadata []byte) []byte {
	w := docWriter{b: make([]byte, 0, 128)}
	w.str(mID, m.ID)
	w.str(mRole, string(m.Role))
	w.bool(mSilent, m.Silent)
	w.int(mDepth, int64(m.Depth))
	w.str(mSide, string(m.Side))
	w.str(mName, m.Name)
	putToolCalls(&w, m.ToolCalls)
	w.str(mToolCallID, m.ToolCallID)
	w.str(mToolStatus, string(m.ToolStatus))
	w.str(mStatus, string(m.Status))
	w.str(mParentID, m.ParentID)
	w.str(mPrompt, m.Prompt)
	w.str(mReasoning, m.Reasoning)
	putAttachments(&w, m.Attachments)
	w.bytes(mMetadata, metadata)
	w.str(mLogID, m.LogID)
	w.str(mRunID, m.RunID)
	w.time(mCreatedAt, created)
	return w.b
}

// decodeMessage fills m from its doc.
func decodeMessage(doc string, m *weft.Message) error {
	r := docReader{s: doc}
	for {
		tag, v, ok := r.next()
		if !ok {
			break
		}
		switch tag {
		case mID:
			m.ID = v
		case mRole:
			m.Role = weft.Role(v)
		case mSilent:
			m.Silent = true
		case mDepth:
			m.Depth = int(r.int(v))
		case mSide:
			m.Side = weft.Side(v)
		case mName:
			m.Name = v
		case mToolCall:
			var c weft.ToolCall
			n := docReader{s: v}
			for {
				t, f, ok := n.next()
				if !ok {
					break
				}
				switch t {
				case tcID:
					c.ID = f
				case tcName:
					c.Name = f
				case tcArguments:
					c.Arguments = f
				}
			}
			if n.err != nil {
				r.err = n.err
			}
			m.ToolCalls = append(m.ToolCalls, c)
		case mToolCallID:
			m.ToolCallID = v
		case mToolStatus:
			m.ToolStatus = weft.ToolStatus(v)
		case mStatus:
			m.Status = weft.MessageStatus(v)
		case mParentID:
			m.ParentID = v
		case mPrompt:
			m.Prompt = v
		case mReasoning:
			m.Reasoning = v
		case mAttachment:
			m.Attachments = append(m.Attachments, decodeAttachment(&r, v))
		case mMetadata:
			r.json(v, &m.Metadata)
		case mLogID:
			m.LogID = v
		case mRunID:
			m.RunID = v
		case mCreatedAt:
			m.CreatedAt = r.time(v)
		}
	}
	return r.err
}

func decodeAttachment(r *docReader, v string) weft.Attachment {
	var a weft.Attachment
	n := docReader{s: v}
	for {
		t, f, ok := n.next()
		if !ok {
			break
		}
		switch t {
		case atID:
			a.ID = f
		case atPath:
			a.Path = f
		case atName:
			a.Name = f
		case atMimeType:
			a.MimeType = f
		case atSize:
			a.Size = n.int(f)
		case atWidth:
			a.Width = int(n.int(f))
		case atHeight:
			a.Height = int(n.int(f))
		case atDescription:
			a.Description = f
		}
	}
	if n.err != nil {
		r.err = n.err
	}
	return a
}

// --- tool calls: columns thread_id, call_id, seq, status; the rest in doc ---

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
	for {
		tag, v, ok := r.next()
		if !ok {
			break
		}
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

// --- logs: columns n, thread_id, id, depth, created_at, request_body, response_body; the rest in doc ---

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
	for _, t := range l.ToolsOffered {
		w.nested(lToolOffered, func(n *docWriter) { n.b = append(n.b, t...) })
	}
	for _, t := range l.ToolsCalled {
		w.nested(lToolCalled, func(n *docWriter) { n.b = append(n.b, t...) })
	}
	for _, t := range l.QueuedTools {
		w.nested(lQueuedTool, func(n *docWriter) { n.b = append(n.b, t...) })
	}
	w.str(lToolChoice, l.ToolChoice)
	w.time(lCreatedAt, created)
	return w.b
}

func decodeLog(doc string, l *weft.LogEntry) error {
	r := docReader{s: doc}
	for {
		tag, v, ok := r.next()
		if !ok {
			break
		}
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
