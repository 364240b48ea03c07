package tmpl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/weft-agents/weft/internal/jsonstr"
)

// Thread is the input value of a `kind: thread` input: a point in the prompt rather than text.
// Rendering it with a plain variable (`{{conversation}}`) yields one segment of kind Placeholder
// whose Source is Name and whose Text is empty; the Prompty parser turns that segment into the
// thread placeholder. Using it in a filter or inside a JSON value is a render error.
type Thread struct {
	// Name is the input's name.
	Name string
}

// Object is a JSON object that remembers its key order. Maps iterate in sorted key order (Go maps
// have none); an Object iterates (`{% for k in obj %}`) and renders as JSON in Keys order. Values
// holds every key listed in Keys.
type Object struct {
	// Keys lists the object's keys in document order, without duplicates.
	Keys []string
	// Values maps each key to its value.
	Values map[string]any
}

// DecodeJSON decodes one JSON value keeping object key order: objects become *Object, arrays
// []any, integers that fit int64 become int64, other integers json.Number (rendered verbatim),
// other numbers float64 (json.Number when out of float64 range), and strings, booleans and null
// their usual Go values.
func DecodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeJSONValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("tmpl: trailing data after JSON value")
	}
	return v, nil
}

const maxJSONDepth = 1000

func decodeJSONValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, errors.New("tmpl: JSON nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := &Object{Values: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, errors.New("tmpl: JSON object key is not a string")
				}
				v, err := decodeJSONValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if _, dup := obj.Values[k]; !dup {
					obj.Keys = append(obj.Keys, k)
				}
				obj.Values[k] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return obj, nil
		case '[':
			list := []any{}
			for dec.More() {
				v, err := decodeJSONValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return list, nil
		}
		return nil, fmt.Errorf("tmpl: unexpected JSON delimiter %v", t)
	case json.Number:
		s := string(t)
		if !strings.ContainsAny(s, ".eE") {
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return i, nil
			}
			return t, nil // an integer beyond int64 stays exact
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f, nil
		}
		return t, nil
	default:
		return t, nil
	}
}

// undefined is the value of a missing variable, key or index: falsy, renders as "".
type undefined struct{}

// errPlaceholderUse is wrapped into a positioned error by the engines.
var errPlaceholderUse = errors.New("thread placeholder")

// lookupKey returns v[name] for maps and objects, and v[i] for lists when name is an index.
func lookupKey(v any, name string) (any, bool) {
	switch m := v.(type) {
	case map[string]any:
		x, ok := m[name]
		return x, ok
	case *Object:
		if m == nil {
			return nil, false
		}
		x, ok := m.Values[name]
		return x, ok
	case Object:
		x, ok := m.Values[name]
		return x, ok
	case map[string]string:
		x, ok := m[name]
		return x, ok
	case nil, undefined, string, bool, int, int64, float64, json.Number, Thread:
		return nil, false
	case []any, []string, []map[string]any:
		if i, err := strconv.Atoi(name); err == nil {
			return indexList(v, i)
		}
		return nil, false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, false
		}
		x := rv.MapIndex(reflect.ValueOf(name).Convert(rv.Type().Key()))
		if !x.IsValid() {
			return nil, false
		}
		return x.Interface(), true
	case reflect.Slice, reflect.Array:
		if i, err := strconv.Atoi(name); err == nil {
			return indexList(v, i)
		}
	}
	return nil, false
}

// attr is v.name; missing → undefined.
func attr(v any, name string) any {
	if x, ok := lookupKey(v, name); ok {
		return x
	}
	return undefined{}
}

