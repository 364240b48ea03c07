package sqlite

import (
	"errors"
	"strings"
	"syscall"

	msqlite "modernc.org/sqlite"
)

// SQLite's primary result codes that say the database cannot take the request now, though it
// may later: busy or locked past the busy timeout, out of memory, an I/O error, a full disk, a
// file it cannot open.
const (
	sqliteBusy     = 5
	sqliteLocked   = 6
	sqliteNoMem    = 7
	sqliteIOErr    = 10
	sqliteFull     = 13
	sqliteCantOpen = 14
)

// Unavailable reports whether err says that the database is unavailable for now (a full disk, a
// lock held past the busy timeout, an I/O error), rather than that the request failed: the API
// answers it 503 with Retry-After (weft.UnavailableTeller).
func (s *Store) Unavailable(err error) bool { return unavailable(err) }

func unavailable(err error) bool {
	if err == nil {
		return false
	}
	var se *msqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqliteBusy, sqliteLocked, sqliteNoMem, sqliteIOErr, sqliteFull, sqliteCantOpen:
			return true
		}
		return false
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EIO) {
		return true
	}
	// Errors that reached here as text (formatted without %w) keep SQLite's words.
	msg := err.Error()
	for _, s := range []string{"database or disk is full", "database is locked", "disk I/O error", "no space left on device", "SQLITE_FULL", "SQLITE_BUSY"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
