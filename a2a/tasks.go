package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/weft-agents/weft"
	"github.com/weft-agents/weft/engine"
)

// MetaTask is the metadata key of a user message that continues a task waiting for input: its
// value is the task's id.
const MetaTask = "a2a_task_id"

// MetaSeq is the metadata key, on every A2A event and task the server sends, of the thread's
// event sequence number it reflects: a client can tell that nothing was repeated.
const MetaSeq = "weft_event_seq"

// TaskID is the id of the task a message starts in a thread: THREAD:MESSAGE.
func TaskID(threadID, messageID string) sdk.TaskID {
	return sdk.TaskID(threadID + ":" + messageID)
}

// ParseTaskID splits a task id into the thread and the message that started the task.
func ParseTaskID(id sdk.TaskID) (threadID, messageID string, err error) {
	t, m, ok := strings.Cut(string(id), ":")
	if !ok || !strings.HasPrefix(t, "thr_") || !strings.HasPrefix(m, "msg_") || len(t) < 5 || len(m) < 5 ||
		strings.ContainsAny(t+m, ":/ \t\r\n") {
		return "", "", fmt.Errorf("%w: task id %q is not THREAD:MESSAGE (thr_…:msg_…)", sdk.ErrTaskNotFound, string(id))
	}
	return t, m, nil
}

// taskState is where a task stands, derived from the thread's events.
type taskState struct {
	task *sdk.Task
	// reply is the agent's latest reply in the task (the status message of a finished task).
	reply *sdk.Message
	// files are the artifacts' indexes by path.
	files map[string]int
}

// An update is an A2A event for one task, produced by folding one thread event.
type update struct {
	task  sdk.TaskID
	event sdk.Event
}

// fold derives a thread's tasks from its events, in order. A task starts with each top-level
// user message (not silent) that does not continue a task; a user message whose metadata names
// a task waiting for input (MetaTask) continues it. A task is open from its message until the
// next run stop, whose reason gives its state.
type fold struct {
	thread string
	// fileURL is the URL of a thread file (the API's file route), "" for none.
	fileURL func(thread, p string) string
	tasks   map[sdk.TaskID]*taskState
	order   []sdk.TaskID
	open    []sdk.TaskID
	seq     int64
	// viaA2A records that a user message came through A2A (it carries a2a_message_id).
	viaA2A bool
	// intr is the run_interrupted event of the run in progress (nil when none came): its stop
	// cancels the open tasks.
	intr engine.Fields
	// removed are the rows a rollback deleted before the stop, by the open tasks' run.
	removed []string
}

func newFold(thread string, fileURL func(thread, p string) string) *fold {
	return &fold{thread: thread, fileURL: fileURL, tasks: map[sdk.TaskID]*taskState{}}
}

