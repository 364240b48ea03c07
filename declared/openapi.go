package declared

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

// maxSpecBytes caps an OpenAPI document.
const maxSpecBytes = 8 << 20

// maxRefDepth bounds a chain of `$ref`s that name `$ref`s.
const maxRefDepth = 12

// OpenAPIOptions configures OpenAPITools.
type OpenAPIOptions struct {
	// Prefix starts every tool's name: PREFIX_operationId ("" gives the operationId alone).
	Prefix string
	// BaseURL is where the operations are sent; "" takes the document's first server URL.
	BaseURL string
	// Operations keeps only these operationIds; nil keeps every operation.
	Operations []string
	// Key is the credential's value as the tool sends it, usually `${env:NAME}` (resolved when the
	// tool is called): where the document's first apiKey or http bearer security scheme says, else
	// as `Authorization: Bearer KEY`. "" sends none.
	Key string
}

// OpenAPITools reads an OpenAPI 3 document (JSON or YAML) and returns one http tool per operation:
// named PREFIX_operationId (else PREFIX_method_path), described by its summary or description,
// its arguments the operation's path, query and header parameters plus `body` for a JSON request
// body, each placed where the operation takes it when the tool is called (weft.HTTPSpec.In).
// Local `$ref`s are inlined. An error names the document's part that is wrong; a document without
// operations gives no tool and no error.
func OpenAPITools(doc []byte, o OpenAPIOptions) ([]*weft.Tool, error) {
	if len(doc) > maxSpecBytes {
		return nil, fmt.Errorf("the document is larger than %s", weft.ByteSize(maxSpecBytes))
	}
	var root map[string]any
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("not a JSON or YAML document: %w", err)
	}
	if root == nil {
		return nil, errors.New("the document is empty")
	}
	if v, _ := root["openapi"].(string); !strings.HasPrefix(v, "3.") {
		if _, swagger := root["swagger"]; swagger {
			return nil, errors.New("swagger 2.0 documents are not read: convert it to OpenAPI 3 (e.g. with swagger2openapi)")
		}
		return nil, errors.New(`openapi: the document must be OpenAPI 3 ("openapi: 3.x")`)
	}
	r := &refs{root: root, budget: maxSchemaNodes}
	base := strings.TrimRight(o.BaseURL, "/")
	if base == "" {
		servers, _ := root["servers"].([]any)
		if len(servers) > 0 {
			s, _ := servers[0].(map[string]any)
			base, _ = s["url"].(string)
			base = strings.TrimRight(base, "/")
		}
		if base == "" {
			return nil, errors.New("servers: the document gives no server URL; set the tool's connection.endpoint")
		}
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the base URL %q is not an absolute http(s) URL; set the tool's connection.endpoint", base)
	}
	auth := authOf(r, o.Key)
	paths, _ := root["paths"].(map[string]any)
	var tools []*weft.Tool
	seen := map[string]bool{}
	for _, p := range sortedMapKeys(paths) {
		item, _ := r.deref(paths[p]).(map[string]any)
		common, _ := item["parameters"].([]any)
		for _, method := range []string{"get", "post", "put", "patch", "delete"} {
			op, ok := item[method].(map[string]any)
			if !ok {
				continue
			}
			id, _ := op["operationId"].(string)
			if o.Operations != nil && !slices.Contains(o.Operations, id) {
				continue
			}
			seen[id] = true
			where := fmt.Sprintf("paths.%s.%s", p, method)
			t, err := operationTool(r, o.Prefix, base, p, method, id, op, common, auth)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			if r.budget < 0 {
				return nil, errTooLarge
			}
			tools = append(tools, t)
		}
	}
	for _, id := range o.Operations {
		if !seen[id] {
			return nil, fmt.Errorf("operationIds: the document has no operation %q", id)
		}
	}
	return tools, nil
}

// auth is where an operation sends the key: a header, or a query parameter.
type auth struct {
	header, query, value string
}

// authOf reads the document's first apiKey or http bearer security scheme (by name) for the key.
func authOf(r *refs, key string) auth {
	if key == "" {
		return auth{}
	}
	comps, _ := r.root["components"].(map[string]any)
	schemes, _ := comps["securitySchemes"].(map[string]any)
	for _, name := range sortedMapKeys(schemes) {
		s, _ := r.deref(schemes[name]).(map[string]any)
		typ, _ := s["type"].(string)
		switch typ {
		case "apiKey":
			n, _ := s["name"].(string)
			switch in, _ := s["in"].(string); {
			case n != "" && in == "header":
				return auth{header: n, value: key}
			case n != "" && in == "query":
				return auth{query: n, value: key}
			}
		case "http":
			if sch, _ := s["scheme"].(string); strings.EqualFold(sch, "bearer") {
				return auth{header: "Authorization", value: "Bearer " + key}
			}
		}
	}
	return auth{header: "Authorization", value: "Bearer " + key}
}