// index is v[k]: a key for maps, an integer (negative counts from the end) for lists and strings.
func index(v any, k any) any {
	if s, ok := k.(string); ok {
		switch v.(type) {
		case []any, []string, []map[string]any, string:
			return undefined{}
		}
		return attr(v, s)
	}
	i, ok := toInt(k)
	if !ok {
		return undefined{}
	}
	if s, isStr := v.(string); isStr {
		n := utf8.RuneCountInString(s)
		if i < 0 {
			i += n
		}
		if i < 0 || i >= n {
			return undefined{}
		}
		for j, r := range []rune(s) {
			if j == i {
				return string(r)
			}
		}
		return undefined{}
	}
	if x, ok := indexList(v, i); ok {
		return x
	}
	return undefined{}
}

func indexList(v any, i int) (any, bool) {
	switch l := v.(type) {
	case []any:
		if i < 0 {
			i += len(l)
		}
		if i < 0 || i >= len(l) {
			return nil, false
		}
		return l[i], true
	case []string:
		if i < 0 {
			i += len(l)
		}
		if i < 0 || i >= len(l) {
			return nil, false
		}
		return l[i], true
	case []map[string]any:
		if i < 0 {
			i += len(l)
		}
		if i < 0 || i >= len(l) {
			return nil, false
		}
		return l[i], true
	}
	rv := reflect.ValueOf(v)
	if k := rv.Kind(); k != reflect.Slice && k != reflect.Array {
		return nil, false
	}
	if i < 0 {
		i += rv.Len()
	}
	if i < 0 || i >= rv.Len() {
		return nil, false
	}
	return rv.Index(i).Interface(), true
}

// toInt converts an integral number to int.
func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
			return int(n), true
		}
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return int(i), true
		}
	default:
		if f, isInt, ok := toNumber(v); ok {
			if isInt {
				return int(f.i), true
			}
			if f.f == math.Trunc(f.f) && math.Abs(f.f) < 1<<53 {
				return int(f.f), true
			}
		}
	}
	return 0, false
}

// number holds either an integer or a float.
type number struct {
	i int64
	f float64
}

// toNumber reports v as a number; isInt says which field holds it.
func toNumber(v any) (n number, isInt, ok bool) {
	switch x := v.(type) {
	case int:
		return number{i: int64(x)}, true, true
	case int64:
		return number{i: x}, true, true
	case int32:
		return number{i: int64(x)}, true, true
	case int16:
		return number{i: int64(x)}, true, true
	case int8:
		return number{i: int64(x)}, true, true
	case uint:
		if uint64(x) <= math.MaxInt64 {
			return number{i: int64(x)}, true, true
		}
		return number{f: float64(x)}, false, true
	case uint64:
		if x <= math.MaxInt64 {
			return number{i: int64(x)}, true, true
		}
		return number{f: float64(x)}, false, true
	case uint32:
		return number{i: int64(x)}, true, true
	case uint16:
		return number{i: int64(x)}, true, true
	case uint8:
		return number{i: int64(x)}, true, true
	case float64:
		return number{f: x}, false, true
	case float32:
		return number{f: float64(x)}, false, true
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return number{i: i}, true, true
		}
		if f, err := x.Float64(); err == nil {
			return number{f: f}, false, true
		}
	}
	return number{}, false, false
}

// truthy is Python truthiness: none, undefined, false, 0, "" and empty collections are false.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil, undefined:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	case *Object:
		return x != nil && len(x.Keys) > 0
	case Object:
		return len(x.Keys) > 0
	case Thread:
		return true
	}
	if n, isInt, ok := toNumber(v); ok {
		if isInt {
			return n.i != 0
		}
		return n.f != 0
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Map, reflect.Array:
		return rv.Len() > 0
	case reflect.Pointer, reflect.Interface:
		return !rv.IsNil()
	}
	return true
}

