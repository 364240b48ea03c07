package a2a

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

func TestStateOf(t *testing.T) {
	for _, c := range []struct {
		r    weft.StopReason
		want sdk.TaskState
	}{
		{weft.StopOnResponse, sdk.TaskStateCompleted},
		{weft.StopTool, sdk.TaskStateCompleted},
		{weft.StopSession, sdk.TaskStateCompleted},
		{weft.StopAwaitingHuman, sdk.TaskStateInputRequired},
		{weft.StopAwaitingApproval, sdk.TaskStateInputRequired},
		{weft.StopAbortedByUser, sdk.TaskStateCanceled},
		{weft.StopAborted, sdk.TaskStateCanceled},
		{weft.StopInterrupted, sdk.TaskStateCanceled},
		{weft.StopStepError, sdk.TaskStateFailed},
		{weft.StopBudgetExceeded, sdk.TaskStateFailed},
		{weft.StopMaxTotalSteps, sdk.TaskStateFailed},
	} {
		if got := StateOf(c.r); got != c.want {
			t.Errorf("StateOf(%s) = %s, want %s", c.r, got, c.want)
		}
	}
}

func userMsg(id, text string, meta map[string]any) engine.Event {
	return engine.Event{Type: "message", Data: engine.MessageData{Message: weft.Message{ID: id, Role: weft.RoleUser, Content: text,
		Status: weft.MessageCompleted, Metadata: meta}}}
}

func reply(id, text string) engine.Event {
	return engine.Event{Type: "message", Data: engine.MessageData{Message: weft.Message{ID: id, Role: weft.RoleAssistant, Content: text,
		Status: weft.MessageCompleted, Prompt: "p"}}}
}

func stopped(r weft.StopReason) engine.Event {
	return engine.Event{Type: "run_stopped", Data: engine.RunStopped{Reason: r, RunID: "run_1"}}
}

// TestFold: how a thread's events become tasks.
func TestFold(t *testing.T) {
	const th = "thr_1"
	t1 := TaskID(th, "msg_1")
	for _, c := range []struct {
		name   string
		events []engine.Event
		// want is each task's state and history length, in order.
		want []string
	}{
		{"answered", []engine.Event{userMsg("msg_1", "hi", nil), reply("msg_a", "hello"), stopped(weft.StopOnResponse)},
			[]string{"TASK_STATE_COMPLETED 2"}},
		{"working", []engine.Event{userMsg("msg_1", "hi", nil), reply("msg_a", "thinking")},
			[]string{"TASK_STATE_WORKING 2"}},
		{"two tasks", []engine.Event{userMsg("msg_1", "hi", nil), reply("msg_a", "hello"), stopped(weft.StopOnResponse),
			userMsg("msg_2", "again", nil), stopped(weft.StopStepError)},
			[]string{"TASK_STATE_COMPLETED 2", "TASK_STATE_FAILED 1"}},
		{"input then continued", []engine.Event{userMsg("msg_1", "do it", nil), stopped(weft.StopAwaitingApproval),
			userMsg("msg_2", "yes", map[string]any{MetaTask: string(t1)}), reply("msg_a", "done"), stopped(weft.StopOnResponse)},
			[]string{"TASK_STATE_COMPLETED 3"}},
		{"continuation of a finished task starts a new one", []engine.Event{userMsg("msg_1", "hi", nil), stopped(weft.StopOnResponse),
			userMsg("msg_2", "more", map[string]any{MetaTask: string(t1)}), stopped(weft.StopOnResponse)},
			[]string{"TASK_STATE_COMPLETED 1", "TASK_STATE_COMPLETED 1"}},
		{"canceled", []engine.Event{userMsg("msg_1", "hi", nil), stopped(weft.StopAbortedByUser)},
			[]string{"TASK_STATE_CANCELED 1"}},
		{"a file is an artifact", []engine.Event{userMsg("msg_1", "hi", nil),
			{Type: "file_changed", Data: engine.Fields{"path": "/out/a.txt", "op": "write"}},
			{Type: "file_changed", Data: engine.Fields{"path": "/out/a.txt", "op": "write"}}, stopped(weft.StopOnResponse)},
			[]string{"TASK_STATE_COMPLETED 1 artifacts=1"}},
		{"sub-prompt and silent rows are not part of it", []engine.Event{userMsg("msg_1", "hi", nil),
			{Type: "message", Data: engine.MessageData{Message: weft.Message{ID: "msg_s", Role: weft.RoleAssistant, Content: "inner", Depth: 1, Status: weft.MessageCompleted}}},
			{Type: "message", Data: engine.MessageData{Message: weft.Message{ID: "msg_t", Role: weft.RoleUser, Content: "quiet", Silent: true, Status: weft.MessageCompleted}}},
			stopped(weft.StopOnResponse)},
			[]string{"TASK_STATE_COMPLETED 1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFold(th, nil)
			for i, ev := range c.events {
				ev.Seq = int64(i + 1)
				ev.ThreadID = th
				f.add(ev)
			}
			var got []string
			for _, id := range f.order {
				tk := f.snapshot(id, nil)
				s := string(tk.Status.State) + " " + strconv.Itoa(len(tk.History))
				if len(tk.Artifacts) > 0 {
					s += " artifacts=" + strconv.Itoa(len(tk.Artifacts))
				}
				got = append(got, s)
			}
			if len(got) != len(c.want) {
				t.Fatalf("tasks %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("tasks %v, want %v", got, c.want)
				}
			}
		})
	}
}

