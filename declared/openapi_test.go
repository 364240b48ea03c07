package declared_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/declared"
)

// stockSpec is an OpenAPI 3 document (JSON) with an apiKey in the query, an operation without an
// operationId, allOf and a recursive schema.
const stockSpec = `{
  "openapi": "3.1.0",
  "info": {"title": "Stock", "version": "1"},
  "servers": [{"url": "https://stock.invalid/api/"}],
  "components": {
    "securitySchemes": {"k": {"type": "apiKey", "in": "query", "name": "api_key"}},
    "schemas": {
      "Base": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]},
      "Tree": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/components/schemas/Tree"}}}},
      "Move": {"allOf": [{"$ref": "#/components/schemas/Base"}, {"properties": {"qty": {"type": "integer", "exclusiveMinimum": true, "minimum": 0}}}]}
    },
    "parameters": {"Sku": {"name": "sku", "in": "path", "required": true, "schema": {"type": "string"}}}
  },
  "paths": {
    "/items/{sku}": {
      "get": {"operationId": "get item", "description": "An item.", "parameters": [{"$ref": "#/components/parameters/Sku"}, {"name": "s", "in": "cookie"}]},
      "put": {"summary": "Move stock.", "parameters": [{"$ref": "#/components/parameters/Sku"}],
        "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Move"}}}}}
    },
    "/trees": {"post": {"operationId": "plant", "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Tree"}}}}}}
  }
}`

// TestOpenAPITools: each operation becomes an http tool placing its arguments where the document
// says; the key goes where the security scheme says; names, descriptions and schemas come from
// the document ($ref inlined, allOf merged, recursion cut, OpenAPI-only keywords dropped).
func TestOpenAPITools(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s ?%s %s", r.Method, r.URL.EscapedPath(), r.URL.RawQuery, body))
		mu.Unlock()
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	tools, err := declared.OpenAPITools([]byte(stockSpec), declared.OpenAPIOptions{Prefix: "stock", BaseURL: srv.URL + "/api/", Key: "${env:TOKEN}"})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*weft.Tool{}
	var names []string
	for _, tl := range tools {
		byName[tl.Name] = tl
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "stock_get_item,stock_put_items_sku,stock_plant" {
		t.Fatalf("tools %v", names)
	}
	if d := byName["stock_get_item"].Description; d != "An item." {
		t.Errorf("description %q", d)
	}
	if d := byName["stock_plant"].Description; d != "POST /trees" {
		t.Errorf("description %q", d)
	}
	put, _ := json.Marshal(byName["stock_put_items_sku"].Args)
	for _, w := range []string{`"qty":{"type":"integer","minimum":0}`, `"required":["sku"]`} {
		if !strings.Contains(string(put), w) {
			t.Errorf("put args lack %s: %s", w, put)
		}
	}
	if a, _ := json.Marshal(byName["stock_get_item"].Args); strings.Contains(string(a), `"s"`) {
		t.Errorf("a cookie parameter was offered: %s", a)
	}
	for _, tc := range []struct{ tool, args, want, wantErr string }{
		{"stock_get_item", `{"sku":"a b/c","extra":1}`, `GET /api/items/a%20b%2Fc ?api_key=s3cr3t `, ""},
		{"stock_put_items_sku", `{"sku":"x","body":{"sku":"x","qty":2}}`, `PUT /api/items/x ?api_key=s3cr3t {"sku":"x","qty":2}`, ""},
		{"stock_get_item", `{}`, "", `missing the path parameter "sku"`},
	} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		_, errText := call(t, declared.HTTP(byName[tc.tool], declared.Options{}), context.Background(), tc.args)
		if errText != tc.wantErr {
			t.Errorf("%s %s: error %q, want %q", tc.tool, tc.args, errText, tc.wantErr)
		}
		mu.Lock()
		if tc.want != "" && (len(seen) != 1 || seen[0] != tc.want) {
			t.Errorf("%s %s: server saw %q, want %q", tc.tool, tc.args, seen, tc.want)
		}
		mu.Unlock()
	}
	if tools, err := declared.OpenAPITools([]byte(`{"openapi": "3.0.0", "servers": [{"url": "http://x"}], "paths": {}}`), declared.OpenAPIOptions{}); err != nil || len(tools) != 0 {
		t.Errorf("a document without operations: %v, %v", tools, err)
	}
	for _, tc := range []struct {
		doc  string
		opt  declared.OpenAPIOptions
		want string
	}{
		{`{"swagger": "2.0"}`, declared.OpenAPIOptions{}, "swagger 2.0 documents are not read"},
		{`{"openapi": "3.0.0", "paths": {"/a": {"get": {}}}}`, declared.OpenAPIOptions{}, "servers: the document gives no server URL"},
		{`{"openapi": "3.0.0", "servers": [{"url": "/rel"}], "paths": {}}`, declared.OpenAPIOptions{}, `the base URL "/rel" is not an absolute http(s) URL`},
		{stockSpec, declared.OpenAPIOptions{Operations: []string{"plant", "fell"}}, `operationIds: the document has no operation "fell"`},
		{`{"openapi": "3.0.0", "servers": [{"url": "http://x"}], "paths": {"/a": {"post": {"requestBody": {"content": {"text/csv": {}}}}}}}`,
			declared.OpenAPIOptions{}, "paths./a.post: requestBody: only a JSON body can be sent (content types: text/csv)"},
	} {
		if _, err := declared.OpenAPITools([]byte(tc.doc), tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

// FuzzOpenAPITools: any document either fails with an error or yields tools with names models
// accept, arguments an object schema and a placed HTTP spec; inlining refs stays bounded.
func FuzzOpenAPITools(f *testing.F) {
	for _, s := range []string{
		stockSpec,
		`{"openapi":"3.0.0","servers":[{"url":"http://h"}],"paths":{"/{a}":{"get":{"parameters":[{"name":"a","in":"path"}]}}}}`,
		"openapi: 3.0.0\nservers: [{url: 'http://h'}]\ncomponents: {schemas: {A: {properties: {x: {$ref: '#/components/schemas/A'}, y: {$ref: '#/components/schemas/A'}}}}}\npaths: {/a: {post: {requestBody: {content: {application/json: {schema: {$ref: '#/components/schemas/A'}}}}}}}\n",
		`{"openapi":"3.0.0","servers":[{"url":"http://h"}],"paths":{"/a":{"$ref":"#/paths/~1a"}}}`,
		`{"swagger":"2.0"}`, `[]`, ``, `{"openapi":3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		tools, err := declared.OpenAPITools(doc, declared.OpenAPIOptions{Prefix: "p", Key: "${env:K}"})
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		for _, tl := range tools {
			if tl.Name == "" || len(tl.Name) > 64 || strings.Trim(tl.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
				t.Fatalf("bad tool name %q", tl.Name)
			}
			if tl.Args == nil || tl.Args.Type != "object" || tl.HTTP == nil || !tl.HTTP.Placed() || tl.Description == "" {
				t.Fatalf("bad tool %+v", tl)
			}
		}
	})
}
