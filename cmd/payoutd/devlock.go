package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// devLockFile, in dev's data folder, is locked by the dev using the folder:
// two devs on one folder would each run their own Redis over one database
// (so a request signature spent on one is accepted by the other, and each
// one's queue misses the other's tasks). The lock is the operating system's
// advisory lock on the open file, so it goes with its holder however that
// ends, a crash included: a lock file left behind is never stale. The
// holder's pid is written into the file only for the message a second dev
// prints.
const devLockFile = "dev.lock"

// errLocked: another open file holds the lock.
var errLocked = errors.New("locked")

// dataDirLock is the lock of a data folder, held until release.
type dataDirLock struct{ f *os.File }

// lockDataDir takes dir's lock, or says which pid holds it.
func lockDataDir(dir string) (*dataDirLock, error) {
	path := filepath.Join(dir, devLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock DEV_DATA_DIR: %w", err)
	}
	if err := tryLock(f); err != nil {
		f.Close()
		if errors.Is(err, errLocked) {
			return nil, fmt.Errorf("DEV_DATA_DIR %s is in use by another payoutd dev (%s, holding %s): stop it, or use another folder",
				dir, holderPID(path), path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// A pid not written only makes a second dev's message vaguer.
	if f.Truncate(0) == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dataDirLock{f: f}, nil
}

// holderPID reads the pid the holder wrote.
func holderPID(path string) string {
	raw, err := os.ReadFile(path)
	if pid, convErr := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && convErr == nil && pid > 0 {
		return "pid " + strconv.Itoa(pid)
	}
	return "pid unknown"
}

// release empties the file (its pid is no longer true) and lets the lock
// go; closing the file is what releases it. Safe on a nil lock and twice.
func (l *dataDirLock) release() {
	if l == nil || l.f == nil {
		return
	}
	l.f.Truncate(0)
	l.f.Close()
	l.f = nil
}
