package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weft-agents/weft"
)

// procStatusKiB reads a field (VmRSS, VmHWM) of /proc/PID/status, in KiB.
func procStatusKiB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc/PID/status on this system: %v", err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("%s: %q", field, l)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestBodyPeakMemory posts one message of weft.MaxMessageBytes (20 MiB) to a weft serve on SQLite
// and measures how far the process's resident memory peaks above where it stood (VmHWM, reset
// through /proc/PID/clear_refs), while the message is decoded, stored, sent to the model and its
// answer stored. The probe measured 378–416 MiB for 19 MiB (~20 × the body); once the
// answer is awaited (a stop reason) this measured 16 × (321 MiB), 8.2 × (~165 MiB) once the copies
// that served nothing went, and 6.7–7.2 × (~138 MiB) since the decoded text is the body's bytes and
// the log keeps the request as it is (docs/limits.md): what is left is the body, the queued and
// stored rows, the event, the model's request, and SQLite's two copies of each row it writes.
func TestBodyPeakMemory(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"agents/models/m.yaml":  "{name: m, provider: test, model: scripted}\n",
		"agents/prompts/p.yaml": "{name: p, toolDescription: Reads., model: m, prompt: Read the text.}\n",
		"agents/agents/a.yaml":  "{name: a, sideA: {prompt: p}}\n",
		"script.yaml":           "- text: Read it.\n",
	})
	srv := startServer(t, dir, []string{"WEFT_ADMIN_KEY=" + clusterAdminKey},
		"--dir", filepath.Join(dir, "agents"), "--db", filepath.Join(dir, "weft.db"), "--model-script", filepath.Join(dir, "script.yaml"))
	defer srv.stop()
	pid := srv.cmd.Process.Pid
	var created struct {
		Thread struct{ ID string } `json:"thread"`
	}
	srv.must("POST", "/api/threads", clusterAdminKey, `{"agent":"a"}`, 201, &created)
	// The peak so far (start-up) is forgotten: VmHWM is reset to the current RSS.
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the process's peak RSS (needs Linux and the right to write clear_refs): %v", err)
	}
	before := procStatusKiB(t, pid, "VmRSS")
	// The largest message a request body can carry: the body limit is weft.MaxMessageBytes, and
	// the JSON around the content takes a few bytes.
	content := strings.Repeat("lorem ipsum ", (weft.MaxMessageBytes-64)/12)
	body := `{"content":"` + content + `"}`
	req, _ := http.NewRequest("POST", srv.base+"/api/threads/"+created.Thread.ID+"/messages", bytes.NewReader([]byte(body)))
	req.Header.Set("Authorization", "Bearer "+clusterAdminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("POST a %d-byte message: %d", len(content), resp.StatusCode)
	}
	body = "" // the test's own copy is not the server's
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Polled through the thread list, which reads thread rows only. The run has answered
		// when the thread has a stop reason: right after the post it is still idle, without one.
		var list struct {
			Items []struct {
				ID, Status string
				StopReason string `json:"stop_reason"`
			} `json:"items"`
		}
		srv.must("GET", "/api/threads?limit=10", clusterAdminKey, "", 200, &list)
		var th any
		if len(list.Items) == 1 && list.Items[0].Status != "running" && list.Items[0].StopReason != "" {
			break
		}
		th = list.Items
		if time.Now().After(deadline) {
			t.Fatalf("the run did not answer: %+v\n%s", th, srv.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	peak := procStatusKiB(t, pid, "VmHWM")
	size := float64(len(content)) / (1 << 20)
	grew := float64(peak-before) / 1024
	t.Logf("one %.1f MiB message (posted, stored, sent to the model, answered): RSS %d MiB before, peak %d MiB: +%.0f MiB, %.1f × the message",
		size, before/1024, peak/1024, grew, grew/size)
	if grew > 8*size {
		t.Errorf("the peak grew %.0f MiB for a %.1f MiB message (%.1f ×); want at most 8 ×", grew, size, grew/size)
	}
}
