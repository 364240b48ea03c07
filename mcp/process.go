package mcp

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-agents/weft/internal/childproc"
)

// process is a running stdio server: its own process group (so that killing it kills its
// children too) and, on Linux, killed by the kernel if Weft dies.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *tailBuffer
	done   chan struct{}
	err    error // set before done closes
	once   sync.Once
	// killed: Weft ended the process (it was still running), e.g. after the connection broke.
	killed atomic.Bool
}

// startProcess starts prog on a goroutine locked to its OS thread for the process's lifetime:
// Linux's parent-death signal follows the thread that started the child.
func startProcess(prog string, args, env []string, dir string) (*process, error) {
	cmd := exec.Command(prog, args...)
	cmd.Env = env
	cmd.Dir = dir
	p := &process{cmd: cmd, stderr: &tailBuffer{max: 4 << 10}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if p.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	waited, err := childproc.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("cannot start %s: %w", prog, err)
	}
	go func() {
		p.err = <-waited
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitExit reports whether the process ends within d (a broken pipe usually precedes the exit
// status by a moment).
func (p *process) waitExit(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

// kill ends the whole process group and waits for the process.
func (p *process) kill() {
	p.once.Do(func() {
		if p.cmd.Process != nil && !p.exited() {
			p.killed.Store(true)
			_ = childproc.KillGroup(p.cmd)
		}
		p.stdin.Close()
	})
	<-p.done
}

// explain describes why the process failed: its exit status and the tail of its stderr; err is
// the transport's error, kept when the process still runs.
func (p *process) explain(err error) error {
	if !p.exited() {
		if err == nil {
			return errors.New("the connection broke")
		}
		return err
	}
	status := "it exited"
	if p.killed.Load() {
		status = "the connection broke (a message that is not JSON-RPC?), so Weft stopped the server"
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) && !p.killed.Load() {
		status = ee.String()
	}
	if tail := strings.TrimSpace(p.stderr.String()); tail != "" {
		return fmt.Errorf("%s; stderr: %s", status, tail)
	}
	return errors.New(status)
}

// tailBuffer keeps the last max bytes written (a server's stderr may be flooded).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(t.b)
	if len(s) > 2048 {
		s = "…" + s[len(s)-2048:]
	}
	return s
}
