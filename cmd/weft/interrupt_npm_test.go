package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// storyProject is an agent whose second answer calls a slow tool, then streams a long story
// slowly: a message sent while the story streams interrupts a run that has stored a reply and a
// tool result (what a rollback removes). Its first answer is "Hello." and its last "A haiku
// instead.".
func storyProject(t *testing.T) (dir, db, key string, args []string) {
	dir = t.TempDir()
	files := slowProject(0)
	files["slow.script.yaml"] = `version: 1
options: {real_time: true, chunk_size: 4, chunk_delay: 40ms}
responses:
  - match: {prompt: slow}
    text: Hello.
  - match: {prompt: slow}
    expect: {last_role: user}
    text: Let me check.
    tool_calls:
      - {name: wait, arguments: {text: ping}}
  - match: {prompt: slow}
    expect: {last_role: tool}
    text: "Once upon a time there was a story so long that nobody waited for its end: it went on and on, past the hills, past the sea, past the last lighthouse and the first star, and it did not stop even when the night came and the listeners had all fallen asleep."
  - match: {prompt: slow}
    text: A haiku instead.
`
	writeFiles(t, dir, files)
	db = filepath.Join(dir, "weft.db")
	key = createKey(t, dir, db, "alice")
	return dir, db, key, []string{"--dir", filepath.Join(dir, "agents"), "--db", db, "--model-script", filepath.Join(dir, "slow.script.yaml")}
}

// rowsOf lists a thread's messages as "role: content".
func rowsOf(t *testing.T, s *server, key, thread string) []string {
	t.Helper()
	var msgs struct {
		Items []struct{ Role, Content string }
	}
	s.must("GET", "/api/threads/"+thread+"/messages", key, "", 200, &msgs)
	var out []string
	for _, m := range msgs.Items {
		out = append(out, m.Role+": "+m.Content)
	}
	return out
}

// wantRows is what the thread holds after the third message's answer: with a rollback the story
// turn's call and its result are gone; with an interrupt they stay (the cut story never stored).
func wantRows(mode string) []string {
	rows := []string{"user: hello", "assistant: Hello.", "user: tell a story"}
	if mode == "interrupt" {
		rows = append(rows, "assistant: Let me check.", `tool: {"text":"ping"}`)
	}
	return append(rows, "user: a haiku please", "assistant: A haiku instead.")
}

