package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// ordersSpec is the OpenAPI 3 document of TestPromptyOpenAPITool: a path parameter declared on
// the path item, a query and a header parameter, a JSON body by $ref with OpenAPI-only keywords,
// an apiKey security scheme, and an operation the file does not list.
const ordersSpec = `openapi: 3.0.3
info: {title: Orders, version: "1"}
servers: [{url: https://orders.invalid/v1}]
components:
  securitySchemes:
    orderKey: {type: apiKey, in: header, name: X-Orders-Key}
  schemas:
    Note:
      type: object
      required: [text]
      properties:
        text: {type: string, description: The note., example: late}
        urgent: {type: boolean, nullable: true}
paths:
  /orders/{orderId}:
    parameters:
      - {name: orderId, in: path, required: true, schema: {type: string}}
    get:
      operationId: getOrder
      summary: One order by id.
      parameters:
        - {name: verbose, in: query, schema: {type: boolean}}
        - {name: X-Trace, in: header, schema: {type: string}}
    delete:
      operationId: cancelOrder
      summary: Cancel an order.
  /orders/{orderId}/notes:
    post:
      operationId: addNote
      summary: Add a note to an order.
      parameters:
        - {name: orderId, in: path, required: true, schema: {type: string}}
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/Note'}
`

// ordersPrompt is a .prompty file with a kind: openapi tool limited to two operations.
const ordersPrompt = `---
name: P
description: Answers questions about orders.
model: gpt-4o-mini
tools:
  - name: orders
    kind: openapi
    description: The order API
    connection:
      kind: key
      endpoint: ${env:ORDERS_URL}
      apiKey: ${env:ORDERS_KEY}
    specification: ./orders.yaml
    operationIds: [getOrder, addNote]
---
system:
Look orders up.
`

// apiCall is one request the fake order API received.
type apiCall struct {
	Method, Path, Query, Key, Trace, ContentType, Body string
}

// TestPromptyOpenAPITool: a `kind: openapi` tool offers each listed operation of its document as
// a tool (arguments from the parameters and the JSON body, OpenAPI-only keywords dropped) and a
// call of one sends the operation's request — path parameter escaped into the path, query and
// header parameters where the document puts them, the body as JSON, the key from the thread's
// variable in the security scheme's header — to the connection's endpoint; the result reaches
// the model.
func TestPromptyOpenAPITool(t *testing.T) {
	var mu sync.Mutex
	var calls []apiCall
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, apiCall{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Key: r.Header.Get("X-Orders-Key"),
			Trace: r.Header.Get("X-Trace"), ContentType: r.Header.Get("Content-Type"), Body: string(body)})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"order":"A/7","state":"shipped"}`)
	}))
	defer api.Close()
	fake := newFakeChat(t, "/v1/chat/completions",
		`CALL orders_getOrder {"orderId":"A/7","verbose":true,"X-Trace":"t-1"}`,
		`CALL orders_addNote {"orderId":"A7","body":{"text":"late","urgent":true}}`,
		"It has shipped.")
	// The front matter's ${env:ORDERS_KEY} must resolve at load; a call reads the thread's variable.
	env := []string{"OPENAI_API_KEY=sk-test-0123456789", "OPENAI_BASE_URL=" + fake.srv.URL + "/v1", "ORDERS_URL=" + api.URL + "/v1", "ORDERS_KEY=k-load"}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"agents/prompts/p.prompty":   ordersPrompt,
		"agents/prompts/orders.yaml": ordersSpec,
		"agents/agents/a.yaml":       "{name: a, sideA: {prompt: P}}\n",
	})
	out, errOut, code := runWeftEnv(t, dir, env, "validate")
	if code != 0 {
		t.Fatalf("validate: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runWeftEnv(t, dir, env, "run", "a", "Where is A/7?", "--env", "ORDERS_KEY=k-123")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	reqs := fake.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	tools := map[string]map[string]any{}
	for _, tv := range reqs[0].Body["tools"].([]any) {
		fn := tv.(map[string]any)["function"].(map[string]any)
		tools[fn["name"].(string)] = fn
	}
	if len(tools) != 2 || tools["orders_getOrder"] == nil || tools["orders_addNote"] == nil {
		t.Fatalf("tools offered: %s", reqs[0].Raw)
	}
	get, _ := json.Marshal(tools["orders_getOrder"])
	for _, w := range []string{`"description":"One order by id."`, `"orderId":{"type":"string"}`, `"verbose":{"type":"boolean"}`, `"X-Trace"`, `"required":["orderId"]`} {
		if !strings.Contains(string(get), w) {
			t.Errorf("getOrder lacks %s: %s", w, get)
		}
	}
	note, _ := json.Marshal(tools["orders_addNote"])
	for _, w := range []string{`"body":{`, `"text":{"description":"The note.","type":"string"}`, `"required":["orderId","body"]`} {
		if !strings.Contains(string(note), w) {
			t.Errorf("addNote lacks %s: %s", w, note)
		}
	}
	if strings.Contains(string(note), "nullable") || strings.Contains(string(note), "example") {
		t.Errorf("OpenAPI-only keywords offered: %s", note)
	}
	mu.Lock()
	got := append([]apiCall(nil), calls...)
	mu.Unlock()
	want := []apiCall{
		{Method: "GET", Path: "/v1/orders/A%2F7", Query: "verbose=true", Key: "k-123", Trace: "t-1"},
		{Method: "POST", Path: "/v1/orders/A7/notes", Key: "k-123", ContentType: "application/json", Body: `{"text":"late","urgent":true}`},
	}
	if len(got) != len(want) {
		t.Fatalf("API calls %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("API call %d = %+v, want %+v", i+1, got[i], want[i])
		}
	}
	if !strings.Contains(reqs[2].Raw, `\"state\":\"shipped\"`) {
		t.Errorf("the API's answer did not reach the model: %s", reqs[2].Raw)
	}
}

