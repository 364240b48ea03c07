package sqlite_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
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
	for _, f := range []string{path, filepath.Join(dir, "new", "weft.db.key")} {
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

// TestOpenDamagedDatabase: a database whose pages were damaged (a bad disk, a partial copy) is
// refused with SQLite's own diagnosis ("malformed") at Open or at the first read that reaches the
// damage, and nothing writes to it meanwhile, so that it can still be recovered from.
func TestOpenDamagedDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "weft.db")
	key := make([]byte, 32)
	st, err := sqlite.Open(ctx, path, sqlite.Options{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		th := &weft.Thread{Agent: "a", Label: strings.Repeat("label ", 200)}
		if err := st.CreateThread(ctx, th, nil); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	data, err := os.ReadFile(path)
	if err != nil || len(data) < 16<<10 {
		t.Fatalf("database of %d bytes: %v", len(data), err)
	}
	for i := len(data) / 2; i < len(data)/2+4096; i++ {
		data[i] ^= 0x5a
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// Open reads the schema and settings pages; damage elsewhere shows when a read reaches it.
	st, err = sqlite.Open(ctx, path, sqlite.Options{Key: key})
	if err == nil {
		_, _, err = st.Threads(ctx, weft.ThreadQuery{})
		st.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("a damaged database: %v", err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(after, data) {
		t.Error("the failed Open changed the damaged file")
	}
}