// TestFoldInterrupted: a task whose run a new message stopped is canceled, its status message
// and metadata say by which message; after a rollback the rows removed leave its history.
func TestFoldInterrupted(t *testing.T) {
	for _, rollback := range []bool{false, true} {
		f := newFold("thr_1", nil)
		evs := []engine.Event{userMsg("msg_1", "write an essay", nil), reply("msg_a", "Once upon"),
			{Type: "run_interrupted", Data: engine.Fields{"run_id": "run_1", "message_id": "msg_2", "rollback": rollback}}}
		if rollback {
			evs = append(evs, engine.Event{Type: "message_deleted", Data: engine.Fields{"message_id": "msg_a"}})
		}
		var last []update
		for i, ev := range append(evs, stopped(weft.StopInterrupted)) {
			ev.Seq, ev.ThreadID = int64(i+1), "thr_1"
			last = f.add(ev)
		}
		task := f.snapshot(TaskID("thr_1", "msg_1"), nil)
		wantHistory, wantText := 2, "interrupted by a new message (msg_2)"
		if rollback {
			wantHistory, wantText = 1, wantText+"; what this task had added was rolled back"
		}
		if task.Status.State != sdk.TaskStateCanceled || len(task.History) != wantHistory || task.Status.Message == nil ||
			task.Status.Message.Parts[0].Text() != wantText {
			t.Errorf("rollback %v: %s, %d in history, status %+v", rollback, task.Status.State, len(task.History), task.Status.Message)
		}
		if len(last) != 1 {
			t.Fatalf("rollback %v: updates %+v", rollback, last)
		}
		meta := last[0].event.Meta()
		removed, _ := meta["weft_removed_message_ids"].([]string)
		if meta["weft_interrupted_by"] != "msg_2" || meta["weft_rolled_back"] != rollback || meta["weft_stop_reason"] != "interrupted" ||
			(rollback && (len(removed) != 1 || removed[0] != "msg_a")) || (!rollback && len(removed) != 0) {
			t.Errorf("rollback %v: the final event's metadata %v", rollback, meta)
		}
	}
}

// TestFoldSubmitted: a queued message is a submitted task, and the stored one replaces it once.
func TestFoldSubmitted(t *testing.T) {
	f := newFold("thr_1", nil)
	f.submitted(weft.Message{ID: "msg_1", Role: weft.RoleUser, Content: "hi"})
	id := TaskID("thr_1", "msg_1")
	if s := f.snapshot(id, nil); s.Status.State != sdk.TaskStateSubmitted || len(s.History) != 1 {
		t.Fatalf("queued: %+v", s)
	}
	ups := f.add(engine.Event{Seq: 3, ThreadID: "thr_1", Type: "message", Data: userMsg("msg_1", "hi", nil).Data})
	if s := f.snapshot(id, nil); s.Status.State != sdk.TaskStateWorking || len(s.History) != 1 || s.Metadata[MetaSeq] != int64(3) {
		t.Fatalf("stored: %+v", s)
	}
	if len(ups) != 1 || ups[0].task != id || ups[0].event.Meta()[MetaSeq] != int64(3) {
		t.Fatalf("updates: %+v", ups)
	}
	one := 0
	if s := f.snapshot(id, &one); len(s.History) != 0 {
		t.Fatalf("historyLength 0: %+v", s.History)
	}
}

