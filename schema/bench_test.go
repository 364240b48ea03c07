package schema

import "testing"

// typicalArgs is what a model typically sends for testdata/typical.json.
func typicalArgs() map[string]any {
	return map[string]any{
		"query":   "distributed systems",
		"tags":    []any{"go", "databases"},
		"filters": map[string]any{"category": "books", "since": "2024-01-01T00:00:00Z"},
	}
}

func BenchmarkValidateTypical(b *testing.B) {
	v := mustCompile(b, typical(b))
	args := typicalArgs()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Validate(args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateTypicalInvalid(b *testing.B) {
	v := mustCompile(b, typical(b))
	args := map[string]any{"limit": 50.0, "tags": []any{"go", 1.0}, "filters": map[string]any{"category": "toys"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Validate(args); err == nil {
			b.Fatal("no error")
		}
	}
}

func BenchmarkCheck(b *testing.B) {
	s := typical(b)
	b.ReportAllocs()
	for b.Loop() {
		if p := Check(s); p != nil {
			b.Fatal(p)
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	s := typical(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStrict(b *testing.B) {
	s := typical(b)
	b.ReportAllocs()
	for b.Loop() {
		Strict(s, OpenAIStrict)
	}
}

func BenchmarkDropNulls(b *testing.B) {
	s := typical(b)
	args := map[string]any{"query": "q", "limit": nil, "tags": nil, "filters": map[string]any{"category": "books", "since": nil, "inStock": nil}}
	b.ReportAllocs()
	for b.Loop() {
		DropNulls(s, args)
	}
}
