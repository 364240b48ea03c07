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
	"math"
	"time"
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
