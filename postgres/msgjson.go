package postgres

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/weft-agents/weft"
)

// A message's doc is JSON (encoding/json's, of weft.Message), so that operators can read it with
// doc->>'field'. A run start decodes every message of its thread, and encoding/json took most of
// resuming a long one (68 % of the CPU time of BenchmarkResumePostgres, 10,000 messages). Docs
// are read back here with a decoder made for that one shape: an object of weft.Message's own field
// names (exactly as encoding/json writes them), with strings, integers, a bool, the tool calls, a
// time; metadata and attachments, which hold anything, go to encoding/json alone. Whatever else it
// meets — another key or spelling, a null, a number it would have to round, invalid UTF-8, a
// surrogate escape, anything not JSON — it leaves to encoding/json, which decodes the whole doc
// as before. So it never decides a doc differently from encoding/json (FuzzMessageJSON checks that
// it agrees wherever it decodes).

// decodeMessageJSON decodes a doc into m as json.Unmarshal does.
func decodeMessageJSON(doc []byte, m *weft.Message) error {
	if fastMessage(doc, m) {
		return nil
	}
	*m = weft.Message{}
	return json.Unmarshal(doc, m)
}

// fastMessage decodes the doc into m, a zero Message, when it is of the shape described above; false
// (m then holds anything) when not.
func fastMessage(doc []byte, m *weft.Message) bool {
	s := jscan{b: doc, src: string(doc)} // the decoded strings share one copy of the doc
	if !s.byte('{') {
		return false
	}
	if s.byte('}') {
		return s.end()
	}
	for {
		key, ok := s.str()
		if !ok || !s.byte(':') {
			return false
		}
		// A key met twice is decoded twice, as encoding/json does: a later scalar replaces the
		// earlier, and metadata and attachments go to encoding/json into the value it left.
		var v string
		switch key {
		case "id":
			m.ID, ok = s.str()
		case "thread_id":
			m.ThreadID, ok = s.str()
		case "seq":
			m.Seq, ok = s.int()
		case "role":
			v, ok = s.str()
			m.Role = weft.Role(v)
		case "side":
			v, ok = s.str()
			m.Side = weft.Side(v)
		case "content":
			m.Content, ok = s.str()
		case "name":
			m.Name, ok = s.str()
		case "tool_calls":
			if m.ToolCalls != nil {
				return false // encoding/json would decode the second list into the first's slice
			}
			m.ToolCalls, ok = s.toolCalls()
		case "tool_call_id":
			m.ToolCallID, ok = s.str()
		case "tool_status":
			v, ok = s.str()
			m.ToolStatus = weft.ToolStatus(v)
		case "status":
			v, ok = s.str()
			m.Status = weft.MessageStatus(v)
		case "silent":
			m.Silent, ok = s.bool()
		case "depth":
			var d int64
			d, ok = s.int()
			m.Depth = int(d)
		case "parent_id":
			m.ParentID, ok = s.str()
		case "prompt":
			m.Prompt, ok = s.str()
		case "reasoning":
			m.Reasoning, ok = s.str()
		case "attachments":
			ok = s.delegate(&m.Attachments)
		case "log_id":
			m.LogID, ok = s.str()
		case "run_id":
			m.RunID, ok = s.str()
		case "metadata":
			ok = s.delegate(&m.Metadata)
		case "created_at":
			var raw []byte
			if raw, ok = s.rawString(); ok {
				ok = m.CreatedAt.UnmarshalJSON(raw) == nil
			}
		default:
			return false
		}
		if !ok {
			return false
		}
		if s.byte(',') {
			continue
		}
		return s.byte('}') && s.end()
	}
}

// jscan reads JSON tokens from b at i; src is b as a string.
type jscan struct {
	b   []byte
	src string
	i   int
}

