package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/weft-agents/weft"
)

// fromHere names each diagnostic's file by a path from the working directory, the definitions
// directory in front: with the default --dir agents, agents/assistant.yaml (relative to the
// definitions) read as ./agents/assistant.yaml, which is not the file; agents/agents/assistant.yaml
// is. validate --json keeps paths relative to the definitions directory, as documented.
func fromHere(dir string, diags weft.Diagnostics) weft.Diagnostics {
	out := make(weft.Diagnostics, len(diags))
	for i, d := range diags {
		if d.Source != "" && !filepath.IsAbs(d.Source) {
			d.Source = filepath.ToSlash(filepath.Join(dir, filepath.FromSlash(d.Source)))
		}
		out[i] = d
	}
	return out
}

// noAgent is the error for an agent name the definitions lack: the names it resembles, or every
// agent there is (a few), so the fix is in the message.
func noAgent(reg *weft.Registry, name, dir string) error {
	var names, close []string
	for _, a := range reg.Agents() {
		names = append(names, a.Name)
		if d := editDistance(strings.ToLower(name), strings.ToLower(a.Name)); d <= max(2, len(name)/3) ||
			strings.HasPrefix(strings.ToLower(a.Name), strings.ToLower(name)) {
			close = append(close, a.Name)
		}
	}
	sort.Strings(names)
	msg := fmt.Sprintf("no agent named %q in %s", name, dir)
	switch {
	case len(close) > 0:
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(quoteAll(close), " or "))
	case len(names) == 0:
		msg += " (it defines no agents: add one under agents/, see weft init)"
	}
	if len(names) > 0 {
		if len(names) > 20 {
			names = append(names[:20], "…")
		}
		msg += "; agents: " + strings.Join(names, ", ")
	}
	return exit(exitUsage, errors.New(msg))
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strconv.Quote(v)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