// TestAISDKNpmInterrupt: the AI SDK's client sees a turn a new message interrupted (if_busy
// interrupt or rollback as the thread's default) end with finishReason other and the message
// metadata weftStopReason interrupted, weftInterruptedBy, weftRolledBack and, for a rollback, the
// two rows removed; the third message's answer is the new run's alone.
func TestAISDKNpmInterrupt(t *testing.T) {
	npm := npmPackages(t, "ai", "ai")
	for _, mode := range []string{"interrupt", "rollback"} {
		t.Run(mode, func(t *testing.T) {
			dir, _, key, args := storyProject(t)
			s := startServer(t, dir, nil, args...)
			out := runNode(t, "ai", "interrupt.mjs", npm, s.base, key, "slow", "chat-"+mode, mode)
			var got struct {
				Story, Third struct {
					Texts    []string
					Metadata struct {
						WeftStopReason, WeftInterruptedBy string
						WeftRolledBack                    bool
						WeftRemovedMessageIds             []string
					}
				}
				Rows []string
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			m := got.Story.Metadata
			if m.WeftStopReason != "interrupted" || !strings.HasPrefix(m.WeftInterruptedBy, "msg_") || m.WeftRolledBack != (mode == "rollback") ||
				len(m.WeftRemovedMessageIds) != map[string]int{"interrupt": 0, "rollback": 2}[mode] {
				t.Errorf("the story's metadata: %+v", m)
			}
			if strings.Join(got.Third.Texts, "") != "A haiku instead." || got.Third.Metadata.WeftStopReason != "stop_on_response" || got.Third.Metadata.WeftInterruptedBy != "" {
				t.Errorf("the third answer: %+v", got.Third)
			}
			if !slices.Equal(got.Rows, wantRows(mode)) {
				t.Errorf("the thread:\n%q\nwant\n%q", got.Rows, wantRows(mode))
			}
		})
	}
}

// TestAGUINpmInterrupt: @ag-ui/client's HttpAgent sees a run a new message interrupted end with a
// CUSTOM weft.run_interrupted event, a MESSAGES_SNAPSHOT of the thread as the stop left it (its
// messages then match the thread's: no cut story, and after a rollback no call or result), and
// RUN_FINISHED with the outcome cancelled.
func TestAGUINpmInterrupt(t *testing.T) {
	npm := npmPackages(t, "agui", "@ag-ui/client")
	for _, mode := range []string{"interrupt", "rollback"} {
		t.Run(mode, func(t *testing.T) {
			dir, _, key, args := storyProject(t)
			s := startServer(t, dir, nil, args...)
			out := runNode(t, "agui", "interrupt.mjs", npm, s.base, key, "slow", "ag-ui-"+mode, mode)
			type msg struct {
				Role, Content string
				ToolCalls     []string
			}
			var got struct {
				Types  []string
				Custom struct {
					Name  string
					Value struct {
						RunID, InterruptedBy string
						Rollback             bool
						RemovedMessageIds    []string
					}
				}
				Finished struct{ Outcome map[string]any }
				Snapshot []msg
				Messages []msg
				Third    []msg
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			v := got.Custom.Value
			if got.Custom.Name != "weft.run_interrupted" || !strings.HasPrefix(v.RunID, "run_") || !strings.HasPrefix(v.InterruptedBy, "msg_") ||
				v.Rollback != (mode == "rollback") || len(v.RemovedMessageIds) != map[string]int{"interrupt": 0, "rollback": 2}[mode] {
				t.Errorf("CUSTOM: %+v", got.Custom)
			}
			if got.Finished.Outcome["type"] != "cancelled" {
				t.Errorf("RUN_FINISHED: %+v", got.Finished)
			}
			if n := len(got.Types); n < 3 || strings.Join(got.Types[n-3:], " ") != "CUSTOM MESSAGES_SNAPSHOT RUN_FINISHED" {
				t.Errorf("event types: %v", got.Types)
			}
			var held []string
			for _, m := range got.Messages {
				held = append(held, m.Role+": "+m.Content+strings.Join(m.ToolCalls, ","))
			}
			want := []string{"user: hello", "assistant: Hello.", "user: tell a story"}
			if mode == "interrupt" {
				want = append(want, `assistant: Let me check.wait {"text":"ping"}`, `tool: {"text":"ping"}`)
			}
			if !slices.Equal(held, want) {
				t.Errorf("the client's messages after the interrupted run:\n%q\nwant\n%q", held, want)
			}
			if len(got.Third) == 0 || got.Third[len(got.Third)-1].Content != "A haiku instead." {
				t.Errorf("the third run's new messages: %+v", got.Third)
			}
			var threads struct{ Items []struct{ ID string } }
			s.must("GET", "/api/threads", key, "", 200, &threads)
			if rows := rowsOf(t, s, key, threads.Items[0].ID); !slices.Equal(rows, wantRows(mode)) {
				t.Errorf("the thread:\n%q\nwant\n%q", rows, wantRows(mode))
			}
		})
	}
}

// TestOpenAINpmInterrupt: the official openai client sees a streamed chat completion a new
// message interrupted finish "stop" with weft_stop_reason interrupted, weft_interrupted_by,
// weft_rolled_back and weft_removed_message_ids on the choice; a streamed response ends with
// response.incomplete, status cancelled, and is retrieved so.
func TestOpenAINpmInterrupt(t *testing.T) {
	npm := npmPackages(t, "openai", "openai")
	for _, api := range []string{"chat", "responses"} {
		for _, mode := range []string{"interrupt", "rollback"} {
			t.Run(api+"/"+mode, func(t *testing.T) {
				dir, _, key, args := storyProject(t)
				s := startServer(t, dir, nil, args...)
				out := runNode(t, "openai", "interrupt.mjs", npm, s.base, key, "slow", api, mode)
				var got struct {
					Finish struct {
						FinishReason          string `json:"finish_reason"`
						WeftStopReason        string `json:"weft_stop_reason"`
						WeftInterruptedBy     string `json:"weft_interrupted_by"`
						WeftRolledBack        bool   `json:"weft_rolled_back"`
						WeftRemovedMessageIDs []string
					}
					End struct {
						Type, Status, Stop, By string
						RolledBack             bool
						Removed                []string
					}
					Retrieved struct{ Status, Stop, By string }
					Third     struct{ Content, Finish, Stop, Status, Text string }
					Thread    string
				}
				if err := json.Unmarshal(out, &got); err != nil {
					t.Fatalf("%v: %s", err, out)
				}
				removed := map[string]int{"interrupt": 0, "rollback": 2}[mode]
				if api == "chat" {
					var raw struct {
						Finish struct {
							Removed []string `json:"weft_removed_message_ids"`
						}
					}
					_ = json.Unmarshal(out, &raw)
					f := got.Finish
					if f.FinishReason != "stop" || f.WeftStopReason != "interrupted" || !strings.HasPrefix(f.WeftInterruptedBy, "msg_") ||
						f.WeftRolledBack != (mode == "rollback") || len(raw.Finish.Removed) != removed {
						t.Errorf("the story's finishing choice: %s", out)
					}
					if got.Third.Content != "A haiku instead." || got.Third.Finish != "stop" || got.Third.Stop != "stop_on_response" {
						t.Errorf("the third: %+v", got.Third)
					}
				} else {
					e := got.End
					if e.Type != "response.incomplete" || e.Status != "cancelled" || e.Stop != "interrupted" || !strings.HasPrefix(e.By, "msg_") ||
						e.RolledBack != (mode == "rollback") || len(e.Removed) != removed {
						t.Errorf("the story's end: %+v", e)
					}
					if r := got.Retrieved; r.Status != "cancelled" || r.Stop != "interrupted" || r.By != e.By {
						t.Errorf("the story retrieved: %+v", r)
					}
					if got.Third.Status != "completed" || got.Third.Text != "A haiku instead." {
						t.Errorf("the third: %+v", got.Third)
					}
				}
				if rows := rowsOf(t, s, key, got.Thread); !slices.Equal(rows, wantRows(mode)) {
					t.Errorf("the thread:\n%q\nwant\n%q", rows, wantRows(mode))
				}
			})
		}
	}
}

// TestA2ANpmInterrupt: the A2A reference SDK's client sees the task of a run a new message
// interrupted end canceled, its status message and metadata naming the message (and, for a
// rollback, the rows removed, which leave the task's history); the new message's task completes.
// The policy is the thread's default (interrupt) or the message's metadata weft_if_busy
// (rollback).
func TestA2ANpmInterrupt(t *testing.T) {
	sdk := a2aSDK(t)
	for _, mode := range []string{"interrupt", "rollback"} {
		t.Run(mode, func(t *testing.T) {
			dir, _, key, args := storyProject(t)
			s := startServer(t, dir, nil, args...)
			// interrupt as the thread's default; rollback as the message's own metadata.
			via := map[string]string{"interrupt": "thread", "rollback": "metadata"}[mode]
			got := collectA2A(t, runA2AClient(t, sdk, s.base, key, "interrupt", "AGENT=slow", "IF_BUSY="+mode, "IF_BUSY_VIA="+via))
			in := got["interrupted"]
			if len(in.Events) != 1 {
				t.Fatalf("no interrupted task: %+v", got)
			}
			e := in.Events[0]
			wantText, history, removed := "interrupted by a new message ("+e.By+")", 2, 0
			if mode == "rollback" {
				wantText, history, removed = wantText+"; what this task had added was rolled back", 1, 2
			}
			if in.State != "TASK_STATE_CANCELED" || in.Text != wantText || !strings.HasPrefix(e.By, "msg_") || e.Stop != "interrupted" ||
				e.RolledBack != (mode == "rollback") || len(e.Removed) != removed || in.History != history {
				t.Errorf("the interrupted task: %+v %+v", in, e)
			}
			if th := got["third"]; th.State != "TASK_STATE_COMPLETED" || th.Text != "A haiku instead." {
				t.Errorf("the third message's task: %+v", th)
			}
			if rows := rowsOf(t, s, key, got["third"].Context); !slices.Equal(rows, wantRows(mode)) {
				t.Errorf("the thread:\n%q\nwant\n%q", rows, wantRows(mode))
			}
		})
	}
}

// TestAISDKNpmRegenerate: the AI SDK's regenerate-message, sent by DefaultChatTransport, answers
// again from a fork cut before the answer (the same UI message id, a new text); the next
// message goes on on the fork, which the chat id names now, and the original keeps its answers.
func TestAISDKNpmRegenerate(t *testing.T) {
	npm := npmPackages(t, "ai", "ai")
	dir := t.TempDir()
	files := slowProject(0)
	files["slow.script.yaml"] = "version: 1\nresponses:\n" +
		"  - {match: {prompt: slow}, text: First answer.}\n  - {match: {prompt: slow}, text: Second answer.}\n" +
		"  - {match: {prompt: slow}, text: \"Second answer, again.\"}\n  - {match: {prompt: slow}, text: Third answer.}\n"
	writeFiles(t, dir, files)
	db := filepath.Join(dir, "weft.db")
	key := createKey(t, dir, db, "alice")
	s := startServer(t, dir, nil, "--dir", filepath.Join(dir, "agents"), "--db", db, "--model-script", filepath.Join(dir, "slow.script.yaml"))
	out := runNode(t, "ai", "regenerate.mjs", npm, s.base, key, "slow", "chat-r")
	type answer struct {
		ID    string
		Texts []string
		Stop  string
	}
	var got struct{ Second, Again, Third answer }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Again.ID != got.Second.ID || strings.Join(got.Again.Texts, "") != "Second answer, again." || got.Again.Stop != "stop_on_response" ||
		strings.Join(got.Second.Texts, "") != "Second answer." || strings.Join(got.Third.Texts, "") != "Third answer." {
		t.Errorf("answers: %s", out)
	}
	var threads struct {
		Items []struct {
			ID         string
			Tags       []string
			ForkedFrom *struct{ Thread string } `json:"forked_from"`
		}
	}
	s.must("GET", "/api/threads", key, "", 200, &threads)
	if len(threads.Items) != 2 {
		t.Fatalf("threads: %+v", threads.Items)
	}
	for _, th := range threads.Items {
		want := []string{"user: one", "assistant: First answer.", "user: two", "assistant: Second answer."}
		if th.ForkedFrom != nil {
			want = []string{"user: one", "assistant: First answer.", "user: two", "assistant: Second answer, again.", "user: three", "assistant: Third answer."}
		}
		if rows := rowsOf(t, s, key, th.ID); !slices.Equal(rows, want) {
			t.Errorf("thread %s (forked: %v): %q", th.ID, th.ForkedFrom != nil, rows)
		}
	}
}
