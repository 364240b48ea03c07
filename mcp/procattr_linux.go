package mcp

import (
	"runtime"
	"syscall"
)

// procAttr puts a stdio server in its own process group and has the kernel kill it when the
// thread that started it dies — with Weft, even by SIGKILL.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// pinThread keeps the goroutine that starts and waits for a server on one OS thread: Pdeathsig
// follows the thread, not the process.
func pinThread() func() {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}
