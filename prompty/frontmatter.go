package prompty

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	yamlparser "github.com/goccy/go-yaml/parser"
)

// maxFileDepth bounds `${file:}` references inside referenced files.
const maxFileDepth = 8

// splitFile separates the front matter from the body. Front matter exists only if
// the first non-blank line is `---` or `+++` (surrounding spaces allowed); it ends at the next line
// consisting only of that fence. fmLine and bodyLine are 1-based file lines.
func splitFile(data []byte) (fm []byte, fmLine int, body []byte, bodyLine int, has bool, err error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	line := 0
	var fence []byte
	pos := 0
	for pos < len(data) {
		line++
		end := bytes.IndexByte(data[pos:], '\n')
		next := len(data)
		if end >= 0 {
			end += pos
			next = end + 1
		} else {
			end = len(data)
		}
		t := bytes.TrimSpace(data[pos:end])
		if len(t) == 0 {
			pos = next
			continue
		}
		if string(t) == "---" || string(t) == "+++" {
			fence = t
			pos = next
		}
		break
	}
	if fence == nil {
		return nil, 0, data, 1, false, nil
	}
	openLine := line
	start := pos
	for pos < len(data) {
		line++
		end := bytes.IndexByte(data[pos:], '\n')
		next := len(data)
		if end >= 0 {
			end += pos
			next = end + 1
		} else {
			end = len(data)
		}
		if bytes.Equal(bytes.TrimSpace(data[pos:end]), fence) {
			return data[start:pos], openLine + 1, data[next:], line + 1, true, nil
		}
		pos = next
	}
	return nil, 0, nil, 0, true, &Error{Line: openLine, Col: 1, Msg: fmt.Sprintf("front matter is not closed: no line %q after it", fence)}
}

// frontMatter is decoded front matter with what is needed to report positions.
type frontMatter struct {
	file   string
	src    []byte
	line   int // file line of the first front-matter line
	doc    ast.Node
	parsed bool
}

// keyPath is a path to a front-matter value: string keys and int indices.
type keyPath []any

// String formats the path as `a.b[0].c`.
func (k keyPath) String() string {
	var b strings.Builder
	for _, e := range k {
		switch v := e.(type) {
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(v)
		case int:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(v))
			b.WriteByte(']')
		}
	}
	return b.String()
}

func (k keyPath) with(e any) keyPath {
	out := make(keyPath, len(k)+1)
	copy(out, k)
	out[len(k)] = e
	return out
}

// errAt returns an error at the position of the value at path (as deep as it can be found).
func (f *frontMatter) errAt(path keyPath, msg string, cause error) *Error {
	line, col := f.pos(path)
	if p := path.String(); p != "" {
		msg = p + ": " + msg
	}
	return &Error{File: f.file, Line: line, Col: col, Msg: msg, Err: cause}
}

// pos finds the file line and column of the value at path.
func (f *frontMatter) pos(path keyPath) (int, int) {
	if !f.parsed {
		f.parsed = true
		func() {
			defer func() { _ = recover() }()
			if file, err := yamlparser.ParseBytes(f.src, 0); err == nil && len(file.Docs) > 0 {
				f.doc = file.Docs[0].Body
			}
		}()
	}
	line, col := f.line-1, 0
	node := f.doc
	set := func(n ast.Node) {
		if n == nil {
			return
		}
		if tk := n.GetToken(); tk != nil && tk.Position != nil {
			line, col = f.line+tk.Position.Line-1, tk.Position.Column
		}
	}
	for _, e := range path {
		node = unwrapNode(node)
		if node == nil {
			break
		}
		var next ast.Node
		switch k := e.(type) {
		case string:
			var values []*ast.MappingValueNode
			switch n := node.(type) {
			case *ast.MappingNode:
				values = n.Values
			case *ast.MappingValueNode:
				values = []*ast.MappingValueNode{n}
			}
			for _, mv := range values {
				if mv.Key != nil && mv.Key.GetToken() != nil && mv.Key.GetToken().Value == k {
					set(mv.Key)
					next = mv.Value
					break
				}
			}
		case int:
			if n, ok := node.(*ast.SequenceNode); ok && k < len(n.Values) {
				next = n.Values[k]
				set(next)
			}
		}
		if next == nil {
			break
		}
		node = next
	}
	if line < 1 {
		line = 1
	}
	return line, col
}

func unwrapNode(n ast.Node) ast.Node {
	for i := 0; i < 8; i++ {
		switch t := n.(type) {
		case *ast.TagNode:
			n = t.Value
		case *ast.AnchorNode:
			n = t.Value
		default:
			return n
		}
	}
	return n
}

// construct splits a whole-string `${protocol:rest}`; ok is false when s is not one.
func construct(s string) (proto, rest string, ok bool) {
	if len(s) < 4 || s[0] != '$' || s[1] != '{' || s[len(s)-1] != '}' {
		return "", "", false
	}
	inner := s[2 : len(s)-1]
	i := strings.IndexByte(inner, ':')
	if i <= 0 {
		return "", "", false
	}
	for j := 0; j < i; j++ {
		if !isLetter(inner[j]) {
			return "", "", false
		}
	}
	return strings.ToLower(inner[:i]), inner[i+1:], true
}

