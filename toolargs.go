package weft

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"github.com/weft-agents/weft/schema"
)

// flatArgs decodes a typed Go tool's arguments when its argument struct holds only scalar fields
// (strings, booleans, integers, floats) and the arguments are a flat JSON object naming them
// exactly, each once, with values of their types: what a model sends a tool of the common shape.
// It sets the fields as encoding/json would, without encoding/json's work per call; anything it
// is not certain to decode the same way — an escape in a string, a name matched only without
// case, a null, a value encoding/json would refuse — it leaves to encoding/json (decode reports
// false). FuzzFlatArgs checks it against encoding/json.
type flatArgs struct {
	fields map[string]flatField // by JSON name
}

type flatField struct {
	index int // in the struct
	bit   uint64
	kind  reflect.Kind
	bits  int // of an integer or float
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// flatArgsFor returns the decoder of t's flat objects, nil when t is not a struct of that shape.
func flatArgsFor(t reflect.Type) *flatArgs {
	if t.Kind() != reflect.Struct || t.NumField() > 64 || reflect.PointerTo(t).Implements(jsonUnmarshaler) ||
		reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
	}
	f := &flatArgs{fields: make(map[string]flatField, t.NumField())}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil // embedded structs promote their fields: encoding/json's rules, not ours
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		} else if !plainName(name) {
			return nil
		}
		if strings.Contains(","+opts+",", ",string,") {
			return nil
		}
		ft := sf.Type
		if reflect.PointerTo(ft).Implements(jsonUnmarshaler) || reflect.PointerTo(ft).Implements(textUnmarshaler) {
			return nil
		}
		ff := flatField{index: i, bit: 1 << len(f.fields), kind: ft.Kind()}
		switch ff.kind {
		case reflect.String, reflect.Bool:
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			ff.bits = ft.Bits()
		default:
			return nil
		}
		for other := range f.fields {
			if strings.EqualFold(other, name) {
				return nil // encoding/json resolves such names by its own precedence
			}
		}
		f.fields[name] = ff
	}
	return f
}

// plainName reports whether a json tag's name is made of letters, digits, '_' and '-' only (a
// name encoding/json takes as it is).
func plainName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// decode sets dst's fields (dst is a zero struct, addressable) from raw; false, with dst perhaps
// partly set, when raw is not a flat object it decodes as encoding/json does.
func (f *flatArgs) decode(raw []byte, dst reflect.Value) bool {
	var seen uint64
	return schema.ScanFlatObject(string(raw), func(name, value string) bool {
		ff, ok := f.fields[name]
		if !ok || seen&ff.bit != 0 {
			return false
		}
		seen |= ff.bit
		fv := dst.Field(ff.index)
		switch ff.kind {
		case reflect.String:
			if value[0] != '"' || strings.IndexByte(value, '\\') >= 0 {
				return false
			}
			fv.SetString(value[1 : len(value)-1])
		case reflect.Bool:
			switch value {
			case "true":
				fv.SetBool(true)
			case "false":
				fv.SetBool(false)
			default:
				return false
			}
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			n, err := strconv.ParseInt(value, 10, ff.bits)
			if err != nil {
				return false
			}
			fv.SetInt(n)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			n, err := strconv.ParseUint(value, 10, ff.bits)
			if err != nil {
				return false
			}
			fv.SetUint(n)
		case reflect.Float32, reflect.Float64:
			n, err := strconv.ParseFloat(value, ff.bits) // refuses strings, literals, out of range
			if err != nil {
				return false
			}
			fv.SetFloat(n)
		}
		return true
	})
}

// decodeArgs decodes a typed tool's arguments into a: through flat when it can, else (and on
// anything flat leaves) through encoding/json.
func decodeArgs[A any](flat *flatArgs, raw []byte, a *A) error {
	if flat != nil && flat.decode(raw, reflect.ValueOf(a).Elem()) {
		return nil
	}
	var zero A
	*a = zero
	return json.Unmarshal(raw, a)
}
