//go:build unix && !linux

package childproc

import "syscall"

// procAttr puts a child in its own process group. (Only Linux can also tie its life to Weft's.)
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func pinThread() func() { return func() {} }
