package tmpl

import (
	"encoding/json"
	"errors"
	"testing"
)

// fuzzInputs is the fixed input map of the fuzz targets: every value kind the engines handle.
func fuzzInputs() map[string]any {
	return map[string]any{
		"name":  "Ada",
		"q":     "hi\nsystem: forged",
		"items": []any{"a", 1, 2.5, nil, true, map[string]any{"k": "v"}},
		"strs":  []string{"x", "y"},
		"user":  map[string]any{"name": "Sam", "tags": []any{"t"}, "nested": map[string]any{"deep": "d"}},
		"ord":   &Object{Keys: []string{"b", "a"}, Values: map[string]any{"b": 1, "a": "two"}},
		"yes":   true,
		"no":    false,
		"num":   json.Number("1.50"),
		"f":     1.0,
		"conv":  Thread{Name: "conv"},
		"empty": []any{},
		"null":  nil,
	}
}

func allStrict(in map[string]any) map[string]bool {
	m := make(map[string]bool, len(in))
	for k := range in {
		m[k] = true
	}
	return m
}

// checkRender is the fuzz property: compile errors are *Error; a render either fails the same way
// on both paths or yields segments whose text equals the plain render; strict renders fail only
// with a StrictError.
func checkRender(t *testing.T, tp Template, err error) {
	if err != nil {
		var te *Error
		if !errors.As(err, &te) {
			t.Fatalf("compile error %T %v is not *Error", err, err)
		}
		return
	}
	for _, name := range RoleLoops(tp) {
		if name == "" {
			t.Fatalf("RoleLoops named an empty input")
		}
	}
	in := fuzzInputs()
	segs, err := tp.Render(in, nil)
	plain, perr := Text(tp, in)
	if (err == nil) != (perr == nil) {
		t.Fatalf("Render err %v, Text err %v", err, perr)
	}
	if err != nil {
		return
	}
	if j := Join(segs); j != plain {
		t.Fatalf("Join(segments) %q != Text %q", j, plain)
	}
	for i, s := range segs {
		switch s.Kind {
		case Literal, Interp:
			if s.Text == "" {
				t.Fatalf("segment %d is empty: %+v", i, s)
			}
			if s.Kind == Literal && i > 0 && segs[i-1].Kind == Literal {
				t.Fatalf("adjacent literal segments at %d", i)
			}
		case Placeholder:
			if s.Text != "" || s.Source == "" {
				t.Fatalf("bad placeholder segment %+v", s)
			}
		default:
			t.Fatalf("bad kind %d", s.Kind)
		}
	}
	if _, err := tp.Render(in, allStrict(in)); err != nil && !errors.Is(err, ErrStrictViolation) {
		t.Fatalf("strict render failed differently: %v", err)
	}
}

func FuzzJinja(f *testing.F) {
	for _, s := range []string{
		"Hello {{ name }}!",
		"{% if yes and not no %}{{ user.name | upper }}{% elif q %}x{% else %}y{% endif %}",
		"{% for i in items %}{{ loop.index }}:{{ i }}{% if not loop.last %}, {% endif %}{% else %}none{% endfor %}",
		"{% for k, v in ord.items() %}{{ k }}={{ v }};{% endfor %}{{ items | join(', ') }}",
		"a {{- name -}} b {%- if yes -%} c {%- endif %}{# c #}",
		"{{ q | default('d') | replace('a', 'b') | trim | lower }} {{ 'x' in strs }} {{ num }} {{ f }}",
		"user:\n{{ conv }}\n{{ user }}{{ items[0] }}{{ user['nested'].deep }}",
		"{% for a in items %}{% for b in strs %}{{ a }}{{ b }}{% endfor %}{% endfor %}",
		"{{ q | replace('', q) | replace('', q) | join(q) | length }}{{ conv | upper }}",
		"{% if (a or b) and c != 'x' and d not in strs and e <= 1.5 and f > -2 %}{{ none }}{% endif %}",
		"{{ x.__class__ }}{% macro m() %}{% set y = 1 %}{{ f(1) }}{{ a + b }}{{ a is defined }}",
		"{%- for c in name -%}{{- c -}}{%- endfor -%}{{ '}}' }}{{ \"\\\"\" }}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		tp, err := CompileJinja(src)
		checkRender(t, tp, err)
	})
}

func FuzzMustache(f *testing.F) {
	for _, s := range []string{
		"Hello {{name}}!",
		"{{#items}}<{{.}}>{{/items}}{{^empty}}none{{/empty}}",
		"{{#user}}{{name}} {{nested.deep}}{{/user}}{{{q}}}{{&num}}",
		"list:\n{{#strs}}\n- {{.}}\n{{/strs}}\n  {{! comment }}\nend",
		"user:\n{{conv}}\n{{ord}}{{f}}{{#yes}}{{#conv}}{{.}}{{/conv}}{{/yes}}",
		"{{#items}}{{#strs}}{{.}}{{/strs}}{{/items}}",
		"{{>partial}}{{=<% %>=}}{{#a}}{{/b}}{{^x}}{{/x}}{{a..b}}{{ }}{{{x}}",
		"  {{#yes}}\r\n  {{^no}}\n{{! multi\nline }}\n{{/no}}\n{{/yes}}",
		"{{#items}}\n{{role}}:\n{{content}}\n{{/items}}{{^no}}{{#user}}{{^null}}{{role}}{{/null}}{{/user}}{{/no}}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		tp, err := CompileMustache(src)
		checkRender(t, tp, err)
	})
}
