package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc CPU times: 100 on every Linux
// the tool is meant for (reading it properly needs cgo).
const clockTicks = 100

// cpuSnapshot is the CPU time consumed so far, in clock ticks, by the whole
// machine and by the processes a run involves. Linux only: elsewhere ok is
// false and nothing is reported.
type cpuSnapshot struct {
	ok                 bool
	at                 time.Time
	machineBusy, steal uint64
	self, server       uint64
	postgres, redis    uint64
	pgbench            uint64 // a load generator too, while it runs
	serverKnown        bool
	// rail is the CPU of a -rail simulator and of the api receiving its
	// callbacks during the drain.
	rail      uint64
	railKnown bool
}

// takeCPUSnapshot reads /proc. serverPID is 0 when the server is not a
// child of the tool; railPIDs are the rail's processes (none without).
func takeCPUSnapshot(serverPID int, railPIDs ...int) cpuSnapshot {
	s := cpuSnapshot{at: time.Now()}
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s
	}
	line, _, _ := bytes.Cut(raw, []byte{'\n'})
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return s
	}
	var v [8]uint64 // user nice system idle iowait irq softirq steal
	for i := range v {
		v[i], _ = strconv.ParseUint(f[i+1], 10, 64)
	}
	s.machineBusy = v[0] + v[1] + v[2] + v[5] + v[6]
	s.steal = v[7]
	s.self, s.ok = procTicks("/proc/self/stat")
	if serverPID > 0 {
		s.server, s.serverKnown = procTicks("/proc/" + strconv.Itoa(serverPID) + "/stat")
	}
	s.railKnown = len(railPIDs) > 0
	for _, pid := range railPIDs {
		ticks, ok := procTicks("/proc/" + strconv.Itoa(pid) + "/stat")
		s.rail += ticks
		s.railKnown = s.railKnown && ok
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range dirs {
		comm, ticks, ok := procComm(path)
		switch {
		case !ok:
		case comm == "postgres":
			s.postgres += ticks
		case strings.HasPrefix(comm, "redis-server"):
			s.redis += ticks
		case comm == "pgbench":
			s.pgbench += ticks
		}
	}
	return s
}

// procTicks returns utime+stime of a /proc/<pid>/stat file.
func procTicks(path string) (uint64, bool) {
	_, ticks, ok := procComm(path)
	return ticks, ok
}

// procComm returns the command name and utime+stime of a /proc/<pid>/stat
// file: "pid (comm) state ppid ... utime stime ..." (fields 14 and 15).
func procComm(path string) (string, uint64, bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", 0, false
	}
	open, end := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	rest := strings.Fields(string(raw[end+1:])) // from field 3 (state) on
	if len(rest) < 13 {
		return "", 0, false
	}
	utime, err1 := strconv.ParseUint(rest[11], 10, 64)
	stime, err2 := strconv.ParseUint(rest[12], 10, 64)
	if err1 != nil || err2 != nil {
		return "", 0, false
	}
	return string(raw[open+1 : end]), utime + stime, true
}

// cpuUsage is the CPU a window used, in cores (1.0 = one core busy for the
// whole window).
type cpuUsage struct {
	Cores   int      `json:"cores"`
	Machine float64  `json:"machine"`
	Server  *float64 `json:"server,omitempty"`
	// Rail is a -rail simulator, with the api receiving its callbacks
	// during the drain.
	Rail          *float64 `json:"rail,omitempty"`
	Postgres      float64  `json:"postgres"`
	Redis         float64  `json:"redis"`
	LoadGenerator float64  `json:"load_generator"`
	Other         float64  `json:"other"`
	Steal         float64  `json:"steal"`
}

// usageBetween is the CPU used from a to b; nil when unknown.
func usageBetween(a, b cpuSnapshot) *cpuUsage {
	if !a.ok || !b.ok {
		return nil
	}
	secs := b.at.Sub(a.at).Seconds()
	if secs <= 0 {
		return nil
	}
	cores := func(d uint64) float64 { return round(float64(d)/clockTicks/secs, 2) }
	u := &cpuUsage{
		Cores:         runtime.NumCPU(),
		Machine:       cores(b.machineBusy - a.machineBusy),
		Postgres:      cores(b.postgres - a.postgres),
		Redis:         cores(b.redis - a.redis),
		LoadGenerator: cores(b.self - a.self + b.pgbench - a.pgbench),
		Steal:         cores(b.steal - a.steal),
	}
	known := u.Postgres + u.Redis + u.LoadGenerator
	if a.serverKnown && b.serverKnown {
		server := cores(b.server - a.server)
		u.Server = &server
		known += server
	}
	if a.railKnown && b.railKnown {
		rail := cores(b.rail - a.rail)
		u.Rail = &rail
		known += rail
	}
	u.Other = round(max(0, u.Machine-known), 2)
	return u
}

// cpuWindow snapshots the CPU when the measured window opens and closes.
type cpuWindow struct {
	serverPID  int
	railPIDs   []int
	start, end cpuSnapshot
}

func (w *cpuWindow) opened() { w.start = takeCPUSnapshot(w.serverPID, w.railPIDs...) }
func (w *cpuWindow) closed() { w.end = takeCPUSnapshot(w.serverPID, w.railPIDs...) }

func (w *cpuWindow) usage() *cpuUsage { return usageBetween(w.start, w.end) }
