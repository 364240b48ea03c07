package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft/envcrypt"
	"github.com/weft-agents/weft/internal/pgtest"
)

// TestRemoteNodeStream pins what docs/postgres.md says a stream carries on a node that does not
// run the thread: every recorded event, the same ids in the same order as on the running node,
// and no text deltas (message_chunk, reasoning_chunk), which live only in the running process;
// the whole text comes in the `message` event.
func TestRemoteNodeStream(t *testing.T) {
	_, dsn := pgtest.Schema(t)
	dir := t.TempDir()
	env := []string{"WEFT_ENCRYPTION_KEY=" + envcrypt.EncodeKey(envcrypt.NewKey()), "WEFT_ADMIN_KEY=" + clusterAdminKey}
	args := []string{"--dir", repo("httpapi/testdata/agents"), "--db", dsn, "--model-script", chatScript(t, 1)}
	a := startServer(t, dir, env, append(args, "--node-id", "a")...)
	b := startServer(t, dir, env, append(args, "--node-id", "b")...)
	var created struct {
		Thread struct{ ID string } `json:"thread"`
	}
	a.must("POST", "/api/threads", clusterAdminKey, `{"agent":"chat","env":{"TOKEN":"`+e2eSecret+`"}}`, 201, &created)
	id := created.Thread.ID
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	streams := map[string]<-chan sseFrame{
		"a": openSSE(t, ctx, a.base+"/api/threads/"+id+"/events", clusterAdminKey, ""),
		"b": openSSE(t, ctx, b.base+"/api/threads/"+id+"/events", clusterAdminKey, ""),
	}
	time.Sleep(300 * time.Millisecond) // both subscriptions are live before the run starts
	a.must("POST", "/api/threads/"+id+"/messages", clusterAdminKey, `{"content":"hello"}`, 202, nil)
	got := map[string][]sseFrame{}
	for node, ch := range streams {
		got[node] = framesUntil(t, ch, "run_stopped")
	}
	recorded := func(frames []sseFrame) (ids []string, deltas int) {
		for _, f := range frames {
			if f.typ == "message_chunk" || f.typ == "reasoning_chunk" {
				deltas++
				continue
			}
			ids = append(ids, f.typ+"#"+f.id)
		}
		return ids, deltas
	}
	idsA, deltasA := recorded(got["a"])
	idsB, deltasB := recorded(got["b"])
	// Exactly one node ran the thread: its stream has the deltas, the other's has none.
	if (deltasA == 0) == (deltasB == 0) {
		t.Fatalf("deltas: node a %d, node b %d; want them on the running node only", deltasA, deltasB)
	}
	if !slices.Equal(idsA, idsB) {
		t.Fatalf("recorded events differ:\na: %v\nb: %v", idsA, idsB)
	}
	remote := got["a"]
	if deltasA > 0 {
		remote = got["b"]
	}
	var text string
	for _, f := range remote {
		if f.typ == "message" {
			if m, ok := f.data["message"].(map[string]any); ok && m["role"] == "assistant" {
				text, _ = m["content"].(string)
			}
		}
	}
	if !strings.HasPrefix(text, "Done. The token was") {
		t.Errorf("the remote stream's assistant message: %q\n%v", text, idsB)
	}
}
