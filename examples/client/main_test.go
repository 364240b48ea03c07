package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
	"github.com/weft-agents/weft/httpapi"
	"github.com/weft-agents/weft/memstore"
	"github.com/weft-agents/weft/project"
	"github.com/weft-agents/weft/scripted"
)

// TestAsk runs the client against the API serving the support example with its model script.
func TestAsk(t *testing.T) {
	reg, diags := project.Open(filepath.Join("..", "support", "agents"), project.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	script, err := scripted.Load(filepath.Join("..", "support", "demo.script.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := memstore.New(memstore.Options{})
	eng, err := engine.New(engine.Options{Registry: reg, Store: st, Override: scripted.New(script), RecordEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); eng.Serve(ctx, engine.ServeOptions{}) }()
	defer func() { cancel(); <-served }()
	u := &weft.User{Name: "demo"}
	st.CreateUser(ctx, u)
	key, rec := weft.NewAPIKey(u.ID)
	st.CreateKey(ctx, rec)
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Engine: eng, Auth: st}).Handler())
	defer srv.Close()

	c := &Client{Base: srv.URL, Key: key, HTTP: http.DefaultClient}
	var out bytes.Buffer
	askCtx, done := context.WithTimeout(ctx, 20*time.Second)
	defer done()
	r, err := c.Ask(askCtx, "support", "Where is order 42?", &out)
	if err != nil {
		t.Fatal(err)
	}
	if r.StopReason != "stop_on_response" && r.StopReason != "awaiting_human" || !strings.Contains(out.String(), "PC-77812") || r.Text != out.String() {
		t.Fatalf("reply %+v, streamed %q", r, out.String())
	}
	bad := &Client{Base: srv.URL, Key: "wft_wrong", HTTP: http.DefaultClient}
	if _, err := bad.Ask(askCtx, "support", "hi", &out); err == nil || !strings.Contains(err.Error(), "unauthorized") {
		t.Fatalf("a bad key: %v", err)
	}
}
