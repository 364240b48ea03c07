package weft

import (
	"fmt"
	"regexp"
	"strings"
)

// VarType is the type of a variable: text, or secret (encrypted at rest and redacted everywhere).
type VarType string

// The variable types.
const (
	VarText   VarType = "text"
	VarSecret VarType = "secret"
)

// VariableDefinition declares a variable a prompt or tool reads.
type VariableDefinition struct {
	// Name of the variable.
	Name string `json:"name"`
	// Type is text or secret.
	Type VarType `json:"type"`
	// Required: thread creation fails while no value resolves.
	Required bool `json:"required"`
	// Scoped blocks inheritance of this name from ancestor threads.
	Scoped bool `json:"scoped,omitempty"`
	// Description tells people what to provide.
	Description string `json:"description"`
}

// envRefPattern matches ${env:NAME} and ${env:NAME:default}.
var envRefPattern = regexp.MustCompile(`\$\{env:([^}:]*)(?::([^}]*))?\}`)

// EnvRefs returns the variable names the ${env:NAME} and ${env:NAME:default} references in s
// read, in order (repeats included).
func EnvRefs(s string) []string {
	var out []string
	for _, m := range envRefPattern.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// ExpandEnv replaces each ${env:NAME} in s by lookup(NAME), and ${env:NAME:default} by the
// default when NAME is not set. A reference to a variable that is not set and has no default is an
// error naming it (the other references are still replaced, the missing one by nothing), as is
// lookup's own error.
func ExpandEnv(s string, lookup func(name string) (string, bool, error)) (string, error) {
	if !strings.Contains(s, "${env:") {
		return s, nil
	}
	var firstErr error
	out := envRefPattern.ReplaceAllStringFunc(s, func(m string) string {
		sub := envRefPattern.FindStringSubmatch(m)
		val, ok, err := lookup(sub[1])
		switch {
		case err != nil:
			if firstErr == nil {
				firstErr = err
			}
		case ok:
			return val
		case sub[2] != "":
			return sub[2]
		default:
			if firstErr == nil {
				firstErr = fmt.Errorf("variable %s is not set", sub[1])
			}
		}
		return ""
	})
	return out, firstErr
}
