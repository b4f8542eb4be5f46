//go:build !linux

package main

import "syscall"

// childProcAttr: only Linux can tie the server's life to this process.
func childProcAttr() *syscall.SysProcAttr { return nil }
