package sqlite

// Thread, env and event rows; the doc format itself is in codec.go.

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/weft-agents/weft"
)

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
