package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// summary gathers a run's events: each test's output (kept until it passes, fails or skips) and
// the skips with their reasons.
type summary struct {
	output map[string][]string // by package + "\x00" + test
	skips  map[string][]string // reason → "package.Test"
	failed bool
}

func newSummary() *summary {
	return &summary{output: map[string][]string{}, skips: map[string][]string{}}
}

// add takes one line of input: it prints what plain go test would and records skips.
func (s *summary) add(line []byte, w io.Writer) {
	var e event
	if json.Unmarshal(line, &e) != nil || e.Action == "" {
		// A build error or anything else that is not an event is passed through.
		fmt.Fprintf(w, "%s\n", line)
		return
	}
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "output":
		s.output[key] = append(s.output[key], e.Output)
	case "skip":
		if e.Test != "" {
			// A suite's subtests skip one by one; the line names the suite once.
			reason, name := skipReason(s.output[key]), shortPkg(e.Package)+"."+strings.SplitN(e.Test, "/", 2)[0]
			if !slices.Contains(s.skips[reason], name) {
				s.skips[reason] = append(s.skips[reason], name)
			}
		}
		delete(s.output, key)
	case "pass":
		if e.Test == "" {
			fmt.Fprintf(w, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
		}
		delete(s.output, key)
	case "fail":
		s.failed = true
		if e.Test != "" {
			fmt.Fprint(w, strings.Join(s.output[key], ""))
		} else {
			fmt.Fprint(w, strings.Join(s.output[key], ""))
			fmt.Fprintf(w, "FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
		}
		delete(s.output, key)
	}
}

// skipReason is the message a skipped test gave (t.Skip's text), without go test's framing.
func skipReason(out []string) string {
	for _, o := range out {
		o = strings.TrimSpace(o)
		if strings.HasPrefix(o, "--- SKIP") || strings.HasPrefix(o, "=== ") || o == "" {
			continue
		}
		// "file_test.go:12: reason"
		if i := strings.Index(o, ": "); i > 0 && strings.Contains(o[:i], ".go:") {
			o = o[i+2:]
		}
		if len(o) > 200 {
			o = o[:200] + "…"
		}
		return o
	}
	return "no reason given"
}

func shortPkg(p string) string {
	if i := strings.Index(p, "/weft/"); i >= 0 {
		return p[i+len("/weft/"):]
	}
	if strings.HasSuffix(p, "/weft") {
		return "weft"
	}
	return p
}

// skipLine is the one line naming every skipped test, grouped by reason, most tests first; ""
// when nothing skipped.
func (s *summary) skipLine() string {
	if len(s.skips) == 0 {
		return ""
	}
	reasons := make([]string, 0, len(s.skips))
	total := 0
	for r, tests := range s.skips {
		reasons = append(reasons, r)
		total += len(tests)
	}
	sort.Slice(reasons, func(i, j int) bool {
		a, b := len(s.skips[reasons[i]]), len(s.skips[reasons[j]])
		return a > b || a == b && reasons[i] < reasons[j]
	})
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		tests := s.skips[r]
		sort.Strings(tests)
		names := strings.Join(tests[:min(3, len(tests))], ", ")
		if len(tests) > 3 {
			names += fmt.Sprintf(" and %d more", len(tests)-3)
		}
		parts[i] = fmt.Sprintf("%s (%s)", names, r)
	}
	return fmt.Sprintf("SKIPPED %d suites: %s", total, strings.Join(parts, "; "))
}
