package benchflink

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of /proc/<pid>/stat's starttime: USER_HZ, 100 on every architecture
// Linux runs Go on (sysconf(_SC_CLK_TCK) would need cgo).
const userHZ = 100

// processStart is the wall-clock time at which process pid started on this machine.
//
// /proc/<pid>/stat gives the start in clock ticks since boot, and /proc/stat's btime the boot
// in whole seconds only, which would put up to a second of error into every JobManager start.
// The start is instead placed relative to now: now − (uptime − starttime), /proc/uptime having
// centiseconds. Both count from the same boot (the kernel's boot-time clock), so the result is
// on this machine's wall clock, the one Flink's timestamps and the benchmark's own are read from.
func processStart(pid int) (time.Time, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return time.Time{}, fmt.Errorf("process %d: %w", pid, err)
	}
	now := time.Now()
	uptime, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return time.Time{}, fmt.Errorf("uptime: %w", err)
	}
	ticks, err := startTicks(string(stat))
	if err != nil {
		return time.Time{}, fmt.Errorf("process %d: %w", pid, err)
	}
	fields := strings.Fields(string(uptime))
	if len(fields) == 0 {
		return time.Time{}, fmt.Errorf("uptime: empty /proc/uptime")
	}
	up, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("uptime %q: %w", fields[0], err)
	}
	age := time.Duration((up - float64(ticks)/userHZ) * float64(time.Second))
	return now.Add(-age), nil
}

// startTicks is field 22 (starttime) of a /proc/<pid>/stat line. The command name (field 2)
// is in parentheses and may hold spaces, so fields are counted after its closing one.
func startTicks(stat string) (int64, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("stat %q: no command name", stat)
	}
	// After the name come fields 3 (state) onwards: starttime is the 20th of them.
	rest := strings.Fields(stat[end+1:])
	if len(rest) < 20 {
		return 0, fmt.Errorf("stat %q: %d fields after the name, want at least 20", stat, len(rest))
	}
	ticks, err := strconv.ParseInt(rest[19], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("starttime %q: %w", rest[19], err)
	}
	return ticks, nil
}
