//go:build !(darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd)

package main

import "os"

// tryLock: this system has no flock(2), and a lock file without one could
// outlive a crashed holder and refuse every later start; dev there does
// not guard its data folder (docs/dev.md says so).
func tryLock(*os.File) error { return nil }
