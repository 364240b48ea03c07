// Package web is the inspector: pages that show threads, their messages, tool calls, sub-prompts,
// subagents and model calls, live, and act on them (send, stop, continue, approve, provide
// variables). The pages are a static shell and small JavaScript modules embedded in the binary —
// no build step, no Node, no CDN — and everything they show they fetch from the HTTP API
// (package httpapi) with the caller's key, so the API's auth and redaction apply unchanged.
//
// Every text from a thread is put in the page as text (DOM textContent), never as HTML, and the
// Content-Security-Policy allows scripts from this server only: a message holding markup shows
// the markup.
package web

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed assets
var assets embed.FS

// contentSecurityPolicy lets the pages run their own scripts and styles only, load images from
// the API (as blob: URLs made from authenticated fetches) or data: URIs, and talk to this origin.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; " +
	"connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

// Handler serves the inspector: the thread list at /, a thread at /threads/{id}, eval runs at
// /evals and /evals/{id}, the scripts and styles under /assets/. Any other path answers 404 with the shell, which shows "not found".
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is part of the binary
	}
	shell, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic(err)
	}
	files := http.FileServerFS(sub)
	mux := http.NewServeMux()
	page := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			secure(w)
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-cache")
			w.WriteHeader(status)
			if r.Method != http.MethodHead {
				w.Write(shell)
			}
		}
	}
	mux.HandleFunc("GET /{$}", page(http.StatusOK))
	mux.HandleFunc("GET /threads/{id}", page(http.StatusOK))
	mux.HandleFunc("GET /evals", page(http.StatusOK))
	mux.HandleFunc("GET /evals/{id}", page(http.StatusOK))
	mux.HandleFunc("GET /assets/", func(w http.ResponseWriter, r *http.Request) {
		secure(w)
		w.Header().Set("Cache-Control", "no-cache")
		if r.URL.Path == "/assets/" || strings.HasSuffix(r.URL.Path, "/") || r.URL.Path == "/assets/index.html" {
			page(http.StatusNotFound)(w, r)
			return
		}
		http.StripPrefix("/assets", files).ServeHTTP(w, r)
	})
	mux.HandleFunc("/", page(http.StatusNotFound))
	return mux
}

// secure sets the headers every inspector response carries.
func secure(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}
