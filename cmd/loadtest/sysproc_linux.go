package main

import "syscall"

// childProcAttr has the kernel send the server SIGTERM should this process
// die without stopping it (kill -9, a crash), so no server outlives a run.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
