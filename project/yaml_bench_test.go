package project

import (
	"os"
	"path/filepath"
	"testing"

	goyaml "github.com/goccy/go-yaml"
)

// yamlCorpus is every YAML definition file of the full test project, as one project load reads
// them.
func yamlCorpus(b *testing.B) [][]byte {
	var out [][]byte
	err := filepath.WalkDir("testdata/full", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".yaml" {
			data, rerr := os.ReadFile(p)
			out = append(out, data)
			return rerr
		}
		return err
	})
	if err != nil || len(out) == 0 {
		b.Fatalf("corpus: %d files, %v", len(out), err)
	}
	return out
}

// BenchmarkParseYAML compares the two ways of decoding a definition file in order: yaml.v3's node
// tree converted to MapSlice (what parseYAML does) and go-yaml's ordered-map decoder alone. It is
// the measured reason both libraries are kept (see parseYAML).
func BenchmarkParseYAML(b *testing.B) {
	corpus := yamlCorpus(b)
	b.Run("yaml.v3+nodes", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, data := range corpus {
				if _, d := parseYAML("f.yaml", data); d != nil {
					b.Fatal(d)
				}
			}
		}
	})
	b.Run("go-yaml", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, data := range corpus {
				var v any
				if err := goyaml.UnmarshalWithOptions(data, &v, goyaml.UseOrderedMap()); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
