package scripted

import (
	"strconv"

	yaml "go.yaml.in/yaml/v3"
)

// keyValue is one pair of a mapping.
type keyValue struct {
	key     string
	keyNode *yaml.Node
	val     *yaml.Node
}

// mapping returns the pairs of a mapping node, reporting a non-map, non-string keys and repeats.
func (p *parser) mapping(n *yaml.Node, path string) []keyValue {
	r := p.resolve(n, path)
	if r == nil {
		return nil
	}
	if r.Kind != yaml.MappingNode {
		p.fail(r, path, "want a map (got %s)", describe(r))
		return nil
	}
	out := make([]keyValue, 0, len(r.Content)/2)
	seen := make(map[string]struct{}, len(r.Content)/2)
	for i := 0; i+1 < len(r.Content); i += 2 {
		k := resolveShallow(r.Content[i])
		if k == nil || k.Kind != yaml.ScalarNode {
			p.fail(r.Content[i], path, "keys must be strings")
			continue
		}
		if _, dup := seen[k.Value]; dup {
			p.fail(k, path, "key %q is repeated", k.Value)
			continue
		}
		seen[k.Value] = struct{}{}
		out = append(out, keyValue{key: k.Value, keyNode: k, val: r.Content[i+1]})
	}
	return out
}

// resolve follows aliases; it reports (and returns nil for) broken or over-long alias chains.
func (p *parser) resolve(n *yaml.Node, path string) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i > maxDepth || n.Alias == nil {
			p.fail(n, path, "unresolvable alias")
			return nil
		}
		n = n.Alias
	}
	if n == nil {
		p.fail(nil, path, "missing value")
	}
	return n
}

func resolveShallow(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i <= maxDepth; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

// list returns the items of a sequence, or the node itself for a scalar.
func (p *parser) list(n *yaml.Node, path string) []*yaml.Node {
	r := p.resolve(n, path)
	if r == nil {
		return nil
	}
	if r.Kind == yaml.SequenceNode {
		return r.Content
	}
	return []*yaml.Node{r}
}

// strings reads a string or a list of strings; a list, even empty, gives a non-nil slice.
func (p *parser) strings(n *yaml.Node, path string) []string {
	r := p.resolve(n, path)
	if r == nil {
		return nil
	}
	if r.Kind != yaml.SequenceNode {
		if s, ok := p.str(r, path); ok {
			return []string{s}
		}
		return nil
	}
	out := make([]string, 0, len(r.Content))
	for _, c := range r.Content {
		if s, ok := p.str(c, path); ok {
			out = append(out, s)
		}
	}
	return out
}

// str reads a scalar as text; null and collections are errors.
func (p *parser) str(n *yaml.Node, path string) (string, bool) {
	r := p.resolve(n, path)
	if r == nil {
		return "", false
	}
	if r.Kind != yaml.ScalarNode || r.ShortTag() == "!!null" {
		p.fail(r, path, "want a string (got %s)", describe(r))
		return "", false
	}
	return r.Value, true
}

// text reads a scalar as text; null is the empty text.
func (p *parser) text(n *yaml.Node, path string) (string, bool) {
	if r := resolveShallow(n); r != nil && r.Kind == yaml.ScalarNode && r.ShortTag() == "!!null" {
		return "", true
	}
	return p.str(n, path)
}

// scalarValue decodes a scalar into a plain Go value (string, int64, float64, bool).
func (p *parser) scalarValue(n *yaml.Node, path string) (any, bool) {
	r := p.resolve(n, path)
	if r == nil {
		return nil, false
	}
	if r.Kind != yaml.ScalarNode {
		p.fail(r, path, "want a duration such as \"1.5s\" or milliseconds (got %s)", describe(r))
		return nil, false
	}
	switch r.ShortTag() {
	case "!!int":
		var v int64
		if r.Decode(&v) == nil {
			return v, true
		}
	case "!!float":
		var f float64
		if r.Decode(&f) == nil {
			return f, true
		}
	case "!!str":
		return r.Value, true
	}
	p.fail(r, path, "invalid duration %q (want e.g. \"30s\", \"250ms\" or milliseconds)", r.Value)
	return nil, false
}

func (p *parser) integer(n *yaml.Node, path string) (int64, bool) {
	r := p.resolve(n, path)
	if r == nil {
		return 0, false
	}
	if r.Kind == yaml.ScalarNode && r.ShortTag() == "!!int" {
		var v int64
		if r.Decode(&v) == nil {
			return v, true
		}
	}
	p.fail(r, path, "want a whole number (got %s)", describe(r))
	return 0, false
}

func (p *parser) number(n *yaml.Node, path string) (float64, bool) {
	r := p.resolve(n, path)
	if r == nil {
		return 0, false
	}
	if r.Kind == yaml.ScalarNode && (r.ShortTag() == "!!int" || r.ShortTag() == "!!float") {
		var f float64
		if r.Decode(&f) == nil {
			return f, true
		}
	}
	p.fail(r, path, "want a number (got %s)", describe(r))
	return 0, false
}

func (p *parser) boolean(n *yaml.Node, path string) (bool, bool) {
	r := p.resolve(n, path)
	if r == nil {
		return false, false
	}
	if r.Kind == yaml.ScalarNode && r.ShortTag() == "!!bool" {
		var v bool
		if r.Decode(&v) == nil {
			return v, true
		}
	}
	p.fail(r, path, "want true or false (got %s)", describe(r))
	return false, false
}

// describe names what a node is, for messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "nothing"
		case "!!str":
			return strconv.Quote(clip(n.Value, 40))
		}
		return clip(n.Value, 40)
	case yaml.AliasNode:
		return "an alias"
	}
	return "an unsupported node"
}
