package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDecodeStrict(t *testing.T) {
	tests := []struct {
		name, body string
		ok         bool
		msg        string
	}{
		{"valid", `{"agent":"a","tags":["x"]}`, true, ""},
		{"unknown field", `{"agent":"a","nope":1}`, false, `unknown field "nope"`},
		{"wrong type", `{"agent":1}`, false, "field agent: expected string, got JSON number"},
		{"wrong nested type", `{"tags":[1]}`, false, "field tags"},
		{"syntax", `{"agent":`, false, "malformed JSON"},
		{"trailing", `{"agent":"a"}x`, false, "data after the JSON value"},
		{"array instead of object", `[]`, false, "expected"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var dst createThreadBody
			err := decodeStrict([]byte(tc.body), &dst)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err %q, want it to contain %q", err, tc.msg)
			}
		})
	}
}

// FuzzDecodeStrict: any body is either refused with a 400 or decodes into a value that
// round-trips.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{`{"agent":"a"}`, `{"agent":"a","message":{"content":"hi","attachments":[{"name":"x","data":"aGk="}]}}`,
		`{"tags":null}`, `{`, `{"arguments":{"a":[1,2,{"b":null}]}}`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var dst createThreadBody
		err := decodeStrict(b, &dst)
		if err != nil {
			ae, ok := err.(*apiError)
			if !ok || ae.status != http.StatusBadRequest {
				t.Fatalf("refusal %#v is not a 400", err)
			}
			return
		}
		again, _ := json.Marshal(dst)
		var dst2 createThreadBody
		if err := decodeStrict(again, &dst2); err != nil {
			t.Fatalf("re-decoding %s: %v", again, err)
		}
		if !reflect.DeepEqual(dst, dst2) {
			t.Fatalf("round trip changed %+v into %+v", dst, dst2)
		}
	})
}

func TestReadBodyLimit(t *testing.T) {
	for _, n := range []int{10, 11, 100} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(strings.Repeat("a", n)))
		r.ContentLength = -1 // unknown length: the limit applies while reading
		_, err := readBody(httptest.NewRecorder(), r, 10)
		if (err == nil) != (n <= 10) {
			t.Fatalf("%d bytes against a limit of 10: %v", n, err)
		}
		if err != nil && err.(*apiError).status != http.StatusRequestEntityTooLarge {
			t.Fatalf("%d bytes: %v, want 413", n, err)
		}
	}
}

func TestTickets(t *testing.T) {
	tk := newTickets(50 * time.Millisecond)
	p := &principal{userID: "u"}
	id, _ := tk.issue(p, "/api/a")
	if _, ok := tk.take(id, "/api/b"); ok {
		t.Fatal("a ticket worked for another path")
	}
	if _, ok := tk.take(id, "/api/a"); ok {
		t.Fatal("a ticket tried on another path still worked")
	}
	id, _ = tk.issue(p, "/api/a")
	if got, ok := tk.take(id, "/api/a"); !ok || got.userID != "u" {
		t.Fatal("a fresh ticket was refused")
	}
	if _, ok := tk.take(id, "/api/a"); ok {
		t.Fatal("a ticket worked twice")
	}
	id, _ = tk.issue(p, "/api/a")
	time.Sleep(60 * time.Millisecond)
	if _, ok := tk.take(id, "/api/a"); ok {
		t.Fatal("an expired ticket worked")
	}
}
