package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// dotenvVar is one NAME=value line of a dotenv file.
type dotenvVar struct{ name, value string }

// parseDotenv reads a dotenv file: NAME=value lines, blank lines and # comments, an optional
// `export ` before the name, a value optionally in single or double quotes (kept verbatim inside
// them). name is the file's name for errors, which give its line and never a value. Names are
// checked by the caller: thread variables and process variables have different rules.
func parseDotenv(name string, data []byte) ([]dotenvVar, error) {
	var vars []dotenvVar
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok {
			return nil, fmt.Errorf("%s:%d: want NAME=value", name, i+1)
		}
		if k == "" {
			return nil, fmt.Errorf("%s:%d: want NAME=value (the name is empty)", name, i+1)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			v = v[1 : len(v)-1]
		}
		vars = append(vars, dotenvVar{k, v})
	}
	return vars, nil
}

func validEnvName(k string) bool {
	if k == "" || k[0] >= '0' && k[0] <= '9' {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// loadProjectDotenv reads the .env file of the project whose definitions directory is defsDir: the
// file beside that directory (the project root `weft init` makes, where .env.example is), and sets
// each variable the process's environment does not already have — set, even to "", the real
// environment wins. A missing file is no error.
func loadProjectDotenv(defsDir string) error {
	abs, err := filepath.Abs(defsDir)
	if err != nil {
		return nil
	}
	path := filepath.Join(filepath.Dir(abs), ".env")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return exit(exitUsage, fmt.Errorf("%s: %w", path, unwrapPath(err)))
	}
	vars, err := parseDotenv(path, data)
	if err != nil {
		return exit(exitUsage, err)
	}
	for i, v := range vars {
		if !validEnvName(v.name) {
			return exit(exitUsage, fmt.Errorf("%s: variable %d: %q is not an environment variable name (letters, digits and _, not starting with a digit)", path, i+1, v.name))
		}
	}
	for _, v := range vars {
		if _, set := os.LookupEnv(v.name); !set {
			os.Setenv(v.name, v.value)
		}
	}
	return nil
}

// dirArg is the definitions directory args name with --dir, else WEFT_DIR, else ./agents: what
// the --dir flag will hold, known before the flags are parsed.
func dirArg(args []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--dir="); ok {
			return v
		}
		if a == "--dir" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return envOr("WEFT_DIR", "agents")
}
