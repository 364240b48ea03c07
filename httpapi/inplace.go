package httpapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// inPlaceString is the length from which a JSON string of a body decoded in place is not copied:
// the decoded field is the body's own bytes (a message's content: 20 MiB would be held twice).
const inPlaceString = 64 << 10

// keptString is a string member of a body that the decoding leaves where it is.
type keptString struct {
	field      []int // the field's index path from the decoded struct (reflect.Value.FieldByIndex)
	start, end int   // the string's bytes in the body, quotes excluded
}

// unmarshalInPlace decodes b (valid JSON naming only dst's fields: knownFields) into dst, as
// json.Unmarshal does, except that a long string member of a struct (inPlaceString or more) that
// needs no unescaping is not copied: its field is set to the bytes b holds. b must not change
// afterwards — a request body, read into a buffer of its own, never does. It reports whether dst
// was decoded.
func unmarshalInPlace(b []byte, dst any) bool {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return json.Unmarshal(b, dst) == nil
	}
	var kept []keptString
	keptStrings(b, 0, v.Type().Elem(), nil, &kept)
	if len(kept) == 0 {
		return json.Unmarshal(b, dst) == nil
	}
	// The rest is decoded from a copy that has each kept string as "": small, as the kept strings
	// are the body's bulk.
	rest := make([]byte, 0, 256)
	at := 0
	for _, k := range kept {
		rest = append(rest, b[at:k.start]...)
		at = k.end
	}
	rest = append(rest, b[at:]...)
	if json.Unmarshal(rest, dst) != nil {
		return false
	}
	for _, k := range kept {
		f, err := v.Elem().FieldByIndexErr(k.field)
		if err != nil {
			return false // (a pointer the decoding left nil: it decodes a present object)
		}
		f.SetString(unsafe.String(&b[k.start], k.end-k.start))
	}
	return true
}

// keptStrings appends to kept the long strings of the JSON value at b[off:] (valid JSON) that
// decode into a string field of t as the bytes they are: no escape, valid UTF-8. A struct that
// names a field twice keeps none of its own (the decoding takes the last).
func keptStrings(b []byte, off int, t reflect.Type, path []int, kept *[]keptString) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return
	}
	val := b[skipSpace(b, off):]
	if len(val) == 0 || val[0] != '{' {
		return
	}
	val = val[:valueEnd(val, 0)]
	// A field named twice (in the same words or not: "cont\u0065nt") keeps no string here.
	var seen []int
	twice := false
	eachMember(val, func(key, _ []byte) bool {
		if f, found := fieldNamed(t, key); found {
			twice = slices.Contains(seen, f.Index[0])
			seen = append(seen, f.Index[0])
		}
		return !twice
	})
	if twice {
		return
	}
	eachMember(val, func(key, v []byte) bool {
		f, found := fieldNamed(t, key)
		if !found || len(f.Index) != 1 {
			return true
		}
		// v is a subslice of b: its offset in b is where it starts in memory.
		start := int(uintptr(unsafe.Pointer(unsafe.SliceData(v))) - uintptr(unsafe.Pointer(unsafe.SliceData(b))))
		at := append(path[:len(path):len(path)], f.Index[0])
		switch {
		case f.Type.Kind() == reflect.String && len(v) >= inPlaceString+2 && v[0] == '"' &&
			!strings.Contains(f.Tag.Get("json"), ",string") && bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v):
			*kept = append(*kept, keptString{field: at, start: start + 1, end: start + len(v) - 1})
		case v[0] == '{':
			keptStrings(b, start, f.Type, at, kept)
		}
		return true
	})
}
