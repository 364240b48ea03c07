package sqlite

// Rows of the hot tables (threads, messages, queue, tool_calls, logs, env) keep the columns that
// queries filter on and pack the fields into one "doc" column: SQLite through modernc costs ~175 ns
// per column value read, and each column of a result adds ~0.3 µs to every query, so a 20-column
// message row took ~4 µs to scan, the packed one a fraction of that. Threads, messages, queue and
// env rows are read from doc alone; their docs begin with a field present in every one (id, seq,
// seq, name), so that docs concatenated by group_concat can be split again (docList, runs.go).
//
// A doc is a sequence of fields, each a tag byte, a uvarint length and that many bytes; zero values
// are left out and unknown tags are skipped, so fields can be added later. Decoding works on a
// string, so the decoded strings share its memory.
//
// Measured against encoding/json of the same message in the doc column (what postgres keeps),
// on three typical messages (a user message, an assistant message with a tool call and metadata,
// a tool result), median of 7 runs on a shared 2-core machine:
//
//	go test ./sqlite -run '^$' -bench BenchmarkMessageCodec -benchmem -benchtime 20000x -count 7 -cpu 1
//
//	            packed                       encoding/json
//	encode      10.9 µs  1,912 B  18 allocs  17.8 µs  1,776 B  16 allocs   (json 1.6× slower)
//	decode       8.1 µs  2,128 B  25 allocs  45.5 µs  3,464 B  59 allocs   (json 5.6× slower)
//	doc size       792 bytes                   1,270 bytes
//
// A read decodes every row it returns (a run's BeginRun and each context read all of a thread's
// messages), so the decode side is the one that counts; the codec stays hand-written per row kind,
// with a switch per tag, because a field table would call through a function value per field.

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/weft-agents/weft"
)

var errBadDoc = errors.New("corrupt packed row")

// docWriter builds a doc.
type docWriter struct{ b []byte }

