//go:build unix && !linux

package mcp

import "syscall"

// procAttr puts a stdio server in its own process group. (Only Linux can also tie its life to
// Weft's; elsewhere Close stops it.)
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func pinThread() func() { return func() {} }
