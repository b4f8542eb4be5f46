package api

import "syscall"

// childProcAttr has the kernel kill a server the tests start (Prometheus)
// should the test binary die without stopping it (a test timeout, a
// crash), so that none outlives its run.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
