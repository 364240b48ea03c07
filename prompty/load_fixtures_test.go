package prompty

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// fileView is the v2 loader's object as far as Weft's File carries it, for partial comparison with
// vectors_load.json.
func fileView(f *File) map[string]any {
	v := map[string]any{
		// Weft's File has no kind: a .prompty file is always a prompt.
		"kind":         "prompt",
		"name":         f.Name,
		"description":  f.Description,
		"instructions": strings.TrimRight(f.Body, "\n"),
		"template":     map[string]any{"format": map[string]any{"kind": f.Engine}, "parser": map[string]any{"kind": "prompty"}},
	}
	if f.Metadata != nil {
		v["metadata"] = f.Metadata
	}
	switch {
	case f.ModelRef != nil:
		m := map[string]any{"id": f.ModelRef.ID}
		if f.ModelRef.Provider != "" {
			m["provider"] = f.ModelRef.Provider
		}
		if f.ModelRef.APIType != "" {
			m["apiType"] = f.ModelRef.APIType
		}
		if f.ModelRef.Connection != nil {
			m["connection"] = f.ModelRef.Connection.Raw
		}
		if f.ModelRef.Options != nil {
			m["options"] = f.ModelOptions
		}
		v["model"] = m
	case f.Model != "":
		v["model"] = map[string]any{"id": f.Model}
	}
	if f.Inputs != nil {
		var ins []any
		for _, in := range f.Inputs {
			m := map[string]any{"name": in.Name, "kind": in.Kind}
			if in.HasDefault {
				m["default"] = in.Default
			}
			if in.Description != "" {
				m["description"] = in.Description
			}
			if in.Required {
				m["required"] = true
			}
			ins = append(ins, m)
		}
		v["inputs"] = ins
	}
	if f.Tools != nil {
		v["tools"] = f.Tools
	}
	if f.Outputs != nil {
		v["outputs"] = f.Outputs
	}
	return v
}

// partialMatch reports where got differs from the expected subset want ("" when it matches).
func partialMatch(path string, got, want any) string {
	switch w := want.(type) {
	case nil:
		if got != nil {
			return fmt.Sprintf("%s: got %v, want null", path, got)
		}
		return ""
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: got %v, want a mapping", path, got)
		}
		for k, wv := range w {
			if d := partialMatch(path+"."+k, g[k], wv); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: got %v, want %v", path, got, w)
		}
		for i := range w {
			if d := partialMatch(fmt.Sprintf("%s[%d]", path, i), g[i], w[i]); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("%s: got %v, want %v", path, got, want)
	}
	return ""
}

// applySchema fills defaults and checks required properties of InputSchema, as the schema package
// does, for the input_validation_* vectors.
func applySchema(schema map[string]any, args map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range args {
		out[k] = v
	}
	props, _ := schema["properties"].(map[string]any)
	for name, p := range props {
		if d, ok := p.(map[string]any)["default"]; ok {
			if _, has := out[name]; !has {
				out[name] = d
			}
		}
	}
	req, _ := schema["required"].([]any)
	for _, r := range req {
		if _, ok := out[r.(string)]; !ok {
			return nil, fmt.Errorf("Missing required input: %s", r)
		}
	}
	return out, nil
}

