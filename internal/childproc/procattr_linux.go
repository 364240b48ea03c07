package childproc

import (
	"runtime"
	"syscall"
)

// procAttr puts a child in its own process group and has the kernel kill it when the thread that
// started it dies: a tool or server never runs on unsupervised after the process that would
// record its result.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// pinThread keeps the goroutine that starts and waits for a child on one OS thread.
func pinThread() func() {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}
