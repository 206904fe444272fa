package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// controlPlaneCPU is the user+system CPU time so far of the kube-apiserver and etcd processes
// this process started: with the operator's own, it tells whether a phase was bound by the
// machine's two cores or by waiting.
func controlPlaneCPU() (float64, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	self := os.Getpid()
	var total float64
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil {
			continue
		}
		if base := filepath.Base(exe); base != "kube-apiserver" && base != "etcd" {
			continue
		}
		if parent, err := parentPID(pid); err != nil || parent != self {
			continue
		}
		cpu, err := cpuSeconds(pid)
		if err != nil {
			continue // it ended meanwhile
		}
		total += cpu
	}
	return total, nil
}

// parentPID reads the parent's pid from /proc/<pid>/stat (the field after the state).
func parentPID(pid int) (int, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 2 {
		return 0, os.ErrInvalid
	}
	return strconv.Atoi(fields[1])
}
