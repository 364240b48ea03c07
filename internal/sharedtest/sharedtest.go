// Package sharedtest locates the project's external test data — the shared/ folder beside the
// repository that holds the seeds, the spec, the Prompty fixtures and the provider recordings — for
// tests in any package.
package sharedtest

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the shared/ folder: $WEFT_SHARED_DIR, else the first shared/ found walking up from
// the working directory. When it is missing the test is skipped with instructions — except under CI
// (CI set), where it fails, so a check is never silently dropped there.
func Dir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("WEFT_SHARED_DIR"); d != "" {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("WEFT_SHARED_DIR=%s: %v", d, err)
		}
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		cand := filepath.Join(dir, "shared")
		if info, err := os.Stat(filepath.Join(cand, "spec")); err == nil && info.IsDir() {
			return cand
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("shared/ test data not found beside the repository (set WEFT_SHARED_DIR)")
	}
	t.Skip("shared/ test data not found: set WEFT_SHARED_DIR to the shared/ folder to run this test")
	return ""
}

// Path returns a path inside the shared/ folder.
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	return filepath.Join(append([]string{Dir(t)}, elem...)...)
}