func mapEnv(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

// TestVectorsLoad runs derived/vectors_load.json (both dialects).
func TestVectorsLoad(t *testing.T) {
	root := sharedDir(t)
	var f struct {
		Vectors []struct {
			Name  string
			Input struct {
				Fixture        string
				Env            map[string]string
				Frontmatter    map[string]any
				FrontmatterRaw string `json:"frontmatter_raw"`
				Files          map[string]any
				AgentSubdir    string `json:"agent_subdir"`
				Inputs         map[string]any
			}
			Expected map[string]any
		}
	}
	readJSON(t, filepath.Join(root, "derived/vectors_load.json"), &f)
	fixtures := filepath.Join(root, "microsoft-prompty@main/spec/fixtures")
	pass, total := 0, 0
	for _, v := range f.Vectors {
		for _, dialect := range []string{DialectSeed, DialectV2} {
			total++
			t.Run(v.Name+"/"+dialect, func(t *testing.T) {
				in := v.Input
				path := filepath.Join(fixtures, in.Fixture)
				if in.Fixture == "" {
					dir := filepath.Join(t.TempDir(), "root")
					adir := filepath.Join(dir, in.AgentSubdir)
					if err := os.MkdirAll(adir, 0o755); err != nil {
						t.Fatal(err)
					}
					for name, content := range in.Files {
						data, _ := json.Marshal(content)
						p := filepath.Join(adir, filepath.FromSlash(name))
						_ = os.MkdirAll(filepath.Dir(p), 0o755)
						if err := os.WriteFile(p, data, 0o644); err != nil {
							t.Fatal(err)
						}
					}
					text := in.FrontmatterRaw
					if text == "" {
						fm, _ := json.Marshal(in.Frontmatter)
						text = "---\n" + string(fm) + "\n---\n"
					}
					path = filepath.Join(adir, "test.prompty")
					if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				file, err := Load(path, Options{Dialect: dialect, LookupEnv: mapEnv(in.Env)})
				if v.Name == "template_string_invalid" {
					// Waiver: Weft accepts the v1 string form of `template`.
					if err != nil || file.Engine != "jinja2" {
						t.Fatalf("want the v1 string form accepted, got %v", err)
					}
					pass++
					return
				}
				if want, ok := v.Expected["error"].(string); ok && strings.HasPrefix(v.Name, "input_validation") {
					// Validation of arguments is the schema package's: the file loads
					// and its InputSchema makes the argument required.
					if err != nil {
						t.Fatal(err)
					}
					if _, err := applySchema(file.InputSchema, in.Inputs); err == nil || !strings.Contains(err.Error(), want) ||
						!strings.Contains(err.Error(), v.Expected["error_field"].(string)) {
						t.Fatalf("want %s %v, got %v", want, v.Expected["error_field"], err)
					}
					pass++
					return
				}
				if want, ok := v.Expected["error"].(string); ok {
					if err == nil {
						t.Fatalf("want error %q, loaded", want)
					}
					var pe *Error
					if !errors.As(err, &pe) || pe.File == "" {
						t.Errorf("error %v is not a *Error naming the file", err)
					}
					switch want {
					case "FileNotFoundError":
						if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "not found") {
							t.Errorf("want not found, got %v", err)
						}
					default:
						if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(want)) {
							t.Errorf("error %q does not contain %q", err, want)
						}
						if pe != nil && pe.Line == 0 {
							t.Errorf("error %v has no line", err)
						}
					}
					for _, val := range in.Env {
						if strings.Contains(err.Error(), val) {
							t.Errorf("error %q prints an env value", err)
						}
					}
					if !t.Failed() {
						pass++
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				view := jsonNorm(t, fileView(file)).(map[string]any)
				for k, want := range v.Expected {
					switch k {
					case "validated_inputs":
						got, err := applySchema(file.InputSchema, in.Inputs)
						if err != nil {
							t.Fatal(err)
						}
						if d := partialMatch(k, jsonNorm(t, got), want); d != "" || len(got) != len(want.(map[string]any)) {
							t.Errorf("validated inputs %v, want %v", got, want)
						}
					case "outputs":
						if want == nil {
							if file.Outputs != nil {
								t.Errorf("outputs %v, want none", file.Outputs)
							}
							continue
						}
						// Weft keeps outputs as a JSON Schema: compare with the schema of the expected list.
						props := map[string]any{}
						var req []any
						for _, o := range want.([]any) {
							om := o.(map[string]any)
							props[om["name"].(string)] = map[string]any{"type": om["kind"], "description": om["description"]}
							if om["required"] == true {
								req = append(req, om["name"])
							}
						}
						ws := map[string]any{"type": "object", "properties": props, "required": req}
						gotReq, _ := file.Outputs["required"].([]any)
						sort.Slice(gotReq, func(i, j int) bool { return gotReq[i].(string) < gotReq[j].(string) })
						sort.Slice(req, func(i, j int) bool { return req[i].(string) < req[j].(string) })
						if !jsonEqual(t, file.Outputs, ws) {
							t.Errorf("outputs %s, want %s", jsonString(file.Outputs), jsonString(ws))
						}
					default:
						if d := partialMatch(k, view[k], want); d != "" {
							t.Error(d)
						}
					}
				}
				if !t.Failed() {
					pass++
				}
			})
		}
	}
	t.Logf("vectors_load: %d/%d pass (both dialects; template_string_invalid waived: Weft accepts the v1 string form)", pass, total)
}

var envRefRE = regexp.MustCompile(`\$\{env:([A-Za-z0-9_]+)`)

// TestFixtureFiles loads spec/fixtures/*.prompty and the v1 tests/**/*.prompty (and the v2 Python
// test prompts) with the `${env:}` variables they use set, in both dialects.
func TestFixtureFiles(t *testing.T) {
	root := sharedDir(t)
	// Files that must fail, and the rule they break.
	wantErr := map[string]string{
		"microsoft-prompty@v1/runtime/promptycs/Prompty.Core.Tests/prompty/basic_with_missing_file.prompty": "not found",
		// {{> attempt_partial }}: mustache partials are a load error.
		"microsoft-prompty@v1/runtime/prompty/tests/mustache/basic.prompty": "partial",
	}
	sets := map[string]int{}
	passes := map[string]int{}
	for _, dir := range []string{"microsoft-prompty@main/spec/fixtures", "microsoft-prompty@v1", "microsoft-prompty@main/runtime/python/prompty/tests/prompts"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".prompty") {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			env := map[string]string{}
			for _, m := range envRefRE.FindAllStringSubmatch(string(data), -1) {
				env[m[1]] = "value-of-" + m[1]
			}
			for _, dialect := range []string{DialectSeed, DialectV2} {
				sets[dir]++
				t.Run(rel+"/"+dialect, func(t *testing.T) {
					f, err := Load(p, Options{Dialect: dialect, LookupEnv: mapEnv(env)})
					if want, ok := wantErr[rel]; ok {
						if err == nil || !strings.Contains(err.Error(), want) {
							t.Fatalf("want error containing %q, got %v", want, err)
						}
						var pe *Error
						if !errors.As(err, &pe) || pe.File != p || pe.Line == 0 {
							t.Fatalf("error %v does not name the file and line", err)
						}
						t.Logf("fails as stated: %v", err)
						passes[dir]++
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					// Render with sample/default arguments: it must not fail either.
					if _, err := f.Render(RenderInput{Args: f.SampleArgs()}); err != nil {
						t.Fatalf("render: %v", err)
					}
					passes[dir]++
				})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for dir, n := range sets {
		t.Logf("%s: %d/%d loads pass (both dialects)", dir, passes[dir], n)
	}
}
