package storecontract

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/weft-agents/weft"
)

// CleanPath wraps weft.CleanPath with the thread and the offending path.
func CleanPath(threadID, p string) (string, error) {
	c, err := weft.CleanPath(p)
	if err != nil {
		return "", fmt.Errorf("thread %s: path %q: %w", threadID, p, err)
	}
	return c, nil
}

// FileNotFound is the ErrNotFound of a missing file or directory p of a thread.
func FileNotFound(threadID, p string) error {
	return fmt.Errorf("thread %s: file %s: %w", threadID, p, weft.ErrNotFound)
}

// CleanRemoveDir cleans the path of a RemoveDir call; the root cannot be removed (EInvalid).
func CleanRemoveDir(threadID, p string) (string, error) {
	p, err := CleanPath(threadID, p)
	if err != nil {
		return "", err
	}
	if p == "/" {
		return "", weft.Errorf(weft.EInvalid, "thread %s: cannot remove the root directory", threadID)
	}
	return p, nil
}

// CleanRename cleans both paths of a RenameFile call; the root can be neither moved nor replaced
// (EInvalid).
func CleanRename(threadID, from, to string) (string, string, error) {
	from, err := CleanPath(threadID, from)
	if err != nil {
		return "", "", err
	}
	if to, err = CleanPath(threadID, to); err != nil {
		return "", "", err
	}
	if from == "/" || to == "/" {
		return "", "", weft.Errorf(weft.EInvalid, "thread %s: cannot move the root directory", threadID)
	}
	return from, to, nil
}

// CheckRenameInto refuses (EInvalid) to move from to a target inside itself. Stores check it after
// finding that from exists and to does not, so that those errors come first.
func CheckRenameInto(threadID, from, to string) error {
	if Within(to, from) {
		return weft.Errorf(weft.EInvalid, "thread %s: cannot move %s into itself (%s)", threadID, from, to)
	}
	return nil
}

// StampWrittenFile sets the fields of f that WriteFile of data at the cleaned path p reports back:
// Path, Name, Size, IsDir (false), MimeType (detected when empty), and CreatedAt and UpdatedAt
// (now). A store replacing an existing file then restores its CreatedAt.
func StampWrittenFile(f *weft.FileInfo, p string, data []byte, now time.Time) {
	f.Path, f.Name, f.Size, f.IsDir = p, path.Base(p), int64(len(data)), false
	if f.MimeType == "" {
		f.MimeType = weft.DetectMIME(f.Name, data)
	}
	f.CreatedAt, f.UpdatedAt = now, now
}

// ParentDir returns the directory holding p ("/" for top-level entries).
func ParentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// Ancestors returns p's ancestor directories below the root, outermost first.
func Ancestors(p string) []string {
	var out []string
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return out
}

// Within reports whether p is dir or lies below it.
func Within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || (len(p) > len(dir) && p[len(dir)] == '/' && strings.HasPrefix(p, dir))
}

// CheckGlob reports a malformed glob as EInvalid (see MatchGlob).
func CheckGlob(pattern string) error {
	_, err := MatchGlob(pattern, "/")
	return err
}

// MatchGlob matches a cleaned absolute path against a glob: `*`, `?` and `[...]` Within one path
// segment (path.Match), `**` across any number of segments (zero included). A pattern without a
// leading slash is relative to the root.
func MatchGlob(pattern, p string) (bool, error) {
	pattern = strings.TrimPrefix(pattern, "/")
	ps := strings.Split(pattern, "/")
	for _, s := range ps {
		if s != "**" {
			if _, err := path.Match(s, ""); err != nil {
				return false, weft.Errorf(weft.EInvalid, "bad glob %q: %v", pattern, err)
			}
		}
	}
	return matchSegments(ps, strings.Split(strings.TrimPrefix(p, "/"), "/")), nil
}

func matchSegments(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := range segs {
				if matchSegments(pat, segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}
