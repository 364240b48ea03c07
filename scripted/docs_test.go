package scripted

import (
	"os"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// TestDocsPage: docs/model-scripts.md names every key of the script format (those of
// testdata/full.script.yaml, which uses them all) and each of its YAML examples parses.
func TestDocsPage(t *testing.T) {
	doc, err := os.ReadFile("../docs/model-scripts.md")
	if err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile("testdata/full.script.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(full, &root); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				keys[n.Content[i].Value] = true
			}
		}
		for i, c := range n.Content {
			// Tool call arguments are the tool's own keys, not the format's.
			if n.Kind == yaml.MappingNode && i%2 == 1 && n.Content[i-1].Value == "arguments" {
				continue
			}
			walk(c)
		}
	}
	walk(&root)
	if len(keys) < 40 {
		t.Fatalf("only %d keys found in the full script", len(keys))
	}
	for k := range keys {
		if !strings.Contains(string(doc), "`"+k+"`") {
			t.Errorf("docs/model-scripts.md does not name `%s`", k)
		}
	}
	blocks := strings.Split(string(doc), "```yaml\n")[1:]
	if len(blocks) < 4 {
		t.Fatalf("%d YAML examples", len(blocks))
	}
	for i, b := range blocks {
		b, _, _ = strings.Cut(b, "```")
		if _, err := Parse("example", []byte(b)); err != nil {
			t.Errorf("example %d: %v\n%s", i+1, err, b)
		}
	}
}
