package project

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/goccy/go-yaml"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/schema"
)

// decoder reads one definition file's decoded YAML/JSON value into definitions, recording every
// problem as a diagnostic with the file and field path instead of stopping at the first.
type decoder struct {
	src   string
	diags *weft.Diagnostics
}

func (d *decoder) errf(path, format string, args ...any) {
	*d.diags = append(*d.diags, weft.Diagnostic{Source: d.src, Path: path, Severity: weft.SeverityError, Message: fmt.Sprintf(format, args...)})
}

func (d *decoder) warnf(path, format string, args ...any) {
	*d.diags = append(*d.diags, weft.Diagnostic{Source: d.src, Path: path, Severity: weft.SeverityWarning, Message: fmt.Sprintf(format, args...)})
}

// obj is a mapping being read; done reports the keys nobody asked for.
type obj struct {
	d     *decoder
	path  string
	items yaml.MapSlice
	used  map[string]bool
}

func join(base, key string) string {
	if base == "" {
		return key
	}
	return base + "." + key
}

func index(base string, i int) string { return fmt.Sprintf("%s[%d]", base, i) }

// object reads v as a mapping; a nil result means v was not one (already reported).
func (d *decoder) object(path string, v any) *obj {
	m, ok := v.(yaml.MapSlice)
	if !ok {
		d.errf(path, "must be a mapping (key: value), got %s", describe(v))
		return nil
	}
	return &obj{d: d, path: path, items: m, used: map[string]bool{}}
}

func (o *obj) get(key string) (any, bool) {
	for _, it := range o.items {
		if k, ok := it.Key.(string); ok && k == key {
			o.used[key] = true
			return it.Value, true
		}
	}
	return nil, false
}

func (o *obj) has(key string) bool {
	for _, it := range o.items {
		if k, ok := it.Key.(string); ok && k == key {
			return true
		}
	}
	return false
}

// done reports every key that was not read as unknown: in YAML/JSON files a typo is an error.
func (o *obj) done() {
	if o == nil {
		return
	}
	for _, it := range o.items {
		k, ok := it.Key.(string)
		if !ok {
			o.d.errf(o.path, "keys must be strings, got %s", describe(it.Key))
			continue
		}
		if !o.used[k] {
			o.d.errf(join(o.path, k), "unknown key %q", k)
		}
	}
}

func (o *obj) str(key string) string {
	v, ok := o.get(key)
	if !ok || v == nil {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		o.d.errf(join(o.path, key), "must be a string, got %s", describe(v))
	}
	return s
}

func (o *obj) boolPtr(key string) *bool {
	v, ok := o.get(key)
	if !ok || v == nil {
		return nil
	}
	b, ok := v.(bool)
	if !ok {
		o.d.errf(join(o.path, key), "must be true or false, got %s", describe(v))
		return nil
	}
	return &b
}

func (o *obj) boolean(key string) bool { return weft.Flag(o.boolPtr(key), false) }

// integer reads a whole number; ok is false when absent or invalid.
func (o *obj) integer(key string) (int, bool) {
	v, ok := o.get(key)
	if !ok || v == nil {
		return 0, false
	}
	n, ok := asInt(v)
	if !ok {
		o.d.errf(join(o.path, key), "must be an integer, got %s", describe(v))
	}
	return n, ok
}

// positive reads an integer that must be ≥ 1 when present.
func (o *obj) positive(key string) int {
	n, ok := o.integer(key)
	if ok && n < 1 {
		o.d.errf(join(o.path, key), "must be a positive integer, got %d", n)
		return 0
	}
	return n
}

func (o *obj) number(key string) *float64 {
	v, ok := o.get(key)
	if !ok || v == nil {
		return nil
	}
	f, ok := asFloat(v)
	if !ok {
		o.d.errf(join(o.path, key), "must be a number, got %s", describe(v))
		return nil
	}
	return &f
}

func (o *obj) duration(key string) weft.Duration {
	v, ok := o.get(key)
	if !ok || v == nil {
		return 0
	}
	d, err := weft.ParseDuration(v)
	if err != nil {
		o.d.errf(join(o.path, key), "%v", err)
	}
	return d
}

