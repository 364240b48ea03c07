package sqlite

// Message and queued-message rows; the doc format itself is in codec.go.

import (
	"fmt"
	"slices"
	"time"

	"github.com/weft-agents/weft"
)

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