// formatFloat renders integral floats without a fraction ("1") and others in their shortest form.
func formatFloat(f float64, bits int) string {
	switch {
	case f == 0:
		return "0"
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == math.Trunc(f) && math.Abs(f) < 1e21:
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}

// text renders a value the same way in both engines: no escaping, undefined and null → "", booleans
// true/false, integral floats without fraction, maps and lists as compact JSON.
func text(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case nil, undefined:
		return "", nil
	case bool:
		if x {
			return "true", nil
		}
		return "false", nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return formatFloat(x, 64), nil
	case float32:
		return formatFloat(float64(x), 32), nil
	case json.Number:
		return string(x), nil
	case Thread:
		return "", errPlaceholderUse
	case *Thread:
		return "", errPlaceholderUse
	case fmt.Stringer:
		return x.String(), nil
	}
	if n, isInt, ok := toNumber(v); ok {
		if isInt {
			return strconv.FormatInt(n.i, 10), nil
		}
		return formatFloat(n.f, 64), nil
	}
	b, err := appendJSON(nil, v, 0)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// appendJSON writes v as compact JSON without HTML escaping; map keys sorted, Object keys in order.
func appendJSON(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxJSONDepth {
		return b, errors.New("value nested too deeply")
	}
	switch x := v.(type) {
	case nil, undefined:
		return append(b, "null"...), nil
	case string:
		return jsonstr.Append(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case json.Number:
		if x == "" {
			return append(b, '0'), nil
		}
		return append(b, x...), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return append(b, "null"...), nil
		}
		return append(b, formatFloat(x, 64)...), nil
	case float32:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return append(b, "null"...), nil
		}
		return append(b, formatFloat(f, 32)...), nil
	case Thread, *Thread:
		return b, errPlaceholderUse
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSON(b, e, depth+1); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case []string:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonstr.Append(b, e)
		}
		return append(b, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return appendJSONObject(b, keys, func(k string) any { return x[k] }, depth)
	case *Object:
		if x == nil {
			return append(b, "null"...), nil
		}
		return appendJSONObject(b, x.Keys, func(k string) any { return x.Values[k] }, depth)
	case Object:
		return appendJSONObject(b, x.Keys, func(k string) any { return x.Values[k] }, depth)
	}
	if n, isInt, ok := toNumber(v); ok {
		if isInt {
			return strconv.AppendInt(b, n.i, 10), nil
		}
		return appendJSON(b, n.f, depth)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return append(b, "null"...), nil
		}
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			break // []byte: encoding/json's base64
		}
		b = append(b, '[')
		for i := 0; i < rv.Len(); i++ {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSON(b, rv.Index(i).Interface(), depth+1); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			break
		}
		if rv.IsNil() {
			return append(b, "null"...), nil
		}
		keys := make([]string, 0, rv.Len())
		for _, k := range rv.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		kt := rv.Type().Key()
		return appendJSONObject(b, keys, func(k string) any {
			return rv.MapIndex(reflect.ValueOf(k).Convert(kt)).Interface()
		}, depth)
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return append(b, "null"...), nil
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return b, err
	}
	return append(b, bytes.TrimRight(buf.Bytes(), "\n")...), nil
}

