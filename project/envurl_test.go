package project_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-agents/weft/project"
)

// TestBaseURLFromEnv: ${env:NAME} in a model's providerOptions.baseUrl and in a provider's baseUrl
// is read from the environment at load time (it was sent to the provider as written); unset
// without a default it is an error naming the file, field and variable.
func TestBaseURLFromEnv(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string
		modelURL  string
		provURL   string
		wantModel string
		wantProv  string
		wantErr   string
	}{
		{"set", map[string]string{"LLM_URL": "http://127.0.0.1:9/v1"}, "${env:LLM_URL}", "${env:LLM_URL}/team", "http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1/team", ""},
		{"default", nil, "${env:LLM_URL:http://localhost:8080/v1}", "https://gw.example.com/v1", "http://localhost:8080/v1", "https://gw.example.com/v1", ""},
		{"plain", nil, "http://h/v1", "http://h/v1", "http://h/v1", "http://h/v1", ""},
		{"unset_model", nil, "${env:LLM_URL}", "http://h/v1", "", "", "models/fast.yaml: providerOptions.baseUrl: variable LLM_URL is not set"},
		{"unset_provider", nil, "http://h/v1", "${env:GW_URL}", "", "", "providers/gw.yaml: baseUrl: variable GW_URL is not set"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{
				"models/fast.yaml":  "name: fast\nprovider: openai\nmodel: m\nproviderOptions: {baseUrl: \"" + tc.modelURL + "\"}\n",
				"providers/gw.yaml": "name: gw\nbase: openai-compatible\nbaseUrl: \"" + tc.provURL + "\"\n",
				"models/other.yaml": "name: other\nprovider: gw\nmodel: m\n",
			}
			for name, body := range files {
				p := filepath.Join(dir, filepath.FromSlash(name))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			reg, diags := project.Open(dir, project.Options{LookupEnv: lookup})
			if tc.wantErr != "" {
				if got := lines(diags); !strings.Contains(got, tc.wantErr) {
					t.Fatalf("want %q in:\n%s", tc.wantErr, got)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(diags.Err())
			}
			m, _ := reg.Model("fast")
			p, _ := reg.Provider("gw")
			if got := m.ProviderOptions["baseUrl"]; got != tc.wantModel {
				t.Errorf("model baseUrl %q, want %q", got, tc.wantModel)
			}
			if p.BaseURL != tc.wantProv {
				t.Errorf("provider baseUrl %q, want %q", p.BaseURL, tc.wantProv)
			}
		})
	}
}