// TestPromptyOpenAPIErrors: an openapi tool that cannot be bound is refused naming the file, the
// field and the rule; a key the thread lacks stops the run naming the variable.
func TestPromptyOpenAPIErrors(t *testing.T) {
	cases := []struct {
		name, prompt, spec string
		cmd                []string
		want               string
	}{
		{name: "unknown operationId", prompt: strings.Replace(ordersPrompt, "[getOrder, addNote]", "[getOrder, shipOrder]", 1), spec: ordersSpec,
			cmd: []string{"validate"}, want: `prompts/p.prompty: tools[0].specification: operationIds: the document has no operation "shipOrder"`},
		{name: "swagger 2", prompt: ordersPrompt, spec: "swagger: '2.0'\npaths: {}\n",
			cmd: []string{"validate"}, want: "tools[0].specification: swagger 2.0 documents are not read"},
		{name: "specification outside the project", prompt: strings.Replace(ordersPrompt, "./orders.yaml", "../../../orders.yaml", 1), spec: ordersSpec,
			cmd: []string{"validate"}, want: "tools[0].specification: ../../../orders.yaml"},
		{name: "key not set at load", prompt: strings.Replace(ordersPrompt, "ORDERS_KEY", "ORDERS_TOKEN", 1), spec: ordersSpec,
			cmd: []string{"validate"}, want: "tools[0].connection.apiKey: environment variable 'ORDERS_TOKEN' not set"},
		{name: "key not given to the thread", prompt: ordersPrompt, spec: ordersSpec,
			cmd: []string{"run", "a", "Hi."}, want: "ORDERS_KEY"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFakeChat(t, "/v1/chat/completions")
			env := []string{"OPENAI_API_KEY=sk-test-0123456789", "OPENAI_BASE_URL=" + fake.srv.URL + "/v1", "ORDERS_URL=http://127.0.0.1:9/v1", "ORDERS_KEY=k-load"}
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{
				"agents/prompts/p.prompty":   tc.prompt,
				"agents/prompts/orders.yaml": tc.spec,
				"agents/agents/a.yaml":       "{name: a, sideA: {prompt: P}}\n",
			})
			out, errOut, code := runWeftEnv(t, dir, env, tc.cmd...)
			if code == 0 || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d, want an error with %q:\n%s%s", code, tc.want, out, errOut)
			}
			if n := len(fake.requests()); n != 0 {
				t.Errorf("%d model requests", n)
			}
		})
	}
}
