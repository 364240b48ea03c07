package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/weft-agents/weft/project"
)

// TestComposeFile checks what can be checked of compose.yaml and the Dockerfile without Docker
// (.ci/run runs `docker compose config` and builds the image where Docker exists): two weft serve
// nodes whose commands weft parses, on PostgreSQL, with distinct node ids and one key, whose
// project and model script exist and validate, behind the one published port; the image is a
// static build run as a non-root user.
func TestComposeFile(t *testing.T) {
	data, err := os.ReadFile(repo("compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Image       string
			Command     []string
			Environment map[string]string
			Volumes     []string
			Ports       []string
		}
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var nodes, published []string
	for name, s := range doc.Services {
		published = append(published, s.Ports...)
		if s.Image != "weft" {
			continue
		}
		nodes = append(nodes, name)
		root := newRootCmd(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
		cmd, rest, err := root.Find(s.Command)
		if err != nil || cmd.Name() != "serve" {
			t.Fatalf("%s: command %q is not weft serve: %v", name, s.Command, err)
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if id, _ := cmd.Flags().GetString("node-id"); id != name {
			t.Errorf("%s: --node-id %q", name, id)
		}
		if !strings.HasPrefix(s.Environment["WEFT_DB"], "postgres://") || !strings.Contains(s.Environment["WEFT_ENCRYPTION_KEY"], "${WEFT_ENCRYPTION_KEY") {
			t.Errorf("%s: environment %v", name, s.Environment)
		}
		// The paths inside the container lead to the repository's files through the volumes.
		host := func(p string) string {
			for _, v := range s.Volumes {
				src, dst, _ := strings.Cut(strings.Fields(v)[0], ":")
				dst = strings.TrimSuffix(dst, ":ro")
				if rel, ok := strings.CutPrefix(p, dst+"/"); ok {
					return filepath.Join(repo(src), rel)
				}
			}
			t.Fatalf("%s: %s is on no volume", name, p)
			return ""
		}
		script, _ := cmd.Flags().GetString("model-script")
		if _, err := os.Stat(host(script)); err != nil {
			t.Errorf("%s: --model-script: %v", name, err)
		}
		if _, diags := project.Open(host(s.Environment["WEFT_DIR"]), project.Options{}); diags.HasErrors() {
			t.Errorf("%s: WEFT_DIR: %v", name, diags.Err())
		}
	}
	if len(nodes) != 2 || len(published) != 1 || published[0] != "8080:8080" {
		t.Fatalf("weft nodes %v, published ports %v; want two nodes behind one port", nodes, published)
	}
	conf, err := os.ReadFile(repo("deploy/nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if !strings.Contains(string(conf), "server "+n+":8080;") {
			t.Errorf("nginx.conf does not send to %s", n)
		}
	}
	if !strings.Contains(string(conf), "proxy_buffering off;") {
		t.Error("nginx.conf buffers streams")
	}
	df, err := os.ReadFile(repo("Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	final := string(df[strings.LastIndex(string(df), "\nFROM "):])
	for _, re := range []string{`CGO_ENABLED=0 go build .* \./cmd/weft`, `(?m)^USER [1-9][0-9]*:[1-9][0-9]*$`} {
		if !regexp.MustCompile(re).MatchString(string(df)) {
			t.Errorf("Dockerfile lacks %s", re)
		}
	}
	if !strings.Contains(final, "USER ") || strings.Contains(final, "USER root") || strings.Contains(final, "USER 0") {
		t.Errorf("the final stage does not run as a non-root user:\n%s", final)
	}
}
