package storecontract

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"regexp"

	"github.com/weft-agents/weft"
)

// DefaultGrepResults is the most matches a Grep returns when weft.GrepOptions.MaxResults is not
// positive.
const DefaultGrepResults = 100

// GrepPlan is a Grep call with its arguments checked and defaulted; a store picks the text files
// Selects accepts, in path order, and runs Search on each until it reports the result full.
type GrepPlan struct {
	Pattern *regexp.Regexp // the RE2 pattern, case-insensitive when IgnoreCase was set
	Prefix  string         // the cleaned path the search is limited to ("/" for all)
	Glob    string         // the glob paths must match ("" for any); checked
	Max     int            // the most matches returned
}

// PlanGrep checks and defaults the arguments of Grep, in this order: the pattern (EInvalid when it
// does not compile), the Path prefix (cleaned as by CleanPath), the Glob (EInvalid when malformed)
// and MaxResults (DefaultGrepResults when not positive).
func PlanGrep(threadID, pattern string, o weft.GrepOptions) (*GrepPlan, error) {
	if o.IgnoreCase {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, weft.Errorf(weft.EInvalid, "thread %s: grep pattern: %v", threadID, err)
	}
	g := &GrepPlan{Pattern: re, Prefix: "/", Glob: o.Glob, Max: o.MaxResults}
	if o.Path != "" {
		if g.Prefix, err = CleanPath(threadID, o.Path); err != nil {
			return nil, err
		}
	}
	if g.Glob != "" {
		if err := CheckGlob(g.Glob); err != nil {
			return nil, err
		}
	}
	if g.Max <= 0 {
		g.Max = DefaultGrepResults
	}
	return g, nil
}

// Selects reports whether the file at p (a cleaned path) is searched: it is Prefix or lies below
// it, and it matches Glob when one is set.
func (g *GrepPlan) Selects(p string) bool {
	if !Within(p, g.Prefix) {
		return false
	}
	if g.Glob == "" {
		return true
	}
	ok, _ := MatchGlob(g.Glob, p)
	return ok
}

// Search appends the lines of r, the contents of the file at p, that match Pattern to out (1-based
// line numbers, trailing CR dropped) until out holds Max matches; it reports whether it does.
func (g *GrepPlan) Search(p string, r io.Reader, out *[]weft.GrepMatch) (bool, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) { // a long line: collect it whole
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			l := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			if g.Pattern.Match(l) {
				*out = append(*out, weft.GrepMatch{Path: p, Line: n, Text: string(l)})
				if len(*out) >= g.Max {
					return true, nil
				}
			}
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}
