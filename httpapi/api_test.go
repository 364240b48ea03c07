package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

// TestErrors checks every refusal's status and code, and that none leaks a secret.
func TestErrors(t *testing.T) {
	e := newEnv(t, envOptions{})
	bobThread := e.createThread(e.bob)
	aliceThread := e.createThread(e.alice)
	dead := e.createThread(e.alice)
	e.json("POST", "/api/threads/"+dead+"/terminate", e.alice, nil, 200, nil)
	huge := `{"content":"` + strings.Repeat("x", 21<<20) + `"}`
	tests := []struct {
		name, method, path, key string
		body                    any
		status                  int
		code                    string
	}{
		{"no key", "GET", "/api/threads", "", nil, 401, "unauthorized"},
		{"unknown key", "GET", "/api/threads", "wft_nope", nil, 401, "unauthorized"},
		{"not bearer", "GET", "/api/threads", "", nil, 401, "unauthorized"},
		{"key in the URL", "GET", "/api/threads?api_key=" + e.alice, "", nil, 401, "unauthorized"},
		{"key value in any query parameter", "GET", "/api/threads?q=" + e.alice, e.alice, nil, 401, "unauthorized"},
		{"admin route as user", "GET", "/api/users", e.alice, nil, 403, "forbidden"},
		{"admin catalog as user", "GET", "/api/models", e.alice, nil, 403, "forbidden"},
		{"another user's thread", "GET", "/api/threads/" + bobThread, e.alice, nil, 404, "not_found"},
		{"another user's messages", "GET", "/api/threads/" + bobThread + "/messages", e.alice, nil, 404, "not_found"},
		{"post to another user's thread", "POST", "/api/threads/" + bobThread + "/messages", e.alice, map[string]any{"content": "hi"}, 404, "not_found"},
		{"unknown thread", "GET", "/api/threads/thr_missing", e.alice, nil, 404, "not_found"},
		{"unknown route", "GET", "/api/nothing", e.alice, nil, 404, "not_found"},
		{"wrong method", "PUT", "/api/threads", e.alice, nil, 405, "bad_request"},
		{"wrong method on a thread", "POST", "/api/threads/" + aliceThread, e.alice, nil, 405, "bad_request"},
		{"malformed JSON", "POST", "/api/threads", e.alice, `{"agent":`, 400, "bad_request"},
		{"unknown field", "POST", "/api/threads", e.alice, `{"agent":"chat","bogus":1}`, 400, "bad_request"},
		{"wrong type", "POST", "/api/threads", e.alice, `{"agent":42}`, 400, "bad_request"},
		{"trailing data", "POST", "/api/threads", e.alice, `{"agent":"chat"} {}`, 400, "bad_request"},
		{"empty body", "POST", "/api/threads", e.alice, ``, 400, "bad_request"},
		{"no agent", "POST", "/api/threads", e.alice, `{}`, 400, "validation_failed"},
		{"unknown agent", "POST", "/api/threads", e.alice, `{"agent":"nobody"}`, 404, "not_found"},
		{"missing variables", "POST", "/api/threads", e.alice, `{"agent":"vault"}`, 422, "missing_required_variables"},
		{"invalid arguments", "POST", "/api/threads", e.alice, `{"agent":"careful","arguments":{"limit":0}}`, 400, "validation_failed"},
		{"empty message", "POST", "/api/threads/" + aliceThread + "/messages", e.alice, `{"content":""}`, 400, "validation_failed"},
		{"bad role", "POST", "/api/threads/" + aliceThread + "/messages", e.alice, `{"content":"x","role":"tool"}`, 400, "validation_failed"},
		{"huge message", "POST", "/api/threads/" + aliceThread + "/messages", e.alice, huge, 413, "payload_too_large"},
		{"terminated thread", "POST", "/api/threads/" + dead + "/messages", e.alice, `{"content":"hi"}`, 409, "thread_terminated"},
		{"continue terminated", "POST", "/api/threads/" + dead + "/continue", e.alice, nil, 409, "thread_terminated"},
		{"continue bad side", "POST", "/api/threads/" + aliceThread + "/continue", e.alice, `{"side":"c"}`, 400, "validation_failed"},
		{"limit over 500", "GET", "/api/threads?limit=501", e.alice, nil, 400, "bad_request"},
		{"negative offset", "GET", "/api/threads?offset=-1", e.alice, nil, 400, "bad_request"},
		{"bad sort", "GET", "/api/threads?sort=sideways", e.alice, nil, 400, "bad_request"},
		{"bad bool", "GET", "/api/threads/" + aliceThread + "/messages?include_silent=perhaps", e.alice, nil, 400, "bad_request"},
		{"bad cursor", "GET", "/api/threads/" + aliceThread + "/events?after=x", e.alice, nil, 400, "bad_request"},
		{"unknown log", "GET", "/api/threads/" + aliceThread + "/logs/log_missing", e.alice, nil, 404, "not_found"},
		{"unknown kv key", "GET", "/api/threads/" + aliceThread + "/kv/none", e.alice, nil, 404, "not_found"},
		{"kv not JSON", "PUT", "/api/threads/" + aliceThread + "/kv/k", e.alice, `{nope`, 400, "bad_request"},
		{"bad file path", "GET", "/api/threads/" + aliceThread + "/fs/a/../../x", e.alice, nil, 404, "not_found"},
		{"missing file", "GET", "/api/threads/" + aliceThread + "/fs/none.txt", e.alice, nil, 404, "not_found"},
		{"search without pattern", "GET", "/api/threads/" + aliceThread + "/fs-search", e.alice, nil, 400, "validation_failed"},
		{"unknown effect", "DELETE", "/api/threads/" + aliceThread + "/effects/eff_missing", e.alice, nil, 404, "not_found"},
		{"unknown variables request", "GET", "/api/threads/" + aliceThread + "/variables/req_missing", e.alice, nil, 404, "not_found"},
		{"key for another user", "POST", "/api/keys", e.alice, map[string]any{"user_id": e.bobID}, 403, "forbidden"},
		{"revoke another user's key", "DELETE", "/api/keys/key_x", e.alice, nil, 404, "not_found"},
		{"ticket without path", "POST", "/api/auth/ws-ticket", e.alice, `{}`, 400, "validation_failed"},
		{"bad ticket", "GET", "/api/threads/" + aliceThread + "/stream?ticket=wst_bogus", "", nil, 401, "unauthorized"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			key := tc.key
			code, out := e.do(tc.method, tc.path, key, tc.body)
			if tc.name == "not bearer" {
				code, out = doHeader(t, e, "Basic abc")
			}
			if code != tc.status {
				t.Fatalf("%d, want %d: %.300s", code, tc.status, out)
			}
			var body struct {
				Error map[string]any `json:"error"`
			}
			if err := json.Unmarshal(out, &body); err != nil {
				t.Fatalf("not the error shape: %v: %.300s", err, out)
			}
			if body.Error["code"] != tc.code || body.Error["message"] == "" {
				t.Fatalf("error %v, want code %s", body.Error, tc.code)
			}
			if strings.Contains(string(out), secretValue) || strings.Contains(string(out), e.alice) {
				t.Fatalf("a secret in the answer: %s", out)
			}
			if tc.code == "missing_required_variables" && !strings.Contains(string(out), "VAULT_KEY") {
				t.Fatalf("no missing list: %s", out)
			}
			if tc.code == "validation_failed" && body.Error["errors"] == nil {
				t.Fatalf("no errors list: %s", out)
			}
		})
	}
}

