package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"
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

// TestTickets: a ticket opens one GET of one event stream, once, before it expires; a path that
// is no stream, a long path, a user's ticket past maxTicketsPerUser are refused; revoking the key
// drops its tickets (issue 47, rows 3–5: before, any /api/ path and method took a ticket, and the
// store took any number of any size).
func TestTickets(t *testing.T) {
	const stream = "/api/threads/thr_1/events"
	p := &principal{userID: "u", keyHash: "h1"}
	cases := []struct {
		name         string
		path         string
		method, used string
		wait         time.Duration
		ok           bool
	}{
		{"fresh", stream, "GET", stream, 0, true},
		{"websocket", "/api/threads/thr_1/stream", "GET", "/api/threads/thr_1/stream", 0, true},
		{"global", "/api/events", "GET", "/api/events", 0, true},
		{"another path", stream, "GET", "/api/threads/thr_2/events", 0, false},
		{"another method", stream, "DELETE", stream, 0, false},
		{"post", stream, "POST", stream, 0, false},
		{"expired", stream, "GET", stream, 60 * time.Millisecond, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tk := newTickets(50 * time.Millisecond)
			id, _, err := tk.issue(p, c.path)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(c.wait)
			got, ok := tk.take(id, c.method, c.used)
			if ok != c.ok || ok && got.userID != "u" {
				t.Fatalf("%s %s: %v, want %v", c.method, c.used, ok, c.ok)
			}
			if _, again := tk.take(id, "GET", c.path); again {
				t.Fatal("a ticket worked after it was tried")
			}
		})
	}
	tk := newTickets(time.Minute)
	for _, path := range []string{"/api/keys", "/api/threads/x", "/api/threads/x/fs/a.html", "/api/threads/a/b/events",
		"/api/threads/" + strings.Repeat("x", maxTicketPath) + "/events", "/mcp"} {
		if _, _, err := tk.issue(p, path); err == nil || err.(*apiError).status != http.StatusBadRequest {
			t.Errorf("a ticket for %.60s: %v, want 400", path, err)
		}
	}
	for i := range maxTicketsPerUser {
		if _, _, err := tk.issue(p, stream); err != nil {
			t.Fatalf("ticket %d: %v", i, err)
		}
	}
	_, _, err := tk.issue(p, stream)
	if ae, ok := err.(*apiError); !ok || ae.status != http.StatusTooManyRequests || ae.retryAfter <= 0 {
		t.Fatalf("ticket past the cap: %v, want 429 with Retry-After", err)
	}
	if _, _, err := tk.issue(&principal{userID: "v"}, stream); err != nil {
		t.Fatalf("another user's ticket: %v", err)
	}
	tk.revoke("h1")
	if len(tk.m) != 1 {
		t.Fatalf("%d tickets left after revoking the key, want the other user's 1", len(tk.m))
	}
}

// TestDecodeStrictInPlaceLikeDecoder checks that the bodies decoded in place decode as the decoder
// decoded them, and that the others are refused with the decoder's reasons.
func TestDecodeStrictInPlaceLikeDecoder(t *testing.T) {
	for _, body := range decodeSeeds {
		checkLikeDecoder(t, []byte(body))
	}
}

var decodeSeeds = []string{
	`{"content":"hi"}`, ` {"content" : "hi" , "role":"user"} `, `{"content":"a\"b\\c\u00e9","attachments":[{"name":"x","data":"aGk="}]}`,
	`{"content":"hi","Content":"x"}`, `{"CONTENT":"hi"}`, `{"content":"hi","nope":1}`, `{"attachments":[{"name":"x","nope":{"a":[1,{"b":2}]}}]}`,
	`{"attachments":null}`, `{"attachments":[null]}`, `{"attachments":{}}`, `{"content":1}`, `{"content":"hi"} x`, `{"content":"hi"} {}`,
	`{"content":"hi",}`, `{"cont\u0065nt":"hi"}`, `{"content":"x","content":"y"}`, `{"silent":true,"if_busy":"queue"}`, `null`, `[]`,
	`{"attachments":[{"name":"x","data":"aGk="},{"name":"y","data":"!!"}]}`, `{"content":"[{\"a\":1}]"}`, `{"":1}`, `{"-":1}`,
}

