// Package childproc starts the processes Weft supervises — command tools and stdio MCP servers —
// so that they never outlive it: each runs in its own process group (a timeout or a close kills
// the whole group), and on Linux the kernel kills it when the OS thread that started it dies,
// which happens when Weft dies, even by SIGKILL.
package childproc

import (
	"errors"
	"os/exec"
	"syscall"
)

// Start starts cmd and returns a channel that receives cmd.Wait's result once it exits. The
// process is started, and waited for, by a goroutine locked to its OS thread: the parent-death
// signal follows the thread, not the process, and Go may retire an idle thread. The error of a
// start that fails is exec's underlying cause (the program not found, permission denied).
func Start(cmd *exec.Cmd) (<-chan error, error) {
	cmd.SysProcAttr = procAttr()
	started := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		defer pinThread()()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		if u := errors.Unwrap(err); u != nil {
			return nil, u
		}
		return nil, err
	}
	return done, nil
}

// KillGroup kills the process group a started command leads.
func KillGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