// envRef splits `X` or `X:default`: the default is everything after the second colon.
func envRef(rest string) (name, def string, hasDef bool) {
	if i := strings.IndexByte(rest, ':'); i >= 0 {
		return rest[:i], rest[i+1:], true
	}
	return rest, "", false
}

// resolver applies the load-time replacement constructs to whole front-matter string values:
// `${env:X[:default]}` from the process environment and `${file:path}` confined to the project root.
type resolver struct {
	fm        *frontMatter
	lookupEnv func(string) (string, bool)
	files     *confinedFS
	params    []ParamRef
	// envRefs maps the key path of each value that came from `${env:NAME}` to NAME.
	envRefs map[string]string
	// envDefaults maps the key path of each value written `${env:NAME:default}` to the default.
	envDefaults map[string]string
	// fileRefs are the absolute paths `${file:}` values read.
	fileRefs []string
}

// resolve walks v (in place for maps and lists) and returns the resolved value. dir is the
// directory `${file:}` paths are relative to; depth counts nested file references.
func (r *resolver) resolve(v any, path keyPath, dir string, depth int, origin string) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			n, err := r.resolve(x, path.with(k), dir, depth, origin)
			if err != nil {
				return nil, err
			}
			t[k] = n
		}
		return t, nil
	case []any:
		for i, x := range t {
			n, err := r.resolve(x, path.with(i), dir, depth, origin)
			if err != nil {
				return nil, err
			}
			t[i] = n
		}
		return t, nil
	case string:
		return r.resolveString(t, path, dir, depth, origin)
	}
	return v, nil
}

func (r *resolver) errAt(path keyPath, origin, msg string, cause error) error {
	if origin != "" {
		msg = "in " + origin + ": " + msg
	}
	return r.fm.errAt(path, msg, cause)
}

func (r *resolver) resolveString(s string, path keyPath, dir string, depth int, origin string) (any, error) {
	if strings.HasPrefix(s, "$${") {
		if _, _, ok := construct(s[1:]); ok {
			return s[1:], nil
		}
		return s, nil
	}
	proto, rest, ok := construct(s)
	if !ok {
		return s, nil
	}
	switch proto {
	case "env":
		name, def, hasDef := envRef(rest)
		if origin == "" {
			if r.envRefs == nil {
				r.envRefs = map[string]string{}
			}
			r.envRefs[path.String()] = name
			if hasDef {
				if r.envDefaults == nil {
					r.envDefaults = map[string]string{}
				}
				r.envDefaults[path.String()] = def
			}
		}
		if v, ok := r.lookupEnv(name); ok {
			return v, nil
		}
		if hasDef {
			return def, nil
		}
		return nil, r.errAt(path, origin, fmt.Sprintf("environment variable '%s' not set", name), nil)
	case "file":
		if depth >= maxFileDepth {
			return nil, r.errAt(path, origin, fmt.Sprintf("${file:%s}: file references nested more than %d deep", rest, maxFileDepth), nil)
		}
		abs, data, err := r.files.read(dir, rest)
		if err != nil {
			return nil, r.errAt(path, origin, fmt.Sprintf("${file:%s}: %v", rest, err), err)
		}
		r.fileRefs = append(r.fileRefs, abs)
		v, err := decodeFileValue(abs, data)
		if err != nil {
			return nil, r.errAt(path, origin, fmt.Sprintf("${file:%s}: %v", rest, err), err)
		}
		return r.resolve(v, path, filepath.Dir(abs), depth+1, rest)
	case "params":
		if origin == "" {
			line, _ := r.fm.pos(path)
			r.params = append(r.params, ParamRef{Path: path.String(), Name: rest, Line: line})
		}
		return s, nil
	}
	return s, nil
}

// decodeFileValue decodes a `${file:}` target: .json as JSON, .yaml/.yml as YAML, else text.
func decodeFileValue(path string, data []byte) (any, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		budget := maxYAMLNodes
		return normalizeJSON(v, &budget)
	case ".yaml", ".yml":
		v, yerr := decodeYAMLBlock(data)
		if yerr != nil {
			return nil, fmt.Errorf("invalid YAML at line %d: %s", yerr.line, yerr.msg)
		}
		return v, nil
	}
	return string(data), nil
}

// normalizeJSON turns json.Number into int or float64.
func normalizeJSON(v any, budget *int) (any, error) {
	*budget--
	if *budget < 0 {
		return nil, errTooLarge
	}
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			n, err := normalizeJSON(x, budget)
			if err != nil {
				return nil, err
			}
			t[k] = n
		}
	case []any:
		for i, x := range t {
			n, err := normalizeJSON(x, budget)
			if err != nil {
				return nil, err
			}
			t[i] = n
		}
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return int(i), nil
		}
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return nil, errors.New("number out of range: " + string(t))
		}
		return f, nil
	}
	return v, nil
}
