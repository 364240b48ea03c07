package intake_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine/intake"
	"github.com/weft-agents/weft/memstore"
)

// TestCheck: a posted message is a user message by default, needs content or attachments and a
// known if_busy policy; queue is stored as no policy, and a limit of the thread's messages is left
// to the push (MaxMessages) for a message without attachments.
func TestCheck(t *testing.T) {
	in := &intake.Intake{Clock: weft.SystemClock{}, MaxThreadMessages: 10}
	for _, c := range []struct {
		name string
		m    weft.NewMessage
		err  string // a part of the error; "" = accepted
	}{
		{"default role", weft.NewMessage{Content: "hi"}, ""},
		{"system", weft.NewMessage{Role: weft.RoleSystem, Content: "hi"}, ""},
		{"tool role", weft.NewMessage{Role: weft.RoleTool, Content: "hi"}, "user, assistant or system"},
		{"empty", weft.NewMessage{}, "content or attachments"},
		{"unknown if_busy", weft.NewMessage{Content: "hi", IfBusy: "later"}, "if_busy"},
		{"interrupt", weft.NewMessage{Content: "hi", IfBusy: weft.IfBusyInterrupt}, ""},
	} {
		q, err := in.Check(context.Background(), "thr_1", c.m)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || weft.ErrorCode(err) != weft.EInvalid {
				t.Errorf("%s: %v, want EInvalid with %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if q.ThreadID != "thr_1" || q.Role == "" || q.MaxMessages != 10 || q.IfBusy != c.m.IfBusy {
			t.Errorf("%s: queued %+v", c.name, q)
		}
	}
}

// TestRefusal: a push the store refused for the thread's length says the limit and how to raise
// it; a thread at the limit refuses a message with attachments before anything is written.
func TestRefusal(t *testing.T) {
	ctx := context.Background()
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	th := &weft.Thread{ID: "thr_full", RootID: "thr_full", Agent: "a"}
	if err := st.CreateThread(ctx, th, nil); err != nil {
		t.Fatal(err)
	}
	in := &intake.Intake{Store: st, Clock: weft.SystemClock{}, MaxThreadMessages: 1, Host: noRuns{}}
	if _, err := in.Enqueue(ctx, th.ID, weft.NewMessage{Content: "one"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Tx(ctx, th.ID, nil, func(tx weft.Tx) error {
		return tx.InsertMessage(&weft.Message{Role: weft.RoleUser, Content: "one", Status: weft.MessageCompleted})
	}); err != nil {
		t.Fatal(err)
	}
	_, err = in.Enqueue(ctx, th.ID, weft.NewMessage{Content: "two"})
	if err == nil || !strings.Contains(err.Error(), "the limit is 1") || weft.ErrorCode(err) != weft.EInvalid {
		t.Errorf("a message past the limit: %v", err)
	}
	_, err = in.Check(ctx, th.ID, weft.NewMessage{Content: "three", Attachments: []weft.ToolAttachment{{Name: "a.txt", Data: []byte("x")}}})
	if err == nil || !strings.Contains(err.Error(), "holds 1 messages") {
		t.Errorf("a message with attachments past the limit: %v", err)
	}
}

// noRuns is a Host of a process that runs no thread and stores no attachment.
type noRuns struct{}

func (noRuns) QueueWithFiles(context.Context, *weft.QueuedMessage, []weft.ToolAttachment) error {
	return errors.New("no attachments here")
}
func (noRuns) Queued(string, bool) intake.Run { return nil }
func (noRuns) Running(string) intake.Run      { return nil }