// add folds one event and returns the A2A events it means for the tasks it touches.
func (f *fold) add(ev engine.Event) []update {
	if ev.Seq > 0 {
		f.seq = ev.Seq
	}
	var out []update
	emit := func(id sdk.TaskID, e sdk.Event) {
		e.SetMeta(MetaSeq, ev.Seq)
		out = append(out, update{id, e})
	}
	switch d := ev.Data.(type) {
	case engine.MessageData:
		m := d.Message
		if m.Depth != 0 || m.Silent || m.Status == weft.MessageFailed {
			return nil
		}
		switch m.Role {
		case weft.RoleUser:
			f.note(m)
			id := TaskID(f.thread, m.ID)
			if cont, _ := m.Metadata[MetaTask].(string); cont != "" {
				if t := f.tasks[sdk.TaskID(cont)]; t != nil && !t.task.Status.State.Terminal() {
					id = sdk.TaskID(cont)
				}
			}
			t := f.task(id, m)
			t.task.Status = sdk.TaskStatus{State: sdk.TaskStateWorking, Timestamp: timePtr(m)}
			if !containsID(f.open, id) {
				f.open = append(f.open, id)
			}
			emit(id, &sdk.TaskStatusUpdateEvent{TaskID: id, ContextID: f.thread, Status: t.task.Status})
		case weft.RoleAssistant:
			if m.Content == "" && len(m.Attachments) == 0 {
				return nil
			}
			for _, id := range f.open {
				t := f.tasks[id]
				msg := f.message(m, id, sdk.MessageRoleAgent)
				t.task.History = append(t.task.History, msg)
				t.reply = msg
				t.task.Status = sdk.TaskStatus{State: sdk.TaskStateWorking, Message: msg, Timestamp: timePtr(m)}
				emit(id, &sdk.TaskStatusUpdateEvent{TaskID: id, ContextID: f.thread, Status: t.task.Status})
			}
		}
	case engine.ToolStarted, engine.ToolCompleted:
		var name, what string
		depth := 0
		if s, ok := d.(engine.ToolStarted); ok {
			name, what, depth = s.Name, "tool_started", s.Depth
		} else {
			c := d.(engine.ToolCompleted)
			name, what, depth = c.Name, "tool_completed", c.Depth
		}
		if depth != 0 {
			return nil
		}
		for _, id := range f.open {
			e := &sdk.TaskStatusUpdateEvent{TaskID: id, ContextID: f.thread, Status: sdk.TaskStatus{State: sdk.TaskStateWorking}}
			e.SetMeta("weft_event", what)
			e.SetMeta("weft_tool", name)
			emit(id, e)
		}
	case engine.Fields:
		switch ev.Type {
		case "run_interrupted":
			f.intr = d
			return nil
		case "message_deleted":
			f.deleted(d)
			return nil
		case "file_changed":
		default:
			return nil
		}
		p, _ := d["path"].(string)
		op, _ := d["op"].(string)
		if p == "" || op == "delete" || op == "remove" {
			return nil
		}
		for _, id := range f.open {
			t := f.tasks[id]
			art := f.artifact(p)
			if i, ok := t.files[p]; ok {
				t.task.Artifacts[i] = art
			} else {
				t.files[p] = len(t.task.Artifacts)
				t.task.Artifacts = append(t.task.Artifacts, art)
			}
			emit(id, &sdk.TaskArtifactUpdateEvent{TaskID: id, ContextID: f.thread, Artifact: art, LastChunk: true})
		}
	case engine.RunStopped:
		for _, id := range f.open {
			t := f.tasks[id]
			state := StateOf(d.Reason)
			st := sdk.TaskStatus{State: state, Message: t.reply}
			if state == sdk.TaskStateFailed || state == sdk.TaskStateCanceled {
				text := string(d.Reason)
				if d.Error != "" {
					text += ": " + d.Error
				}
				if d.Reason == weft.StopInterrupted {
					text = f.interruptText()
				}
				st.Message = &sdk.Message{ID: "stop_" + d.RunID + "_" + string(id), ContextID: f.thread, TaskID: id,
					Role: sdk.MessageRoleAgent, Parts: sdk.ContentParts{sdk.NewTextPart(text)}}
			}
			t.task.Status = st
			e := &sdk.TaskStatusUpdateEvent{TaskID: id, ContextID: f.thread, Status: st}
			e.SetMeta("weft_stop_reason", string(d.Reason))
			if d.Reason == weft.StopInterrupted && f.intr != nil {
				by, _ := f.intr["message_id"].(string)
				rollback, _ := f.intr["rollback"].(bool)
				e.SetMeta("weft_interrupted_by", by)
				e.SetMeta("weft_rolled_back", rollback)
				e.SetMeta("weft_removed_message_ids", append([]string{}, f.removed...))
			}
			emit(id, e)
		}
		f.open, f.intr, f.removed = f.open[:0], nil, nil
	}
	return out
}

// deleted folds a message_deleted event: a row a rollback removed (weft.IfBusyRollback) leaves
// the open tasks' history, and a task's reply when it was that row.
func (f *fold) deleted(d engine.Fields) {
	id, _ := d["message_id"].(string)
	if id == "" {
		return
	}
	if f.intr != nil {
		f.removed = append(f.removed, id)
	}
	for _, tid := range f.open {
		t := f.tasks[tid]
		t.task.History = slices.DeleteFunc(t.task.History, func(m *sdk.Message) bool { return m.ID == id })
		if t.reply != nil && t.reply.ID == id {
			t.reply = nil
			for i := len(t.task.History) - 1; i >= 0; i-- {
				if t.task.History[i].Role == sdk.MessageRoleAgent {
					t.reply = t.task.History[i]
					break
				}
			}
		}
	}
}

// interruptText is the status message of a task whose run a new message stopped.
func (f *fold) interruptText() string {
	by, _ := f.intr["message_id"].(string)
	rollback, _ := f.intr["rollback"].(bool)
	text := "interrupted by a new message"
	if by != "" {
		text += " (" + by + ")"
	}
	if rollback {
		text += "; what this task had added was rolled back"
	}
	return text
}

// task returns the task id, created if new, with the user message m in its history once.
func (f *fold) task(id sdk.TaskID, m weft.Message) *taskState {
	t := f.tasks[id]
	if t == nil {
		t = &taskState{task: &sdk.Task{ID: id, ContextID: f.thread}, files: map[string]int{}}
		f.tasks[id] = t
		f.order = append(f.order, id)
	}
	msg := f.message(m, id, sdk.MessageRoleUser)
	for i, h := range t.task.History {
		if h.ID == m.ID {
			t.task.History[i] = msg
			return t
		}
	}
	t.task.History = append(t.task.History, msg)
	return t
}

// submitted adds a user message that is queued but not yet taken by a run: a new task, submitted,
// or the continuation of a task waiting for input.
func (f *fold) submitted(m weft.Message) {
	f.note(m)
	id := TaskID(f.thread, m.ID)
	if cont, _ := m.Metadata[MetaTask].(string); cont != "" {
		if t := f.tasks[sdk.TaskID(cont)]; t != nil && !t.task.Status.State.Terminal() {
			id = sdk.TaskID(cont)
		}
	}
	t := f.task(id, m)
	t.task.Status = sdk.TaskStatus{State: sdk.TaskStateSubmitted, Timestamp: timePtr(m)}
}