func appendJSONObject(b []byte, keys []string, get func(string) any, depth int) ([]byte, error) {
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonstr.Append(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendJSON(b, get(k), depth+1); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// equal is Python ==, with undefined equal to none and numbers compared by value.
func equal(a, b any) bool {
	if _, ok := a.(undefined); ok {
		a = nil
	}
	if _, ok := b.(undefined); ok {
		b = nil
	}
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if sa, ok := a.(string); ok {
		sb, ok := b.(string)
		return ok && sa == sb
	}
	if ba, ok := a.(bool); ok {
		bb, ok := b.(bool)
		return ok && ba == bb
	}
	if _, ok := b.(bool); ok {
		return false
	}
	if c, ok := compareNumbers(a, b); ok {
		return c == 0
	}
	if pa, ok := a.(Thread); ok {
		pb, ok := b.(Thread)
		return ok && pa == pb
	}
	la, oka := listOf(a)
	lb, okb := listOf(b)
	if oka || okb {
		if !oka || !okb || len(la) != len(lb) {
			return false
		}
		for i := range la {
			if !equal(la[i], lb[i]) {
				return false
			}
		}
		return true
	}
	ka, oka := keysOf(a)
	kb, okb := keysOf(b)
	if oka || okb {
		if !oka || !okb || len(ka) != len(kb) {
			return false
		}
		for _, k := range ka {
			vb, ok := lookupKey(b, k)
			if !ok {
				return false
			}
			va, _ := lookupKey(a, k)
			if !equal(va, vb) {
				return false
			}
		}
		return true
	}
	return false
}

// compareNumbers orders two numbers; ok is false unless both are numbers (booleans are not).
func compareNumbers(a, b any) (int, bool) {
	if _, isBool := a.(bool); isBool {
		return 0, false
	}
	if _, isBool := b.(bool); isBool {
		return 0, false
	}
	na, ia, oka := toNumber(a)
	nb, ib, okb := toNumber(b)
	if !oka || !okb {
		return 0, false
	}
	if ia && ib {
		switch {
		case na.i < nb.i:
			return -1, true
		case na.i > nb.i:
			return 1, true
		}
		return 0, true
	}
	fa, fb := na.f, nb.f
	if ia {
		fa = float64(na.i)
	}
	if ib {
		fb = float64(nb.i)
	}
	switch {
	case fa < fb:
		return -1, true
	case fa > fb:
		return 1, true
	case fa == fb:
		return 0, true
	}
	return 0, false // NaN
}

// compare orders numbers by value and strings by code point; ok is false for other pairs.
func compare(a, b any) (int, bool) {
	if sa, ok := a.(string); ok {
		if sb, ok := b.(string); ok {
			return strings.Compare(sa, sb), true
		}
		return 0, false
	}
	return compareNumbers(a, b)
}

// contains is Python `a in b`: membership for lists, key presence for maps, substring for strings.
func contains(a, b any) bool {
	if s, ok := b.(string); ok {
		sa, ok := a.(string)
		return ok && strings.Contains(s, sa)
	}
	if l, ok := listOf(b); ok {
		for _, e := range l {
			if equal(a, e) {
				return true
			}
		}
		return false
	}
	if k, ok := a.(string); ok {
		_, found := lookupKey(b, k)
		_, isMap := keysOf(b)
		return found && isMap
	}
	return false
}

// listOf returns the elements of a list value.
func listOf(v any) ([]any, bool) {
	switch l := v.(type) {
	case []any:
		return l, true
	case []string:
		out := make([]any, len(l))
		for i, s := range l {
			out[i] = s
		}
		return out, true
	case nil, undefined, string, map[string]any, *Object, Object, bool, int, int64, float64, json.Number:
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if k := rv.Kind(); (k == reflect.Slice || k == reflect.Array) && !(k == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8) {
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = rv.Index(i).Interface()
		}
		return out, true
	}
	return nil, false
}

// keysOf returns the keys of a map value: Object order, else sorted.
func keysOf(v any) ([]string, bool) {
	switch m := v.(type) {
	case *Object:
		if m == nil {
			return nil, false
		}
		return m.Keys, true
	case Object:
		return m.Keys, true
	case map[string]any:
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return keys, true
	case nil, undefined, string, []any, []string, bool, int, int64, float64, json.Number:
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Map && rv.Type().Key().Kind() == reflect.String {
		keys := make([]string, 0, rv.Len())
		for _, k := range rv.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		return keys, true
	}
	return nil, false
}

// length is the `length` filter: runes of a string, elements of a list or map, else 0.
func length(v any) int {
	switch x := v.(type) {
	case string:
		return utf8.RuneCountInString(x)
	case []any:
		return len(x)
	case map[string]any:
		return len(x)
	case *Object:
		if x == nil {
			return 0
		}
		return len(x.Keys)
	case Object:
		return len(x.Keys)
	case nil, undefined:
		return 0
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return rv.Len()
	}
	return 0
}
