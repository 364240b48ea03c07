package journal_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/journal"
	"github.com/weft-agents/weft/engine/redact"
)

// secret holds characters JSON escapes (`"`, `\`), non-ASCII and digits.
const secret = `S3"k\é9tok`

// captureStore is a store whose transactions note, encoded, every value their function writes.
type captureStore struct {
	weft.Store
	writes []string
}

func (s *captureStore) Tx(_ context.Context, _ string, _ *weft.Fence, fn func(weft.Tx) error) error {
	return fn(captureTx{s: s})
}

type captureTx struct {
	weft.Tx
	s *captureStore
}

func (t captureTx) note(v any) error {
	b, err := json.Marshal(v)
	t.s.writes = append(t.s.writes, string(b))
	return err
}

func (t captureTx) InsertMessage(m *weft.Message) error { return t.note(m) }
func (t captureTx) UpdateMessage(id string, c weft.MessageChange) error {
	return t.note(c)
}
func (t captureTx) PutToolCall(c *weft.ToolCallRecord) error  { return t.note(c) }
func (t captureTx) PutLog(l *weft.LogEntry) error             { return t.note(l) }
func (t captureTx) AppendEvents(evs []weft.EventRecord) error { return t.note(evs) }
func (t captureTx) PushQueue(q *weft.QueuedMessage) error     { return t.note(q) }

// TestCommitterRedactsEveryWrite checks that a transaction of the committer stores no secret in
// any text it writes — a row's content, reasoning, call arguments and metadata (also JSON text
// whose strings hold the secret escaped), a change of a row, a call record's arguments and meta,
// a log's bodies and error, an event's payload, a queued message — while the caller keeps a call
// record's and a log's own texts, and a row is redacted in place.
func TestCommitterRedactsEveryWrite(t *testing.T) {
	st := &captureStore{}
	red := redact.New([]string{secret})
	c := journal.NewCommitter(journal.Config{Store: st, Secrets: secrets{red}})
	enc, _ := json.Marshal(map[string]string{"token": secret}) // the secret as JSON text holds it
	args := string(enc)
	calls := []weft.ToolCall{{ID: "c1", Name: "t", Arguments: args}}
	m := &weft.Message{Content: "a " + secret, Reasoning: secret, ToolCalls: calls, Metadata: map[string]any{"k": []any{secret}}}
	rec := &weft.ToolCallRecord{CallID: "c1", Arguments: args, Meta: enc}
	log := &weft.LogEntry{ID: "l1", RequestBody: enc, ResponseBody: enc, Error: "bad " + secret}
	err := c.Tx(context.Background(), "thr", nil, nil, func(tx weft.Tx) error {
		content, reasoning := "b "+secret, secret
		changed := []weft.ToolCall{{ID: "c2", Arguments: args}}
		for _, err := range []error{
			tx.InsertMessage(m),
			tx.UpdateMessage("m1", weft.MessageChange{Content: &content, Reasoning: &reasoning, ToolCalls: &changed, Metadata: map[string]any{"k": secret}}),
			tx.PutToolCall(rec),
			tx.PutLog(log),
			tx.AppendEvents([]weft.EventRecord{{Type: "x", Data: enc}}),
			tx.PushQueue(&weft.QueuedMessage{Content: secret, Metadata: map[string]any{"k": secret}}),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.writes) != 6 {
		t.Fatalf("%d writes reached the store, want 6", len(st.writes))
	}
	// The secret as a write holds it: escaped once (a string field), or twice (a string field
	// holding JSON text).
	once := strings.Trim(string(mustJSON(t, secret)), `"`)
	twice := strings.Trim(string(mustJSON(t, once)), `"`)
	for _, w := range st.writes {
		if strings.Contains(w, secret) || strings.Contains(w, once) || strings.Contains(w, twice) {
			t.Errorf("the store got the secret: %s", w)
		}
		if !strings.Contains(w, "[redacted]") {
			t.Errorf("the store got a write without its secret's mark: %s", w)
		}
	}
	if m.Content != "a [redacted]" || m.Reasoning != "[redacted]" {
		t.Errorf("the caller's row is %q / %q, want it redacted in place", m.Content, m.Reasoning)
	}
	if calls[0].Arguments != args {
		t.Errorf("the run's calls were changed: %q", calls[0].Arguments)
	}
	if rec.Arguments != args || string(rec.Meta) != string(enc) || string(log.RequestBody) != string(enc) || log.Error != "bad "+secret {
		t.Errorf("the caller's call record or log was changed: %+v %+v", rec, log)
	}
}

// TestCommitterWithoutSecretsWritesAsIs checks that a thread without secrets gets the store's
// own Tx (nothing to redact), and that NoText loads no redactor.
func TestCommitterWithoutSecretsWritesAsIs(t *testing.T) {
	st := &captureStore{}
	loaded := 0
	c := journal.NewCommitter(journal.Config{Store: st, Secrets: countingSecrets{&loaded}})
	for _, red := range []*redact.Redactor{nil, journal.NoText} {
		err := c.Tx(context.Background(), "thr", nil, red, func(tx weft.Tx) error {
			if _, ok := tx.(captureTx); !ok {
				t.Errorf("the function got %T, want the store's own Tx", tx)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if loaded != 1 {
		t.Errorf("the thread's redactor was loaded %d times, want once (for nil only)", loaded)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// secrets gives every thread red.
type secrets struct{ red *redact.Redactor }

func (s secrets) Redactor(context.Context, string) (*redact.Redactor, error) { return s.red, nil }

// countingSecrets gives every thread no secret, counting the loads.
type countingSecrets struct{ n *int }

func (s countingSecrets) Redactor(context.Context, string) (*redact.Redactor, error) {
	*s.n++
	return redact.New(), nil
}
