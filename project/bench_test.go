package project_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/weft-agents/weft/project"
)

// BenchmarkOpen loads and validates generated projects: 1,000 definitions in all (334 prompts, 333
// tools, 333 agents) and 1,000 of each kind: the start-up cost of a large project.
func BenchmarkOpen(b *testing.B) {
	for _, n := range []int{333, 1000} {
		name := "1000_in_all"
		if n == 1000 {
			name = "1000_each"
		}
		b.Run(name, func(b *testing.B) { benchmarkOpen(b, n) })
	}
}

func benchmarkOpen(b *testing.B, n int) {
	dir := b.TempDir()
	for _, d := range []string{"models", "prompts", "agents", "tools"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	put := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	put("models/fast.yaml", "{name: fast, provider: openai, model: gpt-4o-mini, inputPrice: 0.15, outputPrice: 0.6}")
	for i := range n {
		put(fmt.Sprintf("tools/tool_%d.yaml", i), fmt.Sprintf(`kind: command
description: Tool number %d; searches something and returns JSON.
args:
  type: object
  properties:
    query: {type: string, description: Search query, minLength: 1}
    limit: {type: integer, minimum: 1, maximum: 50, default: 10}
    tags: {type: array, items: {type: string}}
    mode: {type: string, enum: [fast, thorough]}
  required: [query]
command: [echo, hello]
timeout: 10s
`, i))
		put(fmt.Sprintf("prompts/prompt_%d.yaml", i), fmt.Sprintf(`name: prompt_%d
toolDescription: Prompt number %d
model: fast
includeChat: true
prompt:
  - {type: text, content: "You are assistant %d. "}
  - {type: env, property: LANGUAGE}
tools: [tool_%d, {name: tool_%d, env: {REGION: eu}}]
variables: [{name: LANGUAGE, type: text, required: false, description: Language}]
requiredSchema: {type: object, properties: {question: {type: string}}, required: [question]}
`, i, i, i, i, (i+1)%n))
		put(fmt.Sprintf("agents/agent_%d.yaml", i), fmt.Sprintf("{name: agent_%d, type: ai_human, sideA: {prompt: prompt_%d, maxSteps: 10}}\n", i, i))
	}
	b.ResetTimer()
	for b.Loop() {
		_, diags := project.Open(dir, project.Options{})
		if diags.HasErrors() {
			b.Fatal(diags.Err())
		}
	}
}
