package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseDotenv(t *testing.T) {
	tests := []struct {
		name, in string
		want     []dotenvVar
		err      string
	}{
		{"empty", "", nil, ""},
		{"comments_and_blanks", "# keys\n\n  # more\n", nil, ""},
		{"plain", "A=1\nB = two \n", []dotenvVar{{"A", "1"}, {"B", "two"}}, ""},
		{"export", "export OPENAI_API_KEY=sk-x\n", []dotenvVar{{"OPENAI_API_KEY", "sk-x"}}, ""},
		{"quotes", "A=\"a b\"\nB='c # d'\nC=\"\n", []dotenvVar{{"A", "a b"}, {"B", "c # d"}, {"C", "\""}}, ""},
		{"empty_value", "OPENAI_API_KEY=\n", []dotenvVar{{"OPENAI_API_KEY", ""}}, ""},
		{"equals_in_value", "URL=http://h/?a=b\n", []dotenvVar{{"URL", "http://h/?a=b"}}, ""},
		{"crlf", "A=1\r\nB=2\r\n", []dotenvVar{{"A", "1"}, {"B", "2"}}, ""},
		{"no_equals", "A=1\nsecretvalue\n", nil, ".env:2: want NAME=value"},
		{"empty_name", "=x\n", nil, ".env:1: want NAME=value (the name is empty)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseDotenv(".env", []byte(tc.in))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "secretvalue") {
					t.Errorf("the error shows the line: %v", err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func FuzzParseDotenv(f *testing.F) {
	for _, s := range []string{"A=1\n", "export B='x'\n# c\n", "=\n", "A\n", "A=\"\n", "\r\n\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		vars, err := parseDotenv(".env", []byte(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), ".env:") {
				t.Fatalf("error without its file and line: %v", err)
			}
			return
		}
		for _, v := range vars {
			if v.name == "" || strings.ContainsAny(v.name, "=\n") || strings.Contains(v.value, "\n") {
				t.Fatalf("bad variable %q from %q", v, in)
			}
			if utf8.ValidString(in) && !utf8.ValidString(v.name+v.value) {
				t.Fatalf("invalid UTF-8 out of valid input %q", in)
			}
		}
	})
}

func TestDirArg(t *testing.T) {
	t.Setenv("WEFT_DIR", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "a", "hi"}, "agents"},
		{[]string{"run", "--dir", "x/agents", "a"}, "x/agents"},
		{[]string{"--dir=y", "validate"}, "y"},
		{[]string{"run", "a", "--", "--dir", "z"}, "agents"},
		{[]string{"validate", "--dir"}, "agents"},
	} {
		if got := dirArg(tc.args); got != tc.want {
			t.Errorf("dirArg(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
	t.Setenv("WEFT_DIR", "from/env")
	if got := dirArg([]string{"run"}); got != "from/env" {
		t.Errorf("with WEFT_DIR: %q", got)
	}
}

// TestProjectDotenv: the .env beside the definitions directory is read (so the scaffold's
// ".env.example: copy to .env" holds), a variable of the real environment is never overridden,
// and a broken line is reported with the file and line, not its value.
func TestProjectDotenv(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	if _, errOut, code := runWeft(t, t.TempDir(), "init", dir); code != 0 {
		t.Fatal(errOut)
	}
	writeFiles(t, dir, map[string]string{
		".env":                  "# from .env\nexport WEFT_MODEL_SCRIPT=\"" + filepath.Join(dir, "examples", "hello.script.yaml") + "\"\n",
		"examples/other.yaml":   "- text: the environment's script answered\n",
		"elsewhere/placeholder": "",
	})
	out, errOut, code := runWeft(t, dir, "run", "assistant", "What time is it?")
	if code != 0 || !strings.Contains(out, "I asked the current_time tool") {
		t.Fatalf(".env's WEFT_MODEL_SCRIPT not used: exit %d\n%s%s", code, out, errOut)
	}
	// From another directory, --dir finds the same project and its .env.
	out, errOut, code = runWeft(t, filepath.Join(dir, "elsewhere"), "run", "--dir", "../agents", "assistant", "What time is it?", "--db", ":memory:")
	if code != 0 || !strings.Contains(out, "I asked the current_time tool") {
		t.Fatalf("--dir ../agents: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runWeftEnv(t, dir, []string{"WEFT_MODEL_SCRIPT=examples/other.yaml"}, "run", "assistant", "What time is it?")
	if code != 0 || strings.TrimSpace(out) != "the environment's script answered" {
		t.Fatalf("the real environment must win: exit %d\n%s%s", code, out, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("OPENAI_API_KEY=sk-1\nsk-secret-line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runWeft(t, dir, "validate")
	if code != exitUsage || !strings.Contains(errOut, ".env:2: want NAME=value") || strings.Contains(errOut, "sk-") {
		t.Fatalf("broken .env: exit %d: %s", code, errOut)
	}
}