// appendField appends one field to a doc: its tag, the uvarint length of v and v.
func appendField[T string | []byte](b []byte, tag byte, v T) []byte {
	b = append(b, tag)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func (w *docWriter) bytes(tag byte, v []byte) {
	if len(v) > 0 {
		w.b = appendField(w.b, tag, v)
	}
}

func (w *docWriter) str(tag byte, v string) {
	if v != "" {
		w.b = appendField(w.b, tag, v)
	}
}

// strs writes one field per element of a repeated string field, empty strings included.
func (w *docWriter) strs(tag byte, vs []string) {
	for _, v := range vs {
		w.b = appendField(w.b, tag, v)
	}
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
	w.b = appendField(w.b, tag, sub.b)
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

// --- messages: columns thread_num, seq, id, role, silent, depth; every field in doc ---

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
	mSeq
	mContent
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

func putAttachments(w *docWriter, tag byte, atts []weft.Attachment) {
	for _, a := range atts {
		w.nested(tag, func(n *docWriter) {
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

// messageDoc packs every field of a message but its thread (those with a column of their own are
// repeated, so that a row decodes from doc alone), with the given seq and creation time. metadata is
// JSON or nil.
func messageDoc(m *weft.Message, seq int64, created time.Time, metadata []byte) []byte {
	w := docWriter{b: make([]byte, 0, 128+len(m.Content))}
	w.int(mSeq, seq)
	w.str(mContent, m.Content)
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
	putAttachments(&w, mAttachment, m.Attachments)
	w.bytes(mMetadata, metadata)
	w.str(mLogID, m.LogID)
	w.str(mRunID, m.RunID)
	w.time(mCreatedAt, created)
	return w.b
}

// decodeMessage fills m from its doc.
func decodeMessage(doc string, m *weft.Message) error {
	r := docReader{s: doc}
	for tag, v, ok := r.next(); ok; tag, v, ok = r.next() {
		(*msgDoc)(m).decodeField(&r, tag, v)
	}
	return r.err
}

// decodeMessages decodes a concatenation of message docs (qRunStart's), each beginning with its
// seq field, appending them to out: one walk over the fields, where splitting the docs first
// and decoding each would walk them twice.
func decodeMessages(set, threadID string, out []weft.Message) ([]weft.Message, error) {
	if len(set) > 4096 {
		// Sized once: a long history grown by appends copied its messages about twice over,
		// a fifth of resuming a 10,000-message thread.
		out = slices.Grow(out, countDocs(set, mSeq))
	}
	r := docReader{s: set}
	var m *weft.Message
	for tag, v, ok := r.next(); ok; tag, v, ok = r.next() {
		if tag == mSeq {
			out = append(out, weft.Message{ThreadID: threadID})
			m = &out[len(out)-1]
		} else if m == nil {
			return out, errBadDoc // a doc that does not begin with its seq
		}
		(*msgDoc)(m).decodeField(&r, tag, v)
		if r.err != nil {
			return out, fmt.Errorf("message %d: %w", m.Seq, r.err)
		}
	}
	return out, r.err
}

// countDocs counts the docs of a concatenation whose docs each begin with a field tagged first,
// reading only the fields' tags and lengths.
func countDocs(set string, first byte) int {
	r := docReader{s: set}
	n := 0
	for tag, _, ok := r.next(); ok; tag, _, ok = r.next() {
		if tag == first {
			n++
		}
	}
	return n
}

// msgDoc decodes a message doc's fields into the message.
type msgDoc weft.Message

func (m *msgDoc) decodeField(r *docReader, tag byte, v string) {
	switch tag {
	case mSeq:
		m.Seq = r.int(v)
	case mContent:
		m.Content = v
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
		m.ToolCalls = append(m.ToolCalls, decodeToolCall(r, v))
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
		m.Attachments = append(m.Attachments, decodeAttachment(r, v))
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

// decodeToolCall decodes the nested doc v of a message's tool call; corruption is passed on to r.
func decodeToolCall(r *docReader, v string) weft.ToolCall {
	var c weft.ToolCall
	n := docReader{s: v}
	for t, f, ok := n.next(); ok; t, f, ok = n.next() {
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
	return c
}

// decodeAttachment decodes the nested doc v of an attachment; corruption is passed on to r.
func decodeAttachment(r *docReader, v string) weft.Attachment {
	var a weft.Attachment
	n := docReader{s: v}
	for t, f, ok := n.next(); ok; t, f, ok = n.next() {
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

// --- queue: columns thread_id, seq; every field in doc ---

const (
	qSeq = iota + 1
	qID
	qRole
	qContent
	qAttachment // repeated, nested
	qSilent
	qMetadata // JSON
	qCreatedAt
	qIfBusy
)

// queueDoc packs a queued message but its thread. metadata is JSON or nil.
func queueDoc(q *weft.QueuedMessage, metadata []byte) []byte {
	w := docWriter{b: make([]byte, 0, 64+len(q.Content))}
	w.int(qSeq, q.Seq)
	w.str(qID, q.ID)
	w.str(qRole, string(q.Role))
	w.str(qContent, q.Content)
	putAttachments(&w, qAttachment, q.Attachments)
	w.bool(qSilent, q.Silent)
	w.bytes(qMetadata, metadata)
	w.time(qCreatedAt, q.CreatedAt)
	if q.IfBusy != "" {
		w.str(qIfBusy, string(q.IfBusy))
	}
	return w.b
}

// decodeQueued fills q from its doc.
func decodeQueued(doc string, q *weft.QueuedMessage) error {
	r := docReader{s: doc}
	for tag, v, ok := r.next(); ok; tag, v, ok = r.next() {
		switch tag {
		case qSeq:
			q.Seq = r.int(v)
		case qID:
			q.ID = v
		case qRole:
			q.Role = weft.Role(v)
		case qContent:
			q.Content = v
		case qAttachment:
			q.Attachments = append(q.Attachments, decodeAttachment(&r, v))
		case qSilent:
			q.Silent = true
		case qMetadata:
			r.json(v, &q.Metadata)
		case qCreatedAt:
			q.CreatedAt = r.time(v)
		case qIfBusy:
			q.IfBusy = weft.IfBusy(v)
		}
	}
	return r.err
}

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

// --- threads: columns id, agent, user_id, parent_id, root_id, label, tags, status, preview,
// created_at, last_activity_at (for listings) and the counters; every field in doc ---

const (
	tID = iota + 1
	tAgent
	tOriginAgent
	tUserID
	tParentID
	tRootID
	tLabel
	tTag        // repeated
	tProperties // JSON object
	tArguments  // JSON object
	tStatus
	tStopReason
	tPreview
	tCreatedAt
	tUpdatedAt
	tLastActivityAt
	tForkedThread  // ForkedFrom.Thread
	tForkedMessage // ForkedFrom.Message
	tForkedBefore  // ForkedFrom.Before: "1" when true
)

// threadDoc packs a thread; props and args are its maps as JSON, nil when empty.
func threadDoc(t *weft.Thread, props, args []byte) []byte {
	w := docWriter{b: make([]byte, 0, 160+len(props)+len(args)+len(t.Preview))}
	w.str(tID, t.ID)
	w.str(tAgent, t.Agent)
	w.str(tOriginAgent, t.OriginAgent)
	w.str(tUserID, t.UserID)
	w.str(tParentID, t.ParentID)
	w.str(tRootID, t.RootID)
	w.str(tLabel, t.Label)
	w.strs(tTag, t.Tags) // an empty tag is kept
	w.bytes(tProperties, props)
	w.bytes(tArguments, args)
	w.str(tStatus, string(t.Status))
	w.str(tStopReason, string(t.StopReason))
	w.str(tPreview, t.Preview)
	w.time(tCreatedAt, t.CreatedAt)
	w.time(tUpdatedAt, t.UpdatedAt)
	w.time(tLastActivityAt, t.LastActivityAt)
	if f := t.ForkedFrom; f != nil {
		w.str(tForkedThread, f.Thread)
		w.str(tForkedMessage, f.Message)
		if f.Before {
			w.str(tForkedBefore, "1")
		}
	}
	return w.b
}

// mapJSON marshals a thread map for threadDoc (nil when empty).
func mapJSON(m map[string]any) ([]byte, error) {
	if len(m) == 0 {
		return nil, nil
	}
	return marshal(m)
}

// decodeThreadDoc fills t from its doc but for its maps, returned as JSON ("" when empty). Tags is
// never nil.
func decodeThreadDoc(doc string, t *weft.Thread) (props, args string, err error) {
	r := docReader{s: doc}
	t.Tags = []string{}
	for tag, v, ok := r.next(); ok; tag, v, ok = r.next() {
		switch tag {
		case tID:
			t.ID = v
		case tAgent:
			t.Agent = v
		case tOriginAgent:
			t.OriginAgent = v
		case tUserID:
			t.UserID = v
		case tParentID:
			t.ParentID = v
		case tRootID:
			t.RootID = v
		case tLabel:
			t.Label = v
		case tTag:
			t.Tags = append(t.Tags, v)
		case tProperties:
			props = v
		case tArguments:
			args = v
		case tStatus:
			t.Status = weft.ThreadStatus(v)
		case tStopReason:
			t.StopReason = weft.StopReason(v)
		case tPreview:
			t.Preview = v
		case tCreatedAt:
			t.CreatedAt = r.time(v)
		case tUpdatedAt:
			t.UpdatedAt = r.time(v)
		case tLastActivityAt:
			t.LastActivityAt = r.time(v)
		case tForkedThread, tForkedMessage, tForkedBefore:
			if t.ForkedFrom == nil {
				t.ForkedFrom = &weft.ForkPoint{}
			}
			switch tag {
			case tForkedThread:
				t.ForkedFrom.Thread = v
			case tForkedMessage:
				t.ForkedFrom.Message = v
			default:
				t.ForkedFrom.Before = v == "1"
			}
		}
	}
	return props, args, r.err
}

// decodeThread decodes a thread doc; its maps are never nil.
func decodeThread(doc string) (*weft.Thread, error) {
	t := &weft.Thread{Properties: map[string]any{}, Arguments: map[string]any{}}
	props, args, err := decodeThreadDoc(doc, t)
	if err == nil && props != "" {
		err = json.Unmarshal([]byte(props), &t.Properties)
	}
	if err == nil && args != "" {
		err = json.Unmarshal([]byte(args), &t.Arguments)
	}
	if err != nil {
		return nil, fmt.Errorf("thread %s: %w", t.ID, err)
	}
	return t, nil
}

// --- env: columns scope, owner, name; the value in doc ---

const (
	eName = iota + 1
	eSealed
	eKeyID
	eType
	eUpdatedAt
)

// envDoc packs a sealed env value.
func envDoc(name string, sealed []byte, keyID string, typ weft.VarType, updated time.Time) []byte {
	w := docWriter{b: make([]byte, 0, 32+len(name)+len(sealed)+len(keyID))}
	w.str(eName, name)
	w.bytes(eSealed, sealed)
	w.str(eKeyID, keyID)
	w.str(eType, string(typ))
	w.time(eUpdatedAt, updated)
	return w.b
}

// envRow is a decoded env doc, its value still sealed.
type envRow struct {
	name, sealed, keyID string
	typ                 weft.VarType
	updated             time.Time
}

func decodeEnv(doc string) (envRow, error) {
	var e envRow
	r := docReader{s: doc}
	for tag, v, ok := r.next(); ok; tag, v, ok = r.next() {
		switch tag {
		case eName:
			e.name = v
		case eSealed:
			e.sealed = v
		case eKeyID:
			e.keyID = v
		case eType:
			e.typ = weft.VarType(v)
		case eUpdatedAt:
			e.updated = r.time(v)
		}
	}
	return e, r.err
}

// --- events: a row of several events (type NULL) packs them in data, one evRecord field each ---

const (
	evRecord = iota + 1 // repeated, nested
)

const (
	evType = iota + 1
	evData
	evCreatedAt
)

// eventsDoc packs events, each as one evRecord field, written in place: the record's length is
// the sum of its fields' (as docWriter writes them), known before they are.
func eventsDoc(evs []weft.EventRecord) []byte {
	size := 0
	for i := range evs {
		size += 1 + binary.MaxVarintLen64 + eventFieldsLen(&evs[i])
	}
	w := docWriter{b: make([]byte, 0, size)}
	for i := range evs {
		e := &evs[i]
		w.b = append(w.b, evRecord)
		w.b = binary.AppendUvarint(w.b, uint64(eventFieldsLen(e)))
		w.str(evType, e.Type)
		w.bytes(evData, e.Data)
		w.time(evCreatedAt, e.CreatedAt)
	}
	return w.b
}

// eventFieldsLen is the length of an event's fields as eventsDoc writes them.
func eventFieldsLen(e *weft.EventRecord) int {
	n := fieldLen(len(e.Type)) + fieldLen(len(e.Data))
	if !e.CreatedAt.IsZero() {
		var tmp [binary.MaxVarintLen64]byte
		n += 2 + binary.PutVarint(tmp[:], e.CreatedAt.UnixNano()) // tag, length byte, varint (docWriter.int)
	}
	return n
}

// fieldLen is the length of a string or bytes field of l bytes as docWriter writes it: none when
// empty, else its tag, its uvarint length and the bytes.
func fieldLen(l int) int {
	if l == 0 {
		return 0
	}
	var tmp [binary.MaxVarintLen64]byte
	return 1 + binary.PutUvarint(tmp[:], uint64(l)) + l
}

// decodeEvents appends the events packed in doc, numbered so that the last is last, to out.
func decodeEvents(doc string, last int64, threadID string, out []weft.EventRecord) ([]weft.EventRecord, error) {
	from := len(out)
	r := docReader{s: doc}
	for tag, v, ok := r.next(); ok; tag, v, ok = r.next() {
		if tag != evRecord {
			continue
		}
		e := weft.EventRecord{ThreadID: threadID}
		er := docReader{s: v}
		for tag, v, ok := er.next(); ok; tag, v, ok = er.next() {
			switch tag {
			case evType:
				e.Type = v
			case evData:
				e.Data = json.RawMessage(v)
			case evCreatedAt:
				e.CreatedAt = er.time(v)
			}
		}
		if er.err != nil {
			return out[:from], er.err
		}
		out = append(out, e)
	}
	n := int64(len(out) - from)
	if r.err != nil || n == 0 || last < n {
		return out[:from], errBadDoc
	}
	for i := range out[from:] {
		out[from+i].Seq = last - n + 1 + int64(i)
	}
	return out, nil
}
