package tmpl

import (
	"strings"
	"testing"
)

// benchInputs are the 10 inputs of the render benchmarks.
func benchInputs() map[string]any {
	return map[string]any{
		"assistant_name": "Weft",
		"user_name":      "Ada Lovelace",
		"company":        "Analytical Engines Ltd",
		"question":       "How do I configure the loom for a new pattern without losing the old cards?",
		"premium":        true,
		"language":       "English",
		"tone":           "friendly",
		"max_items":      5,
		"profile":        map[string]any{"email": "ada@example.com", "plan": "gold", "since": 2019},
		"documents": []any{
			map[string]any{"title": "Loom manual", "content": "Chapter 3 describes how punched cards are chained and stored between runs."},
			map[string]any{"title": "Card catalogue", "content": "Each pattern has a catalogue number; keep the deck labelled and boxed."},
			map[string]any{"title": "FAQ", "content": "Swapping decks does not erase anything; decks are physical and reusable."},
			map[string]any{"title": "Warranty", "content": "Gold plan customers receive priority support for mechanical issues."},
			map[string]any{"title": "Release notes", "content": "Version 2 adds a card counter and a jam detector to the reader."},
		},
	}
}

// benchBody is shared prose that pads both benchmark templates to about 2 KB.
const benchBody = `You are a careful support assistant for a company that builds programmable looms.
Answer with short paragraphs. Prefer concrete steps over general advice, cite the documents you
used by title, and say so plainly when the documents do not answer the question. Never invent part
numbers, prices or delivery dates. If the customer seems frustrated, acknowledge it once and move on
to the fix. Keep answers under two hundred words unless the customer asks for more detail.
When a question mixes several problems, answer them in the order the customer raised them and
number the answers. Quote error messages exactly as the customer wrote them. Do not ask for the
serial number unless a repair is needed; never ask for payment details. Close with one sentence
that says what the customer should do next, and offer to stay in the conversation.

# Policies
- Refunds: within thirty days of delivery, for unused machines in their original crates only.
- Repairs: mechanical faults are covered for two years; damage from misuse is not covered.
- Shipping: looms ship by freight; delivery windows are agreed with the carrier, not with support.
- Privacy: never repeat the customer's address, phone number or email back in full.
- Escalation: hand over to a human when the customer asks twice or mentions a safety problem.
- Scope: questions about competitors' machines are out of scope; say so politely and stop.
`

const benchJinja = `system:
You are {{ assistant_name }}, the assistant of {{ company }}.
` + benchBody + `Reply in {{ language }} with a {{ tone | lower }} tone.
{% if premium %}The customer is on the {{ profile.plan | upper }} plan (since {{ profile.since }}): offer a callback.
{% else %}The customer is on the free plan.
{% endif %}
# Documents
{% for doc in documents %}
## {{ loop.index }}. {{ doc.title }}
{{ doc.content }}
{% if loop.last %}(end of documents){% endif %}
{% endfor %}

user:
My name is {{ user_name }} ({{ profile.email }}). I have a question.

assistant:
Hello {{ user_name }}! What would you like to know?

user:
{{ question }}
`

const benchMustache = `system:
You are {{assistant_name}}, the assistant of {{company}}.
` + benchBody + `Reply in {{language}} with a {{tone}} tone.
{{#premium}}
The customer is on the {{profile.plan}} plan (since {{profile.since}}): offer a callback.
{{/premium}}
{{^premium}}
The customer is on the free plan.
{{/premium}}

# Documents
{{#documents}}
## {{title}}
{{content}}

{{/documents}}
(end of documents)

user:
My name is {{user_name}} ({{profile.email}}). I have a question.

assistant:
Hello {{user_name}}! What would you like to know?

user:
{{question}}
`

func benchmarkRender(b *testing.B, src string, tp Template, err error) {
	if n := len(src); n < 1900 || n > 2300 {
		b.Fatalf("benchmark template is %d bytes, want about 2 KB", n)
	}
	if err != nil {
		b.Fatal(err)
	}
	in := benchInputs()
	strict := map[string]bool{"question": true}
	segs, err := tp.Render(in, strict)
	if err != nil {
		b.Fatal(err)
	}
	out := Join(segs)
	if strings.Contains(out, "{{") || !strings.Contains(out, "Release notes") {
		b.Fatalf("unexpected output :\n%s", out)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := tp.Render(in, strict); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRenderJinja(b *testing.B) {
	tp, err := CompileJinja(benchJinja)
	benchmarkRender(b, benchJinja, tp, err)
}

func BenchmarkRenderMustache(b *testing.B) {
	tp, err := CompileMustache(benchMustache)
	benchmarkRender(b, benchMustache, tp, err)
}

func BenchmarkCompileJinja(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CompileJinja(benchJinja); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompileMustache(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CompileMustache(benchMustache); err != nil {
			b.Fatal(err)
		}
	}
}

// TestConcurrentRender renders one compiled template of each engine from several goroutines (run
// with -race).
func TestConcurrentRender(t *testing.T) {
	jt, err := CompileJinja(benchJinja)
	if err != nil {
		t.Fatal(err)
	}
	mt, err := CompileMustache(benchMustache)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	for i := 0; i < 8; i++ {
		go func() {
			var err error
			for k := 0; k < 50 && err == nil; k++ {
				for _, tp := range []Template{jt, mt} {
					if _, e := tp.Render(benchInputs(), map[string]bool{"question": true}); e != nil {
						err = e
					}
				}
			}
			done <- err
		}()
	}
	for i := 0; i < 8; i++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
