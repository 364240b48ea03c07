package sqlite

// This file is kept identical in memstore and sqlite (package clause aside) so both back ends share
// the same path, glob, MIME, JSON and grep rules. It belongs in an internal package once the layout
// allows one.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"path"
	"regexp"
	"strings"

	"github.com/weft-agents/weft"
)

// Limits of the KV store (threadstate.md §2).
const (
	maxKVKey   = 256
	maxKVValue = 1 << 20
)

// checkKV validates a KV key and, when non-nil, its JSON value.
func checkKV(threadID, key string, value json.RawMessage) error {
	if key == "" || len(key) > maxKVKey {
		return weft.Errorf(weft.EInvalid, "thread %s: kv key must be 1 to %d bytes", threadID, maxKVKey)
	}
	if value != nil {
		if len(value) > maxKVValue {
			return weft.Errorf(weft.EInvalid, "thread %s: kv value %q exceeds %d bytes", threadID, key, maxKVValue)
		}
		if !json.Valid(value) {
			return weft.Errorf(weft.EInvalid, "thread %s: kv value %q is not valid JSON", threadID, key)
		}
	}
	return nil
}

// checkExecState validates a run-state key and, when non-nil, its JSON value.
func checkExecState(threadID, key string, value json.RawMessage) error {
	if key == "" {
		return weft.Errorf(weft.EInvalid, "thread %s: empty exec-state key", threadID)
	}
	if value != nil && !json.Valid(value) {
		return weft.Errorf(weft.EInvalid, "thread %s: exec state %q is not valid JSON", threadID, key)
	}
	return nil
}

// checkEnvValue validates one env value and returns its type (secret when unset, env.md §6.1).
func checkEnvValue(scope weft.EnvScope, owner string, v weft.EnvValue) (weft.VarType, error) {
	switch scope {
	case weft.EnvThread, weft.EnvUser, weft.EnvInstance:
	default:
		return "", weft.Errorf(weft.EInvalid, "unknown env scope %q", scope)
	}
	if v.Name == "" {
		return "", weft.Errorf(weft.EInvalid, "env %s %s: empty variable name", scope, owner)
	}
	switch v.Type {
	case "":
		return weft.VarSecret, nil
	case weft.VarText, weft.VarSecret:
		return v.Type, nil
	}
	return "", weft.Errorf(weft.EInvalid, "env %s %s: variable %s: unknown type %q", scope, owner, v.Name, v.Type)
}

// cleanPath wraps weft.CleanPath with the thread and the offending path.
func cleanPath(threadID, p string) (string, error) {
	c, err := weft.CleanPath(p)
	if err != nil {
		return "", fmt.Errorf("thread %s: path %q: %w", threadID, p, err)
	}
	return c, nil
}

// parentDir returns the directory holding p ("/" for top-level entries).
func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// ancestors returns p's ancestor directories below the root, outermost first.
func ancestors(p string) []string {
	var out []string
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return out
}

// within reports whether p is dir or lies below it.
func within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || (len(p) > len(dir) && p[len(dir)] == '/' && strings.HasPrefix(p, dir))
}

// matchGlob matches a cleaned absolute path against a glob: `*`, `?` and `[...]` within one path
// segment (path.Match), `**` across any number of segments (zero included). A pattern without a
// leading slash is relative to the root.
func matchGlob(pattern, p string) (bool, error) {
	pattern = strings.TrimPrefix(pattern, "/")
	ps := strings.Split(pattern, "/")
	for _, s := range ps {
		if s != "**" {
			if _, err := path.Match(s, ""); err != nil {
				return false, weft.Errorf(weft.EInvalid, "bad glob %q: %v", pattern, err)
			}
		}
	}
	return matchSegments(ps, strings.Split(strings.TrimPrefix(p, "/"), "/")), nil
}

