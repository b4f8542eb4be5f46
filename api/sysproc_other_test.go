//go:build !linux

package api

import "syscall"

// childProcAttr: only Linux can tie a child's life to the test binary.
func childProcAttr() *syscall.SysProcAttr { return nil }