func (s *jscan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte consumes c (after white space) when it is next.
func (s *jscan) byte(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// end reports whether nothing but white space is left.
func (s *jscan) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// str reads a string. Not ok for anything else, and for a string json.Unmarshal would change
// (invalid UTF-8) or that this reader does not take (a surrogate escape).
func (s *jscan) str() (string, bool) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	start := s.i + 1
	ascii := true
	for j := start; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			v := s.b[start:j]
			if !ascii && !utf8.Valid(v) {
				return "", false
			}
			s.i = j + 1
			return s.src[start:j], true
		case c == '\\':
			return s.strEscaped(start, j)
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// strEscaped reads the rest of a string that begins at start and has its first escape at j.
func (s *jscan) strEscaped(start, j int) (string, bool) {
	out := make([]byte, 0, j-start+16)
	out = append(out, s.b[start:j]...)
	for j < len(s.b) {
		c := s.b[j]
		switch {
		case c == '"':
			if !utf8.Valid(out) { // escapes only add whole runes: out is valid iff the raw bytes are
				return "", false
			}
			s.i = j + 1
			return string(out), true
		case c < 0x20:
			return "", false
		case c != '\\':
			out = append(out, c)
			j++
			continue
		}
		if j+1 >= len(s.b) {
			return "", false
		}
		switch e := s.b[j+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if j+6 > len(s.b) {
				return "", false
			}
			r := rune(0)
			for _, h := range s.b[j+2 : j+6] {
				switch {
				case '0' <= h && h <= '9':
					r = r<<4 | rune(h-'0')
				case 'a' <= h && h <= 'f':
					r = r<<4 | rune(h-'a'+10)
				case 'A' <= h && h <= 'F':
					r = r<<4 | rune(h-'A'+10)
				default:
					return "", false
				}
			}
			if utf16Surrogate(r) {
				return "", false
			}
			out = utf8.AppendRune(out, r)
			j += 6
			continue
		default:
			return "", false
		}
		j += 2
	}
	return "", false
}

func utf16Surrogate(r rune) bool { return 0xd800 <= r && r < 0xe000 }

// rawString returns a string token with its quotes, for a type's own UnmarshalJSON.
func (s *jscan) rawString() ([]byte, bool) {
	s.ws()
	start := s.i
	if _, ok := s.str(); !ok {
		return nil, false
	}
	return s.b[start:s.i], true
}

// int reads an integer written without fraction or exponent that fits in 63 bits.
func (s *jscan) int() (int64, bool) {
	s.ws()
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
	}
	start := s.i
	var v int64
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		v = v*10 + int64(s.b[s.i]-'0')
		s.i++
	}
	n := s.i - start
	switch {
	case n == 0, n > 18, n > 1 && s.b[start] == '0':
		return 0, false
	case s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E'):
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

func (s *jscan) bool() (bool, bool) {
	s.ws()
	rest := s.b[s.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		s.i += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		s.i += 5
		return false, true
	}
	return false, false
}

// toolCalls reads an array of {"id", "name", "arguments"} objects of strings.
func (s *jscan) toolCalls() ([]weft.ToolCall, bool) {
	if !s.byte('[') {
		return nil, false
	}
	calls := []weft.ToolCall{}
	if s.byte(']') {
		return calls, true
	}
	for {
		var c weft.ToolCall
		if !s.byte('{') {
			return nil, false
		}
		if !s.byte('}') {
			for {
				key, ok := s.str()
				if !ok || !s.byte(':') {
					return nil, false
				}
				switch key {
				case "id":
					c.ID, ok = s.str()
				case "name":
					c.Name, ok = s.str()
				case "arguments":
					c.Arguments, ok = s.str()
				default:
					return nil, false
				}
				if !ok {
					return nil, false
				}
				if s.byte(',') {
					continue
				}
				if !s.byte('}') {
					return nil, false
				}
				break
			}
		}
		calls = append(calls, c)
		if s.byte(',') {
			continue
		}
		return calls, s.byte(']')
	}
}

// delegate hands the next value to json.Unmarshal into dst (whose zero value it starts from, as
// in the whole doc's decode); not ok when the value has no end or json.Unmarshal refuses it.
func (s *jscan) delegate(dst any) bool {
	s.ws()
	start := s.i
	if !s.skip() {
		return false
	}
	return json.Unmarshal(s.b[start:s.i], dst) == nil
}

// skip moves past one value: a string, or anything up to the bracket that closes it, or a literal
// or number up to the next delimiter. json.Unmarshal checks what it skipped.
func (s *jscan) skip() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		_, ok := s.rawStringEnd()
		return ok
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, ok := s.rawStringEnd(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				return true
			}
		}
		return false
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return true
		}
		s.i++
	}
	return true
}

// rawStringEnd moves past a string without decoding it (its escapes are left to json.Unmarshal).
func (s *jscan) rawStringEnd() (int, bool) {
	for j := s.i + 1; j < len(s.b); j++ {
		switch s.b[j] {
		case '\\':
			j++
		case '"':
			s.i = j + 1
			return s.i, true
		}
	}
	return 0, false
}
