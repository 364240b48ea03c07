package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnavailable: a full database (SQLite's own SQLITE_FULL, here from max_page_count) and a
// lock held past the busy timeout are unavailable, whether wrapped or only as text; a constraint
// failure or a syntax error is not (issue 47, row 10).
func TestUnavailable(t *testing.T) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "full.db")+"?_pragma=max_page_count(8)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE t (v TEXT UNIQUE)"); err != nil {
		t.Fatal(err)
	}
	var full error
	for i := 0; full == nil && i < 1000; i++ {
		_, full = db.Exec("INSERT INTO t VALUES (?)", fmt.Sprint(i, strings.Repeat("x", 2000)))
	}
	if full == nil || !strings.Contains(full.Error(), "full") {
		t.Fatalf("the database never filled: %v", full)
	}
	_, dup := db.Exec("INSERT INTO t VALUES ('0" + strings.Repeat("x", 2000) + "')")
	_, syntax := db.Exec("INSERT INTO")
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"full", full, true},
		{"full wrapped", fmt.Errorf("sqlite: append: %w", full), true},
		{"full as text", errors.New("sqlite: begin run: " + full.Error()), true},
		{"locked as text", errors.New("database is locked (5) (SQLITE_BUSY)"), true},
		{"unique", dup, false},
		{"syntax", syntax, false},
		{"nil", nil, false},
	}
	for _, c := range cases {
		if c.name != "nil" && c.err == nil {
			t.Fatalf("%s: no error", c.name)
		}
		if got := unavailable(c.err); got != c.want {
			t.Errorf("%s (%v): %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
