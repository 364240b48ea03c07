// Command client talks to a running `weft serve` over plain HTTP: it creates a thread, posts a
// message, and prints the reply as it streams (Server-Sent Events), reconnecting with the last
// event id if the connection drops, so that nothing is missed.
//
//	go run ./examples/client -server http://127.0.0.1:8080 -key "$KEY" -agent support "Where is order 42?"
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	server := flag.String("server", envOr("WEFT_SERVER", "http://127.0.0.1:8080"), "server URL (env WEFT_SERVER)")
	key := flag.String("key", os.Getenv("WEFT_API_KEY"), "API key (env WEFT_API_KEY)")
	agent := flag.String("agent", "support", "agent to talk to")
	flag.Parse()
	msg := strings.Join(flag.Args(), " ")
	if msg == "" {
		fmt.Fprintln(os.Stderr, "usage: client [-server URL] [-key KEY] [-agent NAME] MESSAGE")
		os.Exit(2)
	}
	c := &Client{Base: strings.TrimSuffix(*server, "/"), Key: *key, HTTP: http.DefaultClient}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	reply, err := c.Ask(ctx, *agent, msg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
	fmt.Printf("\n[%s]\n", reply.StopReason)
}

// Client is a minimal Weft API client.
type Client struct {
	// Base is the server URL without /api.
	Base string
	// Key is the API key sent as a Bearer token.
	Key string
	// HTTP sends the requests.
	HTTP *http.Client
}

// Reply is how a turn ended.
type Reply struct {
	// ThreadID is the thread created for the turn.
	ThreadID string
	// Text is the streamed reply text of the top-level assistant messages.
	Text string
	// StopReason is the run's stop reason.
	StopReason string
}

// Ask creates a thread of agent, sends text, and streams the reply's text to out until the run
// stops.
func (c *Client) Ask(ctx context.Context, agent, text string, out io.Writer) (*Reply, error) {
	var created struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := c.call(ctx, "POST", "/api/threads", map[string]any{"agent": agent}, &created); err != nil {
		return nil, err
	}
	r := &Reply{ThreadID: created.Thread.ID}
	// Subscribe before posting; the stream starts with the thread's recorded events anyway, so
	// nothing is lost either way.
	events := make(chan event)
	errc := make(chan error, 1)
	go func() { errc <- c.stream(ctx, r.ThreadID, events) }()
	if err := c.call(ctx, "POST", "/api/threads/"+r.ThreadID+"/messages", map[string]any{"content": text}, nil); err != nil {
		return nil, err
	}
	for {
		select {
		case ev := <-events:
			switch ev.Type {
			case "message_chunk":
				if d, _ := ev.Data["depth"].(float64); d == 0 {
					delta, _ := ev.Data["delta"].(string)
					r.Text += delta
					fmt.Fprint(out, delta)
				}
			case "run_stopped":
				r.StopReason, _ = ev.Data["reason"].(string)
				return r, nil
			}
		case err := <-errc:
			return r, err
		}
	}
}

// event is one stream event.
type event struct {
	Type string
	Seq  string
	Data map[string]any
}

// stream reads the thread's SSE stream into events, reconnecting with Last-Event-ID after a
// dropped connection, until ctx ends.
func (c *Client) stream(ctx context.Context, threadID string, events chan<- event) error {
	last := ""
	for attempt := 0; ; attempt++ {
		err := c.streamOnce(ctx, threadID, &last, events)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var status statusError
		if errors.As(err, &status) && status < 500 {
			return err // refused (bad key, unknown thread): reconnecting will not help
		}
		time.Sleep(min(time.Duration(attempt+1)*200*time.Millisecond, 5*time.Second))
	}
}

type statusError int

func (s statusError) Error() string { return fmt.Sprintf("HTTP %d", int(s)) }

func (c *Client) streamOnce(ctx context.Context, threadID string, last *string, events chan<- event) error {
	req, err := http.NewRequestWithContext(ctx, "GET", c.Base+"/api/threads/"+threadID+"/events", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	if *last != "" {
		req.Header.Set("Last-Event-ID", *last)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return statusError(resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var ev event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Type != "" {
				if ev.Seq != "" {
					*last = ev.Seq
				}
				select {
				case events <- ev:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			ev = event{}
		case strings.HasPrefix(line, "event: "):
			ev.Type = line[len("event: "):]
		case strings.HasPrefix(line, "id: "):
			ev.Seq = line[len("id: "):]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[len("data: "):]), &ev.Data); err != nil {
				return fmt.Errorf("a malformed event: %w", err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.ErrUnexpectedEOF
}

// call sends a JSON request and decodes the JSON answer into out (when non-nil); an error answer
// becomes an error with the API's code and message.
func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error struct{ Code, Message string }
		}
		_ = json.Unmarshal(data, &e)
		return fmt.Errorf("%s %s: %d %s: %s", method, path, resp.StatusCode, e.Error.Code, e.Error.Message)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
