package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/weft-agents/weft/sqlite"
)

// TestOpenFiles: a new database is created 0600 like its key; an Open that fails (a file that is
// not a database) leaves no key file and no database behind.
func TestOpenFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "new", "weft.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	for _, f := range []string{path, filepath.Join(dir, "new", "weft.key")} {
		fi, err := os.Stat(f)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", filepath.Base(f), fi.Mode().Perm(), err)
		}
	}

	bad := filepath.Join(dir, "bad")
	os.MkdirAll(bad, 0o700)
	os.WriteFile(filepath.Join(bad, "weft.db"), []byte("not a database at all, but long enough to be read as a header......"), 0o600)
	if _, err := sqlite.Open(ctx, filepath.Join(bad, "weft.db"), sqlite.Options{}); err == nil {
		t.Fatal("a corrupt file opened")
	}
	entries, _ := os.ReadDir(bad)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("a failed open left %v", names)
	}
}
