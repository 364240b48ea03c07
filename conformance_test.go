package weft_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/weft-agents/weft/internal/sharedtest"
)

// pendingRules are conformance rules whose capability has not landed yet, with the issue that
// brings it. A rule leaves this list in the change that adds its test.
var pendingRules = map[string]string{}

// TestConformanceCoverage checks that every rule ID of spec/conformance.md is carried by a test
// name somewhere in the module, or is listed as pending with the issue that will bring it.
func TestConformanceCoverage(t *testing.T) {
	spec, err := os.ReadFile(sharedtest.Path(t, "spec", "conformance.md"))
	if err != nil {
		t.Fatal(err)
	}
	ids := regexp.MustCompile(`(?m)^\| (S00\d_[0-9A-Za-z_]+) \|`).FindAllStringSubmatch(string(spec), -1)
	if len(ids) < 50 {
		t.Fatalf("found only %d rule IDs in conformance.md", len(ids))
	}
	var tests strings.Builder
	_ = filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, "_test.go") && p != "conformance_test.go" {
			b, _ := os.ReadFile(p)
			tests.Write(b)
		}
		return nil
	})
	// An ID counts when it names a test: a Test function, or a string that starts with the ID (a
	// subtest name, directly or through a table).
	names := regexp.MustCompile(`func (Test\w+)|t\.Run\("([^"]+)"|"(S00\d_[^"]+)"`).FindAllStringSubmatch(tests.String(), -1)
	var all strings.Builder
	for _, n := range names {
		all.WriteString(n[1] + n[2] + n[3] + "\n")
	}
	var missing, stale []string
	for _, m := range ids {
		id := m[1]
		covered := strings.Contains(all.String(), id)
		_, pending := pendingRules[id]
		switch {
		case !covered && !pending:
			missing = append(missing, id)
		case covered && pending:
			stale = append(stale, id)
		}
	}
	slices.Sort(missing)
	slices.Sort(stale)
	if len(missing) > 0 {
		t.Errorf("rules without a test: %s", strings.Join(missing, ", "))
	}
	if len(stale) > 0 {
		t.Errorf("rules now tested; remove them from pendingRules: %s", strings.Join(stale, ", "))
	}
}