func matchSegments(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := range segs {
				if matchSegments(pat, segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// textMIME reports whether files of a media type are indexed for Grep (threadstate.md §4): text/*,
// JSON, YAML, XML, JavaScript, CSV and Markdown (suffixes +json, +xml and +yaml included).
func textMIME(m string) bool {
	if i := strings.IndexByte(m, ';'); i >= 0 {
		m = m[:i]
	}
	m = strings.ToLower(strings.TrimSpace(m))
	if strings.HasPrefix(m, "text/") || strings.HasSuffix(m, "+json") || strings.HasSuffix(m, "+xml") || strings.HasSuffix(m, "+yaml") {
		return true
	}
	switch m {
	case "application/json", "application/x-ndjson", "application/yaml", "application/x-yaml",
		"application/xml", "application/javascript", "application/x-javascript", "application/ecmascript",
		"application/csv", "application/markdown", "application/x-markdown", "application/toml", "application/x-sh":
		return true
	}
	return false
}

// extMIME maps common extensions to media types; the table is fixed so that every machine agrees.
func extMIME(ext string) string {
	switch ext {
	case ".txt":
		return "text/plain; charset=utf-8"
	case ".md", ".markdown":
		return "text/markdown; charset=utf-8"
	case ".csv":
		return "text/csv; charset=utf-8"
	case ".tsv":
		return "text/tab-separated-values; charset=utf-8"
	case ".html", ".htm":
		return "text/html; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".ts":
		return "text/x-typescript; charset=utf-8"
	case ".go":
		return "text/x-go; charset=utf-8"
	case ".py":
		return "text/x-python; charset=utf-8"
	case ".json":
		return "application/json"
	case ".ndjson", ".jsonl":
		return "application/x-ndjson"
	case ".yaml", ".yml":
		return "application/yaml"
	case ".xml":
		return "application/xml"
	case ".toml":
		return "application/toml"
	case ".sh":
		return "application/x-sh"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".gif":
		return "image/gif"
	case ".webp":
		return "image/webp"
	case ".pdf":
		return "application/pdf"
	case ".zip":
		return "application/zip"
	case ".mp3":
		return "audio/mpeg"
	case ".wav":
		return "audio/wav"
	case ".mp4":
		return "video/mp4"
	}
	return ""
}

// detectMIME guesses a media type from the file name, else from the leading bytes.
func detectMIME(name string, data []byte) string {
	if m := extMIME(strings.ToLower(path.Ext(name))); m != "" {
		return m
	}
	if len(data) == 0 {
		return "application/octet-stream"
	}
	return http.DetectContentType(data)
}

// compileGrep compiles an RE2 pattern for Grep.
func compileGrep(threadID, pattern string, ignoreCase bool) (*regexp.Regexp, error) {
	if ignoreCase {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, weft.Errorf(weft.EInvalid, "thread %s: grep pattern: %v", threadID, err)
	}
	return re, nil
}

// grepPrefix returns the cleaned directory a Grep is limited to ("/" for none).
func grepPrefix(threadID string, o weft.GrepOptions) (string, error) {
	if o.Path == "" {
		return "/", nil
	}
	return cleanPath(threadID, o.Path)
}

// grepReader appends the lines of r matching re to out (1-based line numbers, trailing CR dropped)
// until out holds max matches; it reports whether the limit was reached.
func grepReader(re *regexp.Regexp, p string, r io.Reader, out *[]weft.GrepMatch, max int) (bool, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) { // a long line: collect it whole
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			l := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			if re.Match(l) {
				*out = append(*out, weft.GrepMatch{Path: p, Line: n, Text: string(l)})
				if len(*out) >= max {
					return true, nil
				}
			}
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// asciiLower lowers ASCII letters only, as SQLite's lower() does, so searches match alike.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// normJSONMap returns a deep copy of m holding only what a JSON round trip yields (map[string]any,
// []any, string, float64, bool, nil), so that every back end returns the same values. nil stays nil.
func normJSONMap(m map[string]any) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	v, err := normJSON(m)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

func normJSON(v any) (any, error) {
	switch x := v.(type) {
	case nil, string, bool:
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("unsupported JSON number %v", x)
		}
		return x, nil
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case int32:
		return float64(x), nil
	case uint:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case json.Number:
		return x.Float64()
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			n, err := normJSON(e)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			n, err := normJSON(e)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}