func doHeader(t *testing.T, e *env, auth string) (int, []byte) {
	req, _ := newRequest("GET", e.srv.URL+"/api/threads")
	req.Header.Set("Authorization", auth)
	return send(t, req)
}

// TestThreadFlow drives a thread through creation, a message, its run, and the routes that read
// and change its state, as a non-admin user; nothing it reads shows the thread's secret.
func TestThreadFlow(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id := e.createThread(e.alice)
	events, _ := e.sse(ctx, "/api/threads/"+id+"/events", e.alice, "")
	var posted struct {
		Status    string `json:"status"`
		QueueID   string `json:"queue_id"`
		MessageID string `json:"message_id"`
	}
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "hello"}, 202, &posted)
	if posted.Status != "started" || posted.QueueID == "" {
		t.Fatalf("posted %+v", posted)
	}
	got := until(t, events, "run_stopped", 10*time.Second)
	for _, ev := range got {
		if b, _ := json.Marshal(ev.data); strings.Contains(string(b), secretValue) {
			t.Fatalf("event %s shows the secret: %s", ev.typ, b)
		}
	}

	var msgs struct {
		Items   []weft.Message `json:"items"`
		Total   int            `json:"total"`
		HasMore bool           `json:"has_more"`
	}
	e.json("GET", "/api/threads/"+id+"/messages", e.alice, nil, 200, &msgs)
	if msgs.Total != 4 || len(msgs.Items) != 4 || msgs.HasMore {
		t.Fatalf("messages %+v", msgs)
	}
	last := msgs.Items[3]
	if last.Role != weft.RoleAssistant || strings.Contains(last.Content, secretValue) || !strings.Contains(last.Content, "[redacted]") {
		t.Fatalf("last message %q: the secret must be redacted", last.Content)
	}
	e.json("GET", "/api/threads/"+id+"/messages?limit=1&offset=1", e.alice, nil, 200, &msgs)
	if msgs.Total != 4 || len(msgs.Items) != 1 || !msgs.HasMore || msgs.Items[0].Seq != 2 {
		t.Fatalf("page 2 of 4: %+v", msgs)
	}
	e.json("GET", "/api/threads/"+id+"/messages?limit=2&order=desc", e.alice, nil, 200, &msgs)
	if msgs.Total != 4 || len(msgs.Items) != 2 || !msgs.HasMore || msgs.Items[0].Seq != 4 || msgs.Items[1].Seq != 3 {
		t.Fatalf("the newest 2 of 4: %+v", msgs)
	}
	e.json("GET", "/api/threads/"+id+"/messages?offset=9", e.alice, nil, 200, &msgs)
	if msgs.Total != 4 || msgs.Items == nil || len(msgs.Items) != 0 || msgs.HasMore {
		t.Fatalf("past the end: %+v", msgs)
	}
	var one weft.Message
	e.json("GET", "/api/threads/"+id+"/messages/"+last.ID, e.alice, nil, 200, &one)
	if one.ID != last.ID || strings.Contains(one.Content, secretValue) {
		t.Fatalf("message %+v", one)
	}

	var detail map[string]any
	e.json("GET", "/api/threads/"+id, e.alice, nil, 200, &detail)
	if detail["message_count"] != float64(4) || detail["user_id"] != e.aliceID || detail["status"] == "running" {
		t.Fatalf("thread %v", detail)
	}

	var logs struct {
		Items []map[string]any `json:"items"`
		Total int              `json:"total"`
	}
	e.json("GET", "/api/threads/"+id+"/logs", e.alice, nil, 200, &logs)
	if logs.Total != 2 || logs.Items[0]["request_body"] != nil {
		t.Fatalf("logs %+v", logs)
	}
	code, body := e.do("GET", "/api/threads/"+id+"/logs/"+logs.Items[1]["id"].(string), e.alice, nil)
	if code != 200 || strings.Contains(string(body), secretValue) {
		t.Fatalf("log: %d %s", code, body)
	}
	var cost map[string]any
	e.json("GET", "/api/threads/"+id+"/cost", e.alice, nil, 200, &cost)
	if cost["calls"] != float64(2) {
		t.Fatalf("cost %v", cost)
	}
	// The cost follows the thread's new calls, each counted once (it is added up incrementally).
	e.json("POST", "/api/threads/"+id+"/messages", e.alice, map[string]any{"content": "again"}, 202, nil)
	until(t, events, "run_stopped", 10*time.Second)
	for range 2 {
		e.json("GET", "/api/threads/"+id+"/cost", e.alice, nil, 200, &cost)
		byModel, _ := cost["by_model"].([]any)
		if cost["calls"] != float64(4) || len(byModel) != 1 || byModel[0].(map[string]any)["calls"] != float64(4) {
			t.Fatalf("cost after a second turn: %v", cost)
		}
	}

	// KV and files round-trip.
	e.json("PUT", "/api/threads/"+id+"/kv/color", e.alice, `{"name":"teal"}`, 200, nil)
	var kv map[string]any
	e.json("GET", "/api/threads/"+id+"/kv/color", e.alice, nil, 200, &kv)
	if kv["name"] != "teal" {
		t.Fatalf("kv %v", kv)
	}
	// A value holding the thread's secret is shown redacted.
	e.json("PUT", "/api/threads/"+id+"/kv/token", e.alice, `{"v":"`+secretValue+`"}`, 200, nil)
	for _, path := range []string{"/kv/token", "/kv"} {
		if code, body := e.do("GET", "/api/threads/"+id+path, e.alice, nil); code != 200 || strings.Contains(string(body), secretValue) || !strings.Contains(string(body), "[redacted]") {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
	}
	e.json("DELETE", "/api/threads/"+id+"/kv/color", e.alice, nil, 204, nil)
	e.json("GET", "/api/threads/"+id+"/kv/color", e.alice, nil, 404, nil)
	e.json("PUT", "/api/threads/"+id+"/fs/notes/a.txt", e.alice, "alpha beta", 201, nil)
	code, body = e.do("GET", "/api/threads/"+id+"/fs/notes/a.txt", e.alice, nil)
	if code != 200 || string(body) != "alpha beta" {
		t.Fatalf("file: %d %q", code, body)
	}
	var dir map[string]any
	e.json("GET", "/api/threads/"+id+"/fs/notes", e.alice, nil, 200, &dir)
	if len(dir["entries"].([]any)) != 1 {
		t.Fatalf("dir %v", dir)
	}
	var matches []map[string]any
	e.json("GET", "/api/threads/"+id+"/fs-search?grep=beta", e.alice, nil, 200, &matches)
	if len(matches) != 1 {
		t.Fatalf("grep %v", matches)
	}
	var stat map[string]any
	e.json("GET", "/api/threads/"+id+"/fs/notes/a.txt?stat=1", e.alice, nil, 200, &stat)
	if stat["size"] != float64(10) || stat["path"] != "/notes/a.txt" {
		t.Fatalf("stat %v", stat)
	}
	req, _ := newRequest("GET", e.srv.URL+"/api/threads/"+id+"/fs/notes/a.txt?download=1")
	req.Header.Set("Authorization", "Bearer "+e.alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cd := resp.Header.Get("Content-Disposition"); cd != `attachment; filename=a.txt` {
		t.Fatalf("download: %q", cd)
	}
	var found []map[string]any
	e.json("GET", "/api/threads/"+id+"/fs-search?glob=**/*.txt", e.alice, nil, 200, &found)
	if len(found) != 1 || found[0]["path"] != "/notes/a.txt" {
		t.Fatalf("glob %v", found)
	}
	e.json("DELETE", "/api/threads/"+id+"/fs/notes/a.txt", e.alice, nil, 204, nil)
	e.json("GET", "/api/threads/"+id+"/fs/notes/a.txt", e.alice, nil, 404, nil)

	// Env shows names and types, never a secret's value.
	code, body = e.do("GET", "/api/threads/"+id+"/env", e.alice, nil)
	if code != 200 || !strings.Contains(string(body), `"TOKEN"`) || strings.Contains(string(body), secretValue) {
		t.Fatalf("env: %d %s", code, body)
	}
	var effects struct {
		Items []any `json:"items"`
		Total int   `json:"total"`
	}
	e.json("GET", "/api/threads/"+id+"/effects", e.alice, nil, 200, &effects)
	if effects.Items == nil || effects.Total != 0 {
		t.Fatalf("effects %+v", effects)
	}

	// Thread env over PATCH: set a text value, delete the secret; a bad type is refused.
	e.json("PATCH", "/api/threads/"+id, e.alice, `{"env":{"set":{"MODE":{"value":"fast","type":"number"}}}}`, 400, nil)
	e.json("PATCH", "/api/threads/"+id, e.alice, `{"env":{"set":{"MODE":{"value":"fast","type":"text"},"OLD":{"value":"x1234"}}}}`, 200, nil)
	e.json("PATCH", "/api/threads/"+id, e.alice, `{"env":{"delete":["OLD"]}}`, 200, nil)
	var rows []map[string]any
	e.json("GET", "/api/threads/"+id+"/env", e.alice, nil, 200, &rows)
	if len(rows) != 2 || rows[0]["name"] != "MODE" || rows[0]["value"] != "fast" || rows[0]["layer"] != "thread" ||
		rows[1]["name"] != "TOKEN" || rows[1]["value"] != nil || rows[1]["type"] != "secret" {
		t.Fatalf("env after patch %v", rows)
	}
	// Patch, list with visibility, stop, terminate, delete.
	var patched weft.Thread
	e.json("PATCH", "/api/threads/"+id, e.alice, map[string]any{"tags": []string{"vip"}, "properties": map[string]any{"n": 1}}, 200, &patched)
	if len(patched.Tags) != 1 || patched.Tags[0] != "vip" {
		t.Fatalf("patched %+v", patched)
	}
	e.createThread(e.bob)
	var list struct {
		Items []weft.Thread `json:"items"`
		Total int           `json:"total"`
	}
	e.json("GET", "/api/threads", e.alice, nil, 200, &list)
	if list.Total != 1 || list.Items[0].ID != id {
		t.Fatalf("alice sees %+v", list)
	}
	// A preview holding a secret (a pasted one, say) is redacted in every answer.
	pasted := "my token is " + secretValue
	if err := e.store.Tx(context.Background(), id, nil, func(tx weft.Tx) error {
		return tx.UpdateThread(weft.ThreadPatch{Preview: &pasted})
	}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/api/threads", "/api/threads/" + id} {
		if code, body := e.do("GET", path, e.alice, nil); code != 200 || strings.Contains(string(body), secretValue) || !strings.Contains(string(body), `"preview":"`) {
			t.Fatalf("GET %s shows the secret or no preview: %d %s", path, code, body)
		}
	}
	e.json("GET", "/api/threads?tag=vip", e.admin, nil, 200, &list)
	if list.Total != 1 {
		t.Fatalf("admin by tag: %+v", list)
	}
	e.json("GET", "/api/threads", e.admin, nil, 200, &list)
	if list.Total != 2 {
		t.Fatalf("admin sees %+v", list)
	}
	e.json("POST", "/api/threads/"+id+"/stop", e.alice, nil, 200, nil)
	e.json("POST", "/api/threads/"+id+"/stop", e.alice, nil, 200, nil)
	var term weft.Thread
	e.json("POST", "/api/threads/"+id+"/terminate", e.alice, nil, 200, &term)
	if term.Status != weft.ThreadTerminated {
		t.Fatalf("terminated %+v", term)
	}
	e.json("DELETE", "/api/threads/"+id, e.alice, nil, 204, nil)
	e.json("GET", "/api/threads/"+id, e.alice, nil, 404, nil)
}

// TestUsersAndKeys creates a user and a key over the API, uses it, and revokes it.
func TestUsersAndKeys(t *testing.T) {
	e := newEnv(t, envOptions{})
	var u weft.User
	e.json("POST", "/api/users", e.admin, map[string]any{"name": "carol"}, 201, &u)
	e.json("POST", "/api/users", e.admin, map[string]any{"name": "carol"}, 409, nil)
	var k struct {
		ID, Key string
		UserID  string `json:"user_id"`
	}
	e.json("POST", "/api/keys", e.admin, map[string]any{"user_id": u.ID}, 201, &k)
	if !strings.HasPrefix(k.Key, weft.APIKeyPrefix) || k.UserID != u.ID {
		t.Fatalf("key %+v", k)
	}
	code, body := e.do("GET", "/api/keys", e.admin, nil)
	if code != 200 || strings.Contains(string(body), k.Key) {
		t.Fatalf("a listing shows a key: %s", body)
	}
	e.json("GET", "/api/threads", k.Key, nil, 200, nil)
	e.json("DELETE", "/api/keys/"+k.ID, k.Key, nil, 204, nil)
	e.json("GET", "/api/threads", k.Key, nil, 401, nil)
	// The admin key from the environment is an admin.
	e.json("GET", "/api/users", e.adminKey, nil, 200, nil)
	e.json("GET", "/api/agents", k.Key, nil, 401, nil)
	var agents []map[string]any
	e.json("GET", "/api/agents", e.alice, nil, 200, &agents)
	if len(agents) != 5 || agents[2]["name"] != "chat" {
		t.Fatalf("agents %v", agents)
	}
	var vars struct {
		Required []map[string]any `json:"required"`
		Optional []map[string]any `json:"optional"`
	}
	e.json("GET", "/api/variables/agents/vault", e.alice, nil, 200, &vars)
	if len(vars.Required) != 1 || vars.Required[0]["name"] != "VAULT_KEY" || vars.Required[0]["type"] != "secret" {
		t.Fatalf("vault's variables %+v", vars)
	}
	// A subagent's scoped variables are asked for when it is created, not with its parent's.
	e.json("GET", "/api/variables/agents/boss", e.alice, nil, 200, &vars)
	if len(vars.Required) != 0 {
		t.Fatalf("boss's variables %+v", vars)
	}
	e.json("GET", "/api/variables/agents/nobody", e.alice, nil, 404, nil)
	// Definitions show env names, never values.
	code, body = e.do("GET", "/api/prompts/chat", e.admin, nil)
	if code != 200 || strings.Contains(string(body), "friendly-tone-value") || !strings.Contains(string(body), `"env_names":["TONE"]`) {
		t.Fatalf("prompt: %d %s", code, body)
	}
	e.json("GET", "/api/prompts/nothing", e.admin, nil, 404, nil)
	for path, want := range map[string]string{"/api/models": `"name":"fast"`, "/api/tools": `"name":"echo"`,
		"/api/prompts": `"name":"careful"`, "/api/providers": `[]`} {
		if code, body := e.do("GET", path, e.admin, nil); code != 200 || !strings.Contains(string(body), want) {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
	}
	// A user lists only its own keys.
	var mine []weft.APIKey
	e.json("GET", "/api/keys", e.alice, nil, 200, &mine)
	if len(mine) != 1 || mine[0].UserID != e.aliceID {
		t.Fatalf("alice's keys %+v", mine)
	}
}

// TestHealth needs no key; readiness follows SetReady.
func TestHealth(t *testing.T) {
	e := newEnv(t, envOptions{})
	var h map[string]any
	e.json("GET", "/api/health", "", nil, 200, &h)
	if h["status"] != "ok" || h["version"] != "test" {
		t.Fatalf("health %v", h)
	}
	e.json("GET", "/api/ready", "", nil, 200, nil)
	e.api.SetReady(false)
	e.json("GET", "/api/ready", "", nil, 503, nil)
}

// TestNoAuth acts as the admin user local without a key; a key in the URL is still refused.
func TestNoAuth(t *testing.T) {
	e := newEnv(t, envOptions{noAuth: true})
	var out struct {
		Thread weft.Thread `json:"thread"`
	}
	e.json("POST", "/api/threads", "", map[string]any{"agent": "chat"}, 201, &out)
	if out.Thread.UserID != "local" {
		t.Fatalf("user %q", out.Thread.UserID)
	}
	e.json("GET", "/api/users", "", nil, 200, nil)
	e.json("GET", "/api/threads?api_key=x", "", nil, 401, nil)
}
