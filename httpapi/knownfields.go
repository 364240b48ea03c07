package httpapi

import (
	"bytes"
	"encoding/json"
	"reflect"
)

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// knownFields reports whether every key of b's objects names a field where t (the type b decodes
// into) has a struct, as json.Decoder.DisallowUnknownFields requires. b is valid JSON. It may say
// false of a body the decoder takes (a key that matches a field only case-insensitively, a type
// with embedded fields): it only decides when a body may skip the decoder. Values are found
// without copying them.
func knownFields(b []byte, t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return true // its own decoding decides
	}
	b = bytes.TrimLeft(b, " \t\r\n")
	switch t.Kind() {
	case reflect.Struct:
		if len(b) == 0 || b[0] != '{' {
			return true // null, or a type error the decoding finds
		}
		ok := true
		eachMember(b, func(key, v []byte) bool {
			f, found := fieldNamed(t, key)
			ok = found && knownFields(v, f.Type)
			return ok
		})
		return ok
	case reflect.Map:
		if len(b) == 0 || b[0] != '{' {
			return true
		}
		ok := true
		eachMember(b, func(_, v []byte) bool {
			ok = knownFields(v, t.Elem())
			return ok
		})
		return ok
	case reflect.Slice, reflect.Array:
		if len(b) == 0 || b[0] != '[' || t.Elem().Kind() == reflect.Uint8 {
			return true // []byte is base64 text
		}
		ok := true
		eachElement(b, func(v []byte) bool {
			ok = knownFields(v, t.Elem())
			return ok
		})
		return ok
	}
	return true // a scalar, or any
}

// fieldNamed returns t's field that JSON key names exactly; none when t embeds a struct (its
// fields' promotion is the decoder's to work out) or two fields have the name.
func fieldNamed(t reflect.Type, key []byte) (field reflect.StructField, found bool) {
	if bytes.IndexByte(key, '\\') >= 0 {
		var k string
		if json.Unmarshal(key, &k) != nil {
			return reflect.StructField{}, false
		}
		key = []byte(k)
	} else {
		key = key[1 : len(key)-1]
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return reflect.StructField{}, false
		}
		if !f.IsExported() {
			continue
		}
		name, _, _ := bytes.Cut([]byte(f.Tag.Get("json")), []byte(","))
		switch {
		case string(name) == "-" && f.Tag.Get("json") == "-":
			continue
		case len(name) == 0:
			name = []byte(f.Name)
		}
		if bytes.Equal(name, key) {
			if found {
				return reflect.StructField{}, false
			}
			field, found = f, true
		}
	}
	return field, found
}

// eachMember calls fn with each member of the JSON object b (valid JSON) — its key as written,
// quotes included, and its value — until fn returns false.
func eachMember(b []byte, fn func(key, value []byte) bool) {
	i := skipSpace(b, 1)
	for i < len(b) && b[i] == '"' {
		end := stringEnd(b, i)
		key := b[i:end]
		i = skipSpace(b, skipSpace(b, end)+1) // past the colon
		end = valueEnd(b, i)
		if !fn(key, b[i:end]) {
			return
		}
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
}

// eachElement calls fn with each element of the JSON array b (valid JSON) until fn returns false.
func eachElement(b []byte, fn func(value []byte) bool) {
	i := skipSpace(b, 1)
	for i < len(b) && b[i] != ']' {
		end := valueEnd(b, i)
		if !fn(b[i:end]) {
			return
		}
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// stringEnd returns the index after the JSON string that starts at b[i].
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// valueEnd returns the index after the JSON value that starts at b[i] (a scalar's ends before the
// comma, bracket or space that follows it).
func valueEnd(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = stringEnd(b, i) - 1
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\r', '\n':
			if depth == 0 {
				return i
			}
		}
	}
	return len(b)
}
