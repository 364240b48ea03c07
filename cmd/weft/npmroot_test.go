package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// npmPackages is where .ci/run installed testdata/npm-NAME/package.json: $WEFT_TEST_NPM_ROOT/npm-NAME.
// Unset skips the test (saying how to run it); set but missing fails it.
func npmPackages(t *testing.T, name string, probe string) string {
	t.Helper()
	root := os.Getenv("WEFT_TEST_NPM_ROOT")
	if root == "" {
		t.Skipf("WEFT_TEST_NPM_ROOT is unset: install testdata/npm-%s/package.json as .ci/run does (into .ci/npm-%s) and set WEFT_TEST_NPM_ROOT=<checkout>/.ci to run this test against the real npm client", name, name)
	}
	dir := filepath.Join(root, "npm-"+name)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", probe, "package.json")); err != nil {
		t.Fatalf("WEFT_TEST_NPM_ROOT=%s is set but npm-%s is not installed there: %v", root, name, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("WEFT_TEST_NPM_ROOT is set but node is not in PATH: %v", err)
	}
	return dir
}

// runNode runs a script of testdata/npm-NAME with args and returns its standard output.
func runNode(t *testing.T, name, script string, args ...string) []byte {
	t.Helper()
	repoRoot, _ := filepath.Abs("../..")
	cmd := exec.Command("node", append([]string{filepath.Join(repoRoot, "testdata", "npm-"+name, script)}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node %s: %v\n%s\n%s", script, err, out, stderr)
	}
	return out
}
