package main

import "syscall"

// childProcAttr puts the server in a process group of its own, so that a
// Ctrl-C in the terminal reaches only the tool, which then stops the server
// in order; and has the kernel send the server SIGTERM should the tool die
// without stopping it (kill -9, a crash), so no server outlives a run.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
