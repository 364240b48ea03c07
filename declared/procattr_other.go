//go:build unix && !linux

package declared

import "syscall"

// toolProcAttr puts a command tool in its own process group, so that a timeout kills all of it.
// (Only Linux can also tie the tool's life to Weft's.)
func toolProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func pinThread() func() { return func() {} }