// operationTool maps one operation onto an http tool.
func operationTool(r *refs, prefix, base, path, method, id string, op map[string]any, common []any, a auth) (*weft.Tool, error) {
	name := id
	if name == "" {
		name = method + "_" + path
	}
	name = toolName(name)
	if prefix != "" {
		name = toolName(prefix + "_" + name)
	}
	desc, _ := op["summary"].(string)
	if d, _ := op["description"].(string); strings.TrimSpace(desc) == "" {
		desc = d
	}
	if strings.TrimSpace(desc) == "" {
		desc = strings.ToUpper(method) + " " + path
	}
	props := map[string]any{}
	var required []any
	in := map[string]string{}
	params := map[string]map[string]any{}
	var order []string
	for _, list := range [][]any{common, asList(op["parameters"])} {
		for i, pv := range list {
			pm, ok := r.deref(pv).(map[string]any)
			if !ok {
				return nil, fmt.Errorf("parameters[%d] is not a parameter object", i)
			}
			n, _ := pm["name"].(string)
			loc, _ := pm["in"].(string)
			if n == "" {
				return nil, fmt.Errorf("parameters[%d] has no name", i)
			}
			switch loc {
			case "path", "query", "header":
			case "cookie":
				continue
			default:
				return nil, fmt.Errorf("parameter %q: in must be path, query, header or cookie, got %q", n, loc)
			}
			if _, dup := params[n]; !dup {
				order = append(order, n)
			}
			params[n] = pm // an operation's parameter overrides the path item's
		}
	}
	for _, n := range order {
		pm := params[n]
		loc, _ := pm["in"].(string)
		s, _ := r.jsonSchema(pm["schema"], 0).(map[string]any)
		if s == nil {
			s = map[string]any{"type": "string"}
		}
		if d, ok := pm["description"].(string); ok && d != "" {
			s["description"] = d
		}
		props[n] = s
		in[n] = loc
		if req, _ := pm["required"].(bool); req || loc == "path" {
			required = append(required, n)
		}
		if loc == "path" && !strings.Contains(path, "{"+n+"}") {
			return nil, fmt.Errorf("path parameter %q does not appear in the path", n)
		}
	}
	bodyArg := ""
	if rb, ok := r.deref(op["requestBody"]).(map[string]any); ok {
		content, _ := rb["content"].(map[string]any)
		var mt map[string]any
		for _, ct := range sortedMapKeys(content) {
			if ct == "application/json" || strings.HasSuffix(ct, "+json") {
				mt, _ = content[ct].(map[string]any)
				break
			}
		}
		if mt == nil && len(content) > 0 {
			return nil, fmt.Errorf("requestBody: only a JSON body can be sent (content types: %s)", strings.Join(sortedMapKeys(content), ", "))
		}
		if mt != nil {
			bodyArg = "body"
			for props[bodyArg] != nil {
				bodyArg = "_" + bodyArg
			}
			s, _ := r.jsonSchema(mt["schema"], 0).(map[string]any)
			if s == nil {
				s = map[string]any{}
			}
			if d, ok := rb["description"].(string); ok && d != "" {
				s["description"] = d
			} else if _, ok := s["description"]; !ok {
				s["description"] = "The JSON request body."
			}
			props[bodyArg] = s
			if req, _ := rb["required"].(bool); req {
				required = append(required, bodyArg)
			}
		}
	}
	args := map[string]any{"type": "object", "properties": props}
	if required != nil {
		args["required"] = required
	}
	sch, err := schema.FromMap(args)
	if err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	sch.PropertyOrder = slices.Clone(order)
	if bodyArg != "" {
		sch.PropertyOrder = append(sch.PropertyOrder, bodyArg)
	}
	u := base + path
	// In is set (perhaps empty) for every operation: only what it places is sent.
	h := &weft.HTTPSpec{URL: u, Method: strings.ToUpper(method), In: in, Body: bodyArg}
	switch {
	case a.header != "":
		h.Headers = map[string]string{a.header: a.value}
	case a.query != "":
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		h.URL = u + sep + url.QueryEscape(a.query) + "=" + a.value
	}
	return &weft.Tool{Name: name, Description: desc, Args: sch, HTTP: h}, nil
}

