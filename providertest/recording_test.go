package providertest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/weft-agents/weft/providertest"
)

func TestParseAndReplay(t *testing.T) {
	req := "POST http://x/v1/chat HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
	resp := "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nX-A: b\r\nContent-Length: 4\r\n\r\n[1 ]"
	trace := "httprr trace v1\n" + itoa(len(req)) + " " + itoa(len(resp)) + "\n" + req + resp
	rec, err := providertest.ParseRecording([]byte(trace))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Exchanges) != 1 || string(rec.Exchanges[0].RequestBody) != "{}" || string(rec.Exchanges[0].ResponseBody) != "[1 ]" {
		t.Fatalf("parsed %+v", rec.Exchanges)
	}
	if _, err := providertest.ParseRecording([]byte("httprr trace v1\n9 9\nshort")); err == nil {
		t.Error("truncated trace parsed")
	}
	srv := providertest.ReplayServer(t, rec)
	r, err := http.Post(srv.URL+"/v1/chat", "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 201 || string(b) != "[1 ]" || r.Header.Get("X-A") != "b" {
		t.Errorf("replayed %d %q %v", r.StatusCode, b, r.Header)
	}
	if got := srv.Received(); len(got) != 1 || string(got[0]) != `{"a":1}` || srv.Requests()[0].Path != "/v1/chat" {
		t.Errorf("received %q", got)
	}
}

func itoa(n int) string {
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}
