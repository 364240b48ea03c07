package childproc

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStart(t *testing.T) {
	cases := []struct {
		name    string
		argv    []string
		startOK bool
		exit    int // the exit code Wait reports, when started
	}{
		{"exits 0", []string{"sh", "-c", "exit 0"}, true, 0},
		{"exits 3", []string{"sh", "-c", "exit 3"}, true, 3},
		{"missing program", []string{"/nonexistent/weft-child"}, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			done, err := Start(exec.Command(tc.argv[0], tc.argv[1:]...))
			if (err == nil) != tc.startOK {
				t.Fatalf("start: %v", err)
			}
			if err != nil {
				// The cause itself, not exec's wrapping of it.
				if !errors.Is(err, syscall.ENOENT) || strings.Contains(err.Error(), "fork/exec") {
					t.Errorf("start error %q", err)
				}
				return
			}
			werr := <-done
			var ee *exec.ExitError
			switch {
			case tc.exit == 0 && werr != nil:
				t.Errorf("wait: %v", werr)
			case tc.exit != 0 && (!errors.As(werr, &ee) || ee.ExitCode() != tc.exit):
				t.Errorf("wait: %v, want exit %d", werr, tc.exit)
			}
		})
	}
}

// TestKillGroup: killing a started command kills the children it started too (its group).
func TestKillGroup(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	done, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	var child int
	for _, c := range strings.TrimSpace(string(buf[:n])) {
		child = child*10 + int(c-'0')
	}
	if err := KillGroup(cmd); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the command outlived KillGroup")
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(child, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the grandchild %d outlived KillGroup", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
