package httpapi_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft/httpapi"
)

// TestSlowLoris: a client that sends its headers a byte at a time is cut off after the header
// timeout, and one with headers over the limit is refused; other clients are served meanwhile.
func TestSlowLoris(t *testing.T) {
	e := newEnv(t, envOptions{})
	srv := e.api.HTTPServer(context.Background(), httpapi.Limits{ReadHeaderTimeout: 300 * time.Millisecond, MaxHeaderBytes: 4 << 10})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	closed := make(chan time.Duration, 1)
	go func() {
		io.Copy(io.Discard, c) // returns when the server closes the connection
		closed <- time.Since(start)
	}()
	partial := "GET /api/health HTTP/1.1\r\nHost: x\r\nX-Slow: "
	for i := 0; i < len(partial); i++ {
		if _, err := c.Write([]byte{partial[i]}); err != nil {
			break
		}
		select {
		case d := <-closed:
			if d > 2*time.Second {
				t.Fatalf("closed after %v", d)
			}
			goto served
		case <-time.After(20 * time.Millisecond):
		}
	}
	select {
	case d := <-closed:
		if d > 2*time.Second {
			t.Fatalf("closed after %v", d)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("a slow-loris connection was kept open")
	}
served:
	// Huge headers are refused.
	big, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	big.Write([]byte("GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 16<<10) + "\r\n\r\n"))
	line, _ := bufio.NewReader(big).ReadString('\n')
	if !strings.Contains(line, "431") {
		t.Fatalf("huge headers answered %q", line)
	}
}
