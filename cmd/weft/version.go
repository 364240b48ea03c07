package main

import (
	"runtime/debug"
	"strings"
)

// version is this binary's version: the module version (a tag when installed with go install
// module@version, "(devel)" for a build from a checkout) and the VCS commit it was built from.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev != "" && !strings.Contains(v, rev[:min(12, len(rev))]) {
		v += " (commit " + rev[:min(12, len(rev))] + modified + ")"
	}
	return v
}