// note records whether a user message came through A2A.
func (f *fold) note(m weft.Message) {
	if _, ok := m.Metadata["a2a_message_id"]; ok {
		f.viaA2A = true
	}
}

// ThreadTasks returns a thread's A2A tasks, oldest first, each as GetTask shows it (all its
// history, its artifacts), and whether A2A clients talk to the thread: it is tagged a2a, or one
// of its user messages came through A2A. Any thread that records events has tasks — A2A sees
// every top-level user message as one — so the flag tells a page whether to show them. fileURL
// makes the URL of a thread's file for artifacts and attachments (nil: artifacts name the path).
func ThreadTasks(ctx context.Context, st weft.Store, t *weft.Thread, fileURL func(thread, path string) string) ([]*sdk.Task, bool, error) {
	f, err := loadFold(ctx, st, t.ID, fileURL)
	if err != nil {
		return nil, false, err
	}
	tasks := make([]*sdk.Task, 0, len(f.order))
	for _, id := range f.order {
		tasks = append(tasks, f.snapshot(id, nil))
	}
	return tasks, f.viaA2A || slices.Contains(t.Tags, TagA2A), nil
}

// StateOf is the A2A state of a task whose run stopped for the reason: completed for an answer,
// input-required when the run waits for the human side or an approval, canceled when stopped
// (by the user, or by a new message that interrupted the run), failed otherwise.
func StateOf(r weft.StopReason) sdk.TaskState {
	switch r {
	case weft.StopAwaitingHuman, weft.StopAwaitingApproval:
		return sdk.TaskStateInputRequired
	case weft.StopAbortedByUser, weft.StopAborted, weft.StopInterrupted:
		return sdk.TaskStateCanceled
	}
	if r.OK() {
		return sdk.TaskStateCompleted
	}
	return sdk.TaskStateFailed
}

// message converts a stored message: its text, then a file part per attachment.
func (f *fold) message(m weft.Message, task sdk.TaskID, role sdk.MessageRole) *sdk.Message {
	parts := sdk.ContentParts{}
	if m.Content != "" {
		parts = append(parts, sdk.NewTextPart(m.Content))
	}
	for _, a := range m.Attachments {
		if f.fileURL == nil {
			continue
		}
		p := sdk.NewFileURLPart(sdk.URL(f.fileURL(f.thread, a.Path)), a.MimeType)
		p.Filename = a.Name
		parts = append(parts, p)
	}
	return &sdk.Message{ID: m.ID, ContextID: f.thread, TaskID: task, Role: role, Parts: parts}
}

// artifact is a file of the thread as an artifact: its path names it, a URL part reaches it.
func (f *fold) artifact(p string) *sdk.Artifact {
	a := &sdk.Artifact{ID: sdk.ArtifactID("file:" + p), Name: path.Base(p), Description: "The file " + p + " of the thread."}
	if f.fileURL != nil {
		part := sdk.NewFileURLPart(sdk.URL(f.fileURL(f.thread, p)), mediaType(p))
		part.Filename = path.Base(p)
		a.Parts = sdk.ContentParts{part}
	} else {
		a.Parts = sdk.ContentParts{sdk.NewTextPart(p)}
	}
	return a
}

// snapshot returns a copy of a task as it stands, with at most historyLength messages of its
// history (nil: all), marked with the event sequence it reflects.
func (f *fold) snapshot(id sdk.TaskID, historyLength *int) *sdk.Task {
	t := f.tasks[id]
	if t == nil {
		return nil
	}
	cp := *t.task
	cp.History = append([]*sdk.Message(nil), t.task.History...)
	cp.Artifacts = append([]*sdk.Artifact(nil), t.task.Artifacts...)
	if historyLength != nil && *historyLength >= 0 && len(cp.History) > *historyLength {
		cp.History = cp.History[len(cp.History)-*historyLength:]
	}
	cp.Metadata = map[string]any{MetaSeq: f.seq}
	return &cp
}

// decode reads a stored event record into the engine's event.
func decode(rec weft.EventRecord) (engine.Event, error) {
	p, err := engine.DecodePayload(rec.Type, rec.Data)
	if err != nil {
		return engine.Event{}, fmt.Errorf("event %d of thread %s: %w", rec.Seq, rec.ThreadID, err)
	}
	return engine.Event{Type: rec.Type, ThreadID: rec.ThreadID, Seq: rec.Seq, Data: p, Encoded: json.RawMessage(rec.Data)}, nil
}

// timePtr is the message's time, for a status.
func timePtr(m weft.Message) *time.Time {
	if m.CreatedAt.IsZero() {
		return nil
	}
	t := m.CreatedAt.UTC()
	return &t
}

// mediaType guesses a file's media type from its name.
func mediaType(p string) string { return weft.DetectMIME(p, nil) }

func containsID(ids []sdk.TaskID, id sdk.TaskID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
