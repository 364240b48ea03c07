package declared

import (
	"runtime"
	"syscall"
)

// toolProcAttr puts a command tool in its own process group (so that a timeout kills all of it)
// and has the kernel kill it when the thread that started it dies — with Weft, even by SIGKILL:
// a tool never runs on unsupervised after the process that would record its result.
func toolProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// pinThread keeps the goroutine that starts and waits for a tool on one OS thread: Pdeathsig
// follows the thread, not the process, and Go may retire an idle thread.
func pinThread() func() {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}
