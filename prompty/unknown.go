package prompty

// isMetadataField reports the top-level keys Prompty files carry as descriptive metadata (v1's
// authors, version, tags, a base file, a $schema): kept in Metadata, never reported as unknown.
func isMetadataField(k string) bool {
	switch k {
	case "$schema", "id", "version", "authors", "tags", "base", "kind":
		return true
	}
	return false
}

// knownKeys are the top-level keys a front matter may use, for ClosestKey.
var knownKeys = []string{"name", "description", "toolDescription", "model", "inputs", "outputs", "tools", "template",
	"dialect", "metadata", "sample", "includeChat", "includePastTools", "toolChoice", "variables", "env", "tenvs",
	"reasoning", "hooks", "recentImageThreshold", "exposeAsTool", "parallelToolCalls", "requiredSchema", "modelOptions",
	"$schema", "id", "version", "authors", "tags", "base", "kind"}

// ClosestKey returns the known top-level key nearest to k (by edit distance, case ignored), or ""
// when none is within a third of k's length (at least 2 edits): `modle` gives `model`.
func ClosestKey(k string) string {
	best, bestD := "", max(2, len(k)/3)+1
	for _, c := range knownKeys {
		if d := editDistance(lower(k), lower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// editDistance is the Damerau–Levenshtein distance (optimal string alignment) of a and b in
// bytes: a swap of two neighbours (modle, model) counts as one edit.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return max(len(a), len(b))
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