func (o *obj) strList(key string) []string {
	v, ok := o.get(key)
	if !ok || v == nil {
		return nil
	}
	return o.d.strList(join(o.path, key), v)
}

func (d *decoder) strList(path string, v any) []string {
	l, ok := v.([]any)
	if !ok {
		d.errf(path, "must be a list of strings, got %s", describe(v))
		return nil
	}
	out := make([]string, 0, len(l))
	for i, e := range l {
		s, ok := e.(string)
		if !ok {
			d.errf(index(path, i), "must be a string, got %s", describe(e))
			continue
		}
		out = append(out, s)
	}
	return out
}

func (o *obj) strMap(key string) map[string]string {
	v, ok := o.get(key)
	if !ok || v == nil {
		return nil
	}
	m, ok := v.(yaml.MapSlice)
	if !ok {
		o.d.errf(join(o.path, key), "must be a mapping of names to strings, got %s", describe(v))
		return nil
	}
	out := make(map[string]string, len(m))
	for _, it := range m {
		k := fmt.Sprint(it.Key)
		switch x := it.Value.(type) {
		case string:
			out[k] = x
		case bool, uint64, int64, float64, int:
			// Unquoted scalars in YAML are common (PORT: 8080); keep their text.
			out[k] = scalarText(x)
		default:
			o.d.errf(join(join(o.path, key), k), "must be a string, got %s", describe(x))
		}
	}
	return out
}

func (o *obj) anyMap(key string) map[string]any {
	v, ok := o.get(key)
	if !ok || v == nil {
		return nil
	}
	if _, ok := v.(yaml.MapSlice); !ok {
		o.d.errf(join(o.path, key), "must be a mapping, got %s", describe(v))
		return nil
	}
	m, _ := plain(v).(map[string]any)
	return m
}

func (o *obj) sub(key string) *obj {
	v, ok := o.get(key)
	if !ok || v == nil {
		return nil
	}
	return o.d.object(join(o.path, key), v)
}

// schemaAt reads an argument schema, keeping the property order of the file.
func (o *obj) schemaAt(key string) *schema.Schema {
	v, ok := o.get(key)
	if !ok || v == nil {
		return nil
	}
	p := join(o.path, key)
	if _, ok := v.(yaml.MapSlice); !ok {
		o.d.errf(p, "must be a JSON Schema object (type: object, properties: …), got %s", describe(v))
		return nil
	}
	s, err := schema.Parse(orderedJSON(v))
	if err != nil {
		o.d.errf(p, "invalid schema: %v", err)
		return nil
	}
	return s
}

// orderedJSON encodes a decoded YAML value as JSON, keeping mapping order.
func orderedJSON(v any) []byte {
	var b bytes.Buffer
	writeJSON(&b, v)
	return b.Bytes()
}

func writeJSON(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case yaml.MapSlice:
		b.WriteByte('{')
		for i, it := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(fmt.Sprint(it.Key))
			b.Write(k)
			b.WriteByte(':')
			writeJSON(b, it.Value)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			b.WriteString("null")
			return
		}
		j, _ := json.Marshal(x)
		b.Write(j)
	default:
		j, err := json.Marshal(x)
		if err != nil {
			b.WriteString("null")
			return
		}
		b.Write(j)
	}
}

// plain converts ordered mappings into map[string]any recursively.
func plain(v any) any {
	switch x := v.(type) {
	case yaml.MapSlice:
		m := make(map[string]any, len(x))
		for _, it := range x {
			m[fmt.Sprint(it.Key)] = plain(it.Value)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x)
		}
		return float64(x)
	}
	return v
}

func asInt(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int64:
		return int(x), true
	case uint64:
		if x > math.MaxInt32 {
			return 0, false
		}
		return int(x), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < math.MaxInt32 {
			return int(x), true
		}
	}
	return 0, false
}

func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func scalarText(v any) string {
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// describe names a value's type the way a YAML author thinks of it.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("string %q", truncate(x, 40))
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case int, int64, uint64, float64:
		return fmt.Sprintf("number %v", x)
	case []any:
		return "a list"
	case yaml.MapSlice:
		return "a mapping"
	}
	return fmt.Sprintf("%T", v)
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