func TestParseTaskID(t *testing.T) {
	for _, c := range []struct {
		id         string
		th, m, err string
	}{
		{"thr_1:msg_2", "thr_1", "msg_2", ""},
		{"thr_1", "", "", "not THREAD:MESSAGE"},
		{"x:msg_2", "", "", "not THREAD:MESSAGE"},
		{"thr_1:msg_2:z", "", "", "not THREAD:MESSAGE"},
		{"thr_:msg_", "", "", "not THREAD:MESSAGE"},
		{"thr_1/x:msg_2", "", "", "not THREAD:MESSAGE"},
	} {
		th, m, err := ParseTaskID(sdk.TaskID(c.id))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want %q", c.id, err, c.err)
			}
			continue
		}
		if err != nil || th != c.th || m != c.m {
			t.Errorf("%q: %q %q %v", c.id, th, m, err)
		}
	}
}

// FuzzParseTaskID: any string parses or is refused; a parsed id rebuilds to itself.
func FuzzParseTaskID(f *testing.F) {
	for _, s := range []string{"thr_1:msg_2", "", ":", "thr_:msg_", "thr_a:msg_b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		th, m, err := ParseTaskID(sdk.TaskID(s))
		if err == nil && TaskID(th, m) != sdk.TaskID(s) {
			t.Fatalf("%q parsed to %q %q", s, th, m)
		}
	})
}

// TestNewMessage: how an A2A message becomes a Weft message, and what is refused.
func TestNewMessage(t *testing.T) {
	raw := sdk.NewRawPart([]byte("%PDF-1.4"))
	raw.Filename, raw.MediaType = "a.pdf", "application/pdf"
	url := sdk.NewFileURLPart("https://x.test/b.png", "image/png")
	for _, c := range []struct {
		name    string
		parts   []*sdk.Part
		content string
		files   int
		err     string
	}{
		{"text", []*sdk.Part{sdk.NewTextPart("hi"), sdk.NewTextPart("there")}, "hi\n\nthere", 0, ""},
		{"data", []*sdk.Part{sdk.NewDataPart(map[string]any{"a": 1})}, `{"a":1}`, 0, ""},
		{"raw file", []*sdk.Part{sdk.NewTextPart("see"), raw}, "see", 1, ""},
		{"url file", []*sdk.Part{url}, "[file https://x.test/b.png (image/png)]", 0, ""},
		{"empty", []*sdk.Part{sdk.NewTextPart("  ")}, "", 0, "no text and no file"},
		{"no parts", nil, "", 0, "no text and no file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			nm, err := NewMessage(&sdk.Message{ID: "m1", Role: sdk.MessageRoleUser, Parts: c.parts})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || nm.Content != c.content || len(nm.Attachments) != c.files || nm.Metadata["a2a_message_id"] != "m1" {
				t.Fatalf("%+v %v", nm, err)
			}
		})
	}
	// The message's weft_if_busy metadata is its double-texting policy.
	hi := []*sdk.Part{sdk.NewTextPart("hi")}
	for v, want := range map[any]string{"rollback": "rollback", "interrupt": "interrupt", "later": "error", "": "error", 3: "error"} {
		nm, err := NewMessage(&sdk.Message{ID: "m1", Role: sdk.MessageRoleUser, Parts: hi, Metadata: map[string]any{MetaIfBusy: v}})
		if got := string(nm.IfBusy); (err != nil) != (want == "error") || (err == nil && got != want) {
			t.Errorf("weft_if_busy %v: %q, %v", v, got, err)
		}
	}
}

// FuzzNewMessage: any JSON message is converted or refused with invalid params, never a panic.
func FuzzNewMessage(f *testing.F) {
	for _, s := range []string{`{"messageId":"1","role":"ROLE_USER","parts":[{"text":"hi"}]}`,
		`{"messageId":"1","role":"ROLE_USER","parts":[{"raw":"aGk=","filename":"a"}]}`, `{"parts":[{}]}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m sdk.Message
		if json.Unmarshal(b, &m) != nil {
			return
		}
		nm, err := NewMessage(&m)
		if err == nil && nm.Content == "" && len(nm.Attachments) == 0 {
			t.Fatalf("accepted an empty message from %s", b)
		}
	})
}
