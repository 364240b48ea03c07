package httpapi_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBodyBytesInFlightCapped: while requests hold bodies up to the server's budget, another
// body is answered 503 server_busy with Retry-After, whether its length is declared or not; once
// they end, it is taken (issue 47, row 6: no cap on concurrent large bodies).
func TestBodyBytesInFlightCapped(t *testing.T) {
	const budget = 1 << 20
	e := newEnv(t, envOptions{maxInFlight: budget})
	id := e.createThread(e.alice)
	url := e.srv.URL + "/api/threads/" + id + "/fs/big.bin"
	size := budget * 3 / 4
	// The first upload declares its length and sends half its body: it holds its share meanwhile.
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("PUT", url, pr)
	req.ContentLength = int64(size)
	req.Header.Set("Authorization", "Bearer "+e.alice)
	first := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	if _, err := pw.Write(make([]byte, size/2)); err != nil {
		t.Fatal(err)
	}
	// The write returns once the client took the bytes; the server charges the upload when its
	// handler reads the body, which a loaded machine may schedule after the uploads below.
	for deadline := time.Now().Add(30 * time.Second); e.api.BodyBytesInFlight() < int64(size); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the first upload holds %d bytes after 30 s, want %d", e.api.BodyBytesInFlight(), size)
		}
	}
	cases := []struct {
		name     string
		declared bool
	}{{"declared length", true}, {"chunked", false}}
	put := func(declared bool) *http.Response {
		t.Helper()
		var body io.Reader = strings.NewReader(strings.Repeat("x", size))
		if !declared {
			body = io.MultiReader(body) // no length: sent chunked
		}
		req, _ := http.NewRequest("PUT", e.srv.URL+"/api/threads/"+id+"/fs/other.bin", body)
		req.Header.Set("Authorization", "Bearer "+e.alice)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 503 && !strings.Contains(string(b), `"server_busy"`) {
			t.Errorf("503 body %s", b)
		}
		return resp
	}
	for _, c := range cases {
		resp := put(c.declared)
		if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); resp.StatusCode != 503 || ra < 1 {
			t.Errorf("%s past the budget: %d, Retry-After %q", c.name, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	// Small bodies still fit.
	e.json("PUT", "/api/threads/"+id+"/kv/k", e.alice, `{"a":1}`, 200, nil)
	if _, err := pw.Write(make([]byte, size-size/2)); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	select {
	case code := <-first:
		if code != 201 {
			t.Fatalf("the first upload: %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first upload did not end")
	}
	for _, c := range cases {
		if resp := put(c.declared); resp.StatusCode != 201 {
			t.Errorf("%s once the budget is free: %d", c.name, resp.StatusCode)
		}
	}
}