// toolName makes s a tool name models accept: letters, digits, _ and -, at most 64 characters.
func toolName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	s = strings.Trim(string(b), "_")
	for strings.Contains(s, "__") {
		s = strings.ReplaceAll(s, "__", "_")
	}
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		s = "operation"
	}
	return s
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func sortedMapKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// refs resolves the local `$ref`s (`#/components/…`) of an OpenAPI document.
type refs struct {
	root map[string]any
	// budget is how many more schema objects jsonSchema may build: inlining refs must not blow a
	// small document up.
	budget int
}

// maxSchemaNodes bounds the schema objects built from one document.
const maxSchemaNodes = 5000

// maxSchemaDepth bounds how deep an argument schema nests (Weft's argument schemas take 16
// levels); a deeper part, such as a schema that refers to itself, becomes an unconstrained object.
const maxSchemaDepth = 8

// errTooLarge is returned when inlining a document's refs would build too many schema objects.
var errTooLarge = errors.New("the document's schemas are too large once their $refs are inlined")

// deref follows v's `$ref` (repeatedly) to the object it names; other values as they are.
func (r *refs) deref(v any) any {
	for range maxRefDepth {
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return v
		}
		v = r.pointer(ref)
	}
	return nil
}

// pointer returns the value at a local JSON pointer (`#/a/b`), nil when there is none.
func (r *refs) pointer(ref string) any {
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	var v any = r.root
	for _, part := range strings.Split(ref[2:], "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[part]
	}
	return v
}

// schemaKeys are the JSON Schema keywords Weft's argument schemas take (OpenAPI's own keywords,
// such as nullable, example or xml, are dropped).
var schemaKeys = map[string]bool{"type": true, "description": true, "title": true, "enum": true, "const": true,
	"default": true, "required": true, "minLength": true, "maxLength": true, "pattern": true, "format": true,
	"minimum": true, "maximum": true, "multipleOf": true, "minItems": true, "maxItems": true, "uniqueItems": true}

// jsonSchema converts an OpenAPI schema object into the JSON Schema subset of Weft's arguments:
// `$ref`s inlined, allOf merged, unknown keywords dropped; nil when v is no schema.
func (r *refs) jsonSchema(v any, depth int) any {
	if r.budget--; r.budget < 0 {
		return nil
	}
	if depth > maxSchemaDepth {
		return map[string]any{"type": "object"}
	}
	m, ok := r.deref(v).(map[string]any)
	if !ok {
		return nil
	}
	if _, isRef := m["$ref"]; isRef {
		return map[string]any{"type": "object"}
	}
	out := map[string]any{}
	for k, x := range m {
		switch {
		case schemaKeys[k]:
			out[k] = x
		case k == "exclusiveMinimum" || k == "exclusiveMaximum":
			if _, isBool := x.(bool); !isBool {
				out[k] = x
			}
		case k == "items":
			if s := r.jsonSchema(x, depth+1); s != nil {
				out[k] = s
			}
		case k == "additionalProperties":
			if b, isBool := x.(bool); isBool {
				out[k] = b
			} else if s := r.jsonSchema(x, depth+1); s != nil {
				out[k] = s
			}
		case k == "properties":
			pm, _ := x.(map[string]any)
			props := map[string]any{}
			for _, pk := range sortedMapKeys(pm) {
				if s := r.jsonSchema(pm[pk], depth+1); s != nil {
					props[pk] = s
				}
			}
			out[k] = props
		case k == "anyOf" || k == "oneOf":
			var list []any
			for _, b := range asList(x) {
				if s := r.jsonSchema(b, depth+1); s != nil {
					list = append(list, s)
				}
			}
			if len(list) > 0 {
				out[k] = list
			}
		}
	}
	for _, b := range asList(m["allOf"]) {
		s, _ := r.jsonSchema(b, depth+1).(map[string]any)
		for k, x := range s {
			switch k {
			case "properties":
				props, _ := out[k].(map[string]any)
				if props == nil {
					props = map[string]any{}
				}
				xm, _ := x.(map[string]any)
				for pk, pv := range xm {
					props[pk] = pv
				}
				out[k] = props
			case "required":
				req, _ := out[k].([]any)
				out[k] = append(req, asList(x)...)
			default:
				if _, set := out[k]; !set {
					out[k] = x
				}
			}
		}
	}
	if _, typed := out["type"]; !typed {
		if _, has := out["properties"]; has {
			out["type"] = "object"
		}
	}
	return out
}