func checkLikeDecoder(t *testing.T, b []byte) {
	t.Helper()
	// Padded with spaces to the size decoded in place (the decoder reports the same offsets).
	b = append(b, bytes.Repeat([]byte(" "), inPlaceBody)...)
	var got, want messageBody
	gerr := decodeStrict(b, &got)
	werr := decodeStream(b, &want) // what every body went through before
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		t.Fatalf("%q: error %v, the decoder's %v", b, gerr, werr)
	}
	if gerr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decoded %+v, the decoder %+v", b, got, want)
	}
}

// TestDecodeInPlaceKeepsLongStrings: a long string that needs no unescaping is decoded as the
// body's own bytes, not copied (a posted message's content, at the top or in a new thread's
// message); the others decode as the decoder decodes them.
func TestDecodeInPlaceKeepsLongStrings(t *testing.T) {
	long := strings.Repeat("Where is order 42? ", inPlaceString/19+1)
	inBody := func(b []byte, s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		start := uintptr(unsafe.Pointer(&b[0]))
		return p >= start && p < start+uintptr(len(b))
	}
	for _, c := range []struct {
		name, body string
		kept       bool
	}{
		{"plain", `{"content":"` + long + `","role":"user"}`, true},
		{"spaced", ` { "if_busy" : "queue" , "content" : "` + long + `" } `, true},
		{"escaped", `{"content":"` + long + `\n"}`, false},
		{"invalid UTF-8", `{"content":"` + long + "\xff" + `"}`, false},
		{"twice", `{"content":"` + long + `","content":"` + long + `x"}`, false},
		{"twice in other words", `{"content":"` + long + `","cont\u0065nt":"x"}`, false},
		{"short", `{"content":"hi","attachments":[{"name":"` + long + `","data":"aGk="}]}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := []byte(c.body)
			checkLikeDecoder(t, b)
			var got messageBody
			if err := decodeStrict(b, &got); err != nil {
				t.Fatal(err)
			}
			if inBody(b, got.Content) != c.kept {
				t.Fatalf("content in the body: %v, want %v", !c.kept, c.kept)
			}
		})
	}
	b := []byte(`{"agent":"a","message":{"content":"` + long + `"},"label":"x"}`)
	var got, want createThreadBody
	if err := decodeStrict(b, &got); err != nil {
		t.Fatal(err)
	}
	if err := decodeStream(b, &want); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %+v, the decoder %+v (%v)", got, want, err)
	}
	if !inBody(b, got.Message.Content) {
		t.Fatal("a new thread's message was copied out of the body")
	}
}

// FuzzDecodeStrictInPlace: whatever the body, decodeStrict decides as the decoder does, its
// long strings left in the body or not.
func FuzzDecodeStrictInPlace(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"content":"~","role":"user","content":"~"}`))
	f.Add([]byte(`{"attachments":[{"name":"~"}],"content":"a~\u00e9"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkLikeDecoder(t, b)
		// Each ~ made long: its strings are decoded in place.
		checkLikeDecoder(t, bytes.ReplaceAll(b, []byte("~"), bytes.Repeat([]byte("~"), inPlaceString)))
	})
}

// BenchmarkDecodeMessage decodes a posted message of 1 MiB in place and through the decoder
// (what every body went through before).
func BenchmarkDecodeMessage(b *testing.B) {
	body := []byte(`{"content":"` + strings.Repeat("Where is order 42? ", 1<<20/19) + `","if_busy":"queue"}`)
	for _, bc := range []struct {
		name   string
		decode func([]byte, any) error
	}{{"in place", decodeStrict}, {"decoder", decodeStream}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var m messageBody
				if err := bc.decode(body, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
